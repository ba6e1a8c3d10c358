#include "io/spsc_ring.h"

#include <gtest/gtest.h>

#include <thread>

namespace shardis::io {
namespace {

TEST(SpscRingTest, FillsToCapacityAndDrainsInOrder) {
  SpscRing<int> ring(5);  // rounded up to 8
  EXPECT_EQ(ring.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(ring.TryPush(i));
  EXPECT_FALSE(ring.TryPush(99));
  int v;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(ring.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(ring.TryPop(&v));
  EXPECT_TRUE(ring.Empty());
}

// Millions of messages through a small ring between two threads: nothing lost, nothing reordered.
TEST(SpscRingTest, TwoThreadsKeepOrder) {
  constexpr uint64_t kCount = 5'000'000;
  SpscRing<uint64_t> ring(64);
  std::thread producer([&] {
    for (uint64_t i = 0; i < kCount; ++i) {
      while (!ring.TryPush(i)) std::this_thread::yield();
    }
  });
  uint64_t expected = 0;
  uint64_t v;
  while (expected < kCount) {
    if (ring.TryPop(&v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_TRUE(ring.Empty());
}

}  // namespace
}  // namespace shardis::io

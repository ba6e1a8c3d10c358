#include "core/shard_heap.h"

#include <gtest/gtest.h>
#include <mimalloc.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace shardis::core {
namespace {

TEST(ShardHeapTest, FallbackWhenNothingIsInstalled) {
  ShardHeap* heap = ShardHeap::Current();
  ASSERT_NE(heap, nullptr);
  EXPECT_TRUE(heap->is_fallback());
  EXPECT_EQ(ShardHeap::Current(), heap);
  const size_t before = heap->used_bytes();
  void* p = heap->Allocate(100);
  EXPECT_EQ(heap->used_bytes(), before + ShardHeap::UsableSize(p));
  heap->Free(p);
  EXPECT_EQ(heap->used_bytes(), before);
}

TEST(ShardHeapTest, InstallAndUninstall) {
  ShardHeap* fallback = ShardHeap::Current();
  {
    ShardHeap heap;
    EXPECT_FALSE(heap.is_fallback());
    EXPECT_EQ(ShardHeap::Current(), fallback) << "creating a heap does not install it";
    heap.Install();
    EXPECT_EQ(ShardHeap::Current(), &heap);
    void* p = ShardHeap::Current()->Allocate(64);
    EXPECT_EQ(heap.used_bytes(), ShardHeap::UsableSize(p));
    EXPECT_EQ(heap.live_blocks(), 1u);
    ShardHeap::Current()->Free(p);
    heap.Uninstall();
    EXPECT_EQ(ShardHeap::Current(), fallback);
    heap.Install();
  }  // destruction uninstalls
  EXPECT_EQ(ShardHeap::Current(), fallback);
}

TEST(ShardHeapTest, UsableSizeIsTheSizeClass) {
  ShardHeap heap;
  for (size_t n : {1, 7, 8, 9, 15, 16, 17, 24, 100, 128, 129, 1000, 4096, 65536, 100000}) {
    void* p = heap.Allocate(n);
    EXPECT_GE(ShardHeap::UsableSize(p), n);
    EXPECT_EQ(ShardHeap::UsableSize(p), ShardHeap::GoodSize(n)) << n;
    std::memset(p, 0xab, ShardHeap::UsableSize(p));  // all of it is ours
    heap.Free(p);
  }
  void* p = heap.Allocate(128);
  EXPECT_EQ(ShardHeap::UsableSize(p), 128u);
  EXPECT_EQ(heap.used_bytes(), 128u);
  heap.Free(p);
}

// The counter is the exact sum of the live blocks' usable sizes through any mix of sizes,
// including mimalloc's large (> 128 KiB) and huge (> 32 MiB) blocks.
// Aligned blocks (a hash table's segments, 64-byte aligned; its directory, word-aligned) are
// counted as any other, and a segment's size keeps its size class: mimalloc's aligned path
// over-allocates by the alignment less one, which the segment sizes leave room for.
TEST(ShardHeapTest, AlignedBlocksAreCounted) {
  ShardHeap heap;
  void* segment = heap.AllocateAligned((20 << 10) - 64, 64);
  void* directory = heap.AllocateAligned(1000, 8);
  ASSERT_NE(segment, nullptr);
  ASSERT_NE(directory, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(segment) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(directory) % 8, 0u);
  EXPECT_EQ(heap.used_bytes(), ShardHeap::UsableSize(segment) + ShardHeap::UsableSize(directory));
  if (ShardHeap::kUsesMimalloc) {
    EXPECT_LE(ShardHeap::UsableSize(segment), size_t(20 << 10));
  }
  EXPECT_EQ(heap.live_blocks(), 2u);
  heap.Free(segment);
  heap.Free(directory);
  EXPECT_EQ(heap.used_bytes(), 0u);
}

TEST(ShardHeapTest, CounterIsExactUnderRandomChurn) {
  ShardHeap heap;
  heap.Install();
  std::mt19937_64 rng(5);
  std::vector<void*> live;
  size_t expected = 0;
  for (int i = 0; i < 200000; ++i) {
    if (live.empty() || rng() % 100 < 55) {
      size_t n;
      switch (rng() % 10) {
        case 0:
          n = 1 + rng() % (1 << 20);
          break;
        case 1:
          n = 1 + rng() % 4096;
          break;
        default:
          n = 1 + rng() % 256;
      }
      if (i % 50000 == 0) n = 40 << 20;  // a few huge blocks
      void* p = ShardHeap::Current()->Allocate(n);
      expected += ShardHeap::UsableSize(p);
      live.push_back(p);
    } else {
      const size_t k = rng() % live.size();
      expected -= ShardHeap::UsableSize(live[k]);
      ShardHeap::Current()->Free(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(heap.used_bytes(), expected);
    ASSERT_EQ(heap.live_blocks(), live.size());
  }
  if constexpr (ShardHeap::kUsesMimalloc) {
    // mimalloc's own view of the heap agrees: every live block is in it, and only those.
    for (void* p : live) ASSERT_TRUE(mi_heap_contains_block(heap.mi_heap(), p));
    size_t blocks = 0;
    mi_heap_visit_blocks(
        heap.mi_heap(), true,
        [](const mi_heap_t*, const mi_heap_area_t*, void* block, size_t, void* arg) {
          if (block != nullptr) ++*static_cast<size_t*>(arg);
          return true;
        },
        &blocks);
    EXPECT_EQ(blocks, live.size());
  }
  for (void* p : live) ShardHeap::Current()->Free(p);
  EXPECT_EQ(heap.used_bytes(), 0u);
  EXPECT_EQ(heap.live_blocks(), 0u);
  heap.Uninstall();
}

// Each shard thread counts only its own blocks; the counters can be read from another thread.
TEST(ShardHeapTest, OneHeapPerThread) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<size_t> used(kThreads), blocks(kThreads), fallback_used(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &used, &blocks, &fallback_used] {
      ShardHeap* fallback = ShardHeap::Current();
      ShardHeap heap;
      heap.Install();
      std::vector<void*> mine;
      for (int i = 0; i < 1000 * (t + 1); ++i) mine.push_back(ShardHeap::Current()->Allocate(32));
      used[t] = heap.used_bytes();
      blocks[t] = heap.live_blocks();
      fallback_used[t] = fallback->used_bytes();
      for (void* p : mine) ShardHeap::Current()->Free(p);
      EXPECT_EQ(heap.used_bytes(), 0u);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(blocks[t], 1000u * (t + 1));
    EXPECT_EQ(used[t], 32u * 1000 * (t + 1));
    EXPECT_EQ(fallback_used[t], 0u);
  }
}

TEST(ShardHeapTest, ReadingTheCounterFromAnotherThread) {
  ShardHeap heap;
  heap.Install();
  void* p = ShardHeap::Current()->Allocate(256);
  size_t seen = 0;
  std::thread reader([&] { seen = heap.used_bytes(); });
  reader.join();
  EXPECT_EQ(seen, 256u);
  ShardHeap::Current()->Free(p);
  heap.Uninstall();
}

// A block freed through a heap that did not allocate it (a value that crossed shards) is a bug:
// debug builds stop at once instead of letting the counters drift.
TEST(ShardHeapDeathTest, FreeOnTheWrongHeap) {
  ShardHeap a;
  EXPECT_DEBUG_DEATH(
      {
        ShardHeap b;
        void* p = a.Allocate(48);
        b.Free(p);
      },
      "did not allocate it|went negative");
#ifdef NDEBUG
  // Release builds freed the block and clamp b's negative balance; a still counts the block.
  EXPECT_EQ(a.live_blocks(), 1u);
#endif
}

TEST(ShardHeapDeathTest, DestroyedWithLiveBlocks) {
  void* left = nullptr;
  EXPECT_DEBUG_DEATH(
      {
        ShardHeap heap;
        left = heap.Allocate(48);
      },
      "live blocks");
  (void)left;  // only set in release builds, where the statement runs in this process
#ifdef NDEBUG
  // Release builds keep the block valid (see BlocksOutliveTheirHeapInRelease); give it back.
  if constexpr (ShardHeap::kUsesMimalloc) {
    mi_free(left);
  } else {
    std::free(left);
  }
#endif
}

#ifdef NDEBUG
TEST(ShardHeapTest, BlocksOutliveTheirHeapInRelease) {
  if constexpr (!ShardHeap::kUsesMimalloc) GTEST_SKIP() << "mimalloc heaps only";
  void* p;
  {
    ShardHeap heap;
    p = heap.Allocate(1000);
  }  // mi_heap_delete moves the live block to the thread's backing heap
  std::memset(p, 7, 1000);
  EXPECT_TRUE(mi_heap_contains_block(mi_heap_get_backing(), p));
  mi_free(p);
}
#endif

}  // namespace
}  // namespace shardis::core

#include "core/latency_histogram.h"

#include <gtest/gtest.h>

namespace shardis::core {
namespace {

TEST(LatencyHistogramTest, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.ValueAtPercentile(50), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  for (uint64_t v = 0; v < LatencyHistogram::kSubBuckets; ++v) {
    EXPECT_EQ(LatencyHistogram::BucketHigh(LatencyHistogram::BucketOf(v)), v);
  }
}

TEST(LatencyHistogramTest, BucketsAreContiguousAndWithinOneSixteenth) {
  // Every value lands in the bucket whose range holds it, and bucket ranges tile the line.
  uint64_t prev_high = LatencyHistogram::kSubBuckets - 1;
  for (size_t b = LatencyHistogram::kSubBuckets; b < LatencyHistogram::kBuckets; ++b) {
    const uint64_t high = LatencyHistogram::BucketHigh(b);
    const uint64_t low = prev_high + 1;
    ASSERT_EQ(LatencyHistogram::BucketOf(low), b);
    ASSERT_EQ(LatencyHistogram::BucketOf(high), b);
    ASSERT_LE(double(high - low), double(low) / 16.0 + 1);
    prev_high = high;
  }
  EXPECT_EQ(prev_high, LatencyHistogram::kMaxValue);
  EXPECT_EQ(LatencyHistogram::BucketOf(~uint64_t(0)), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogramTest, Percentiles) {
  LatencyHistogram h;
  for (uint64_t i = 1; i <= 1000; ++i) h.Add(i * 1000);  // 1..1000 us in ns
  EXPECT_EQ(h.count(), 1000u);
  auto near = [](uint64_t got, double want) {
    return double(got) >= want && double(got) <= want * (1 + 1.0 / 16);
  };
  EXPECT_TRUE(near(h.ValueAtPercentile(50), 500000)) << h.ValueAtPercentile(50);
  EXPECT_TRUE(near(h.ValueAtPercentile(99), 990000)) << h.ValueAtPercentile(99);
  EXPECT_TRUE(near(h.ValueAtPercentile(99.9), 999000)) << h.ValueAtPercentile(99.9);
  EXPECT_TRUE(near(h.ValueAtPercentile(100), 1000000)) << h.ValueAtPercentile(100);
  EXPECT_TRUE(near(h.ValueAtPercentile(0), 1000)) << h.ValueAtPercentile(0);
}

TEST(LatencyHistogramTest, MergeAddsCounts) {
  LatencyHistogram a, b;
  for (int i = 0; i < 90; ++i) a.Add(100);
  for (int i = 0; i < 10; ++i) b.Add(1000000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 100u);
  EXPECT_EQ(a.ValueAtPercentile(50), LatencyHistogram::BucketHigh(LatencyHistogram::BucketOf(100)));
  EXPECT_GE(a.ValueAtPercentile(99), 1000000u);
  a.Reset();
  EXPECT_EQ(a.count(), 0u);
}

TEST(LatencyHistogramTest, CountBelowPowersOfTwo) {
  LatencyHistogram h;
  for (uint64_t v : {0, 15, 16, 1023, 1024, 1025, 2047, 2048, 1 << 20}) h.Add(v);
  h.Add(uint64_t(1) << 50);  // clamped to the largest value
  EXPECT_EQ(h.CountBelow(16), 2u);
  EXPECT_EQ(h.CountBelow(1024), 4u);
  EXPECT_EQ(h.CountBelow(2048), 7u);
  EXPECT_EQ(h.CountBelow(4096), 8u);
  EXPECT_EQ(h.CountBelow(uint64_t(1) << 20), 8u);
  EXPECT_EQ(h.CountBelow(uint64_t(1) << 21), 9u);
  EXPECT_EQ(h.CountBelow(uint64_t(1) << 39), 9u);
  EXPECT_EQ(h.CountBelow(uint64_t(1) << 40), 10u);  // the clamped one is at 2^40 - 1
}

}  // namespace
}  // namespace shardis::core

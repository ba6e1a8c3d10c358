#include "shard/defrag.h"

#include <gtest/gtest.h>

namespace shardis::shard {
namespace {

TEST(DefragTest, FragmentationIsWhatThePagesHoldBeyondTheLiveBlocks) {
  core::HeapPageTotals totals;
  totals.page_bytes = 300;
  totals.used_bytes = 200;
  const HeapFragmentation f = FragmentationOf(totals);
  EXPECT_EQ(f.bytes, 100u);
  EXPECT_DOUBLE_EQ(f.percent, 50.0);
  EXPECT_EQ(FragmentationOf(core::HeapPageTotals{}).bytes, 0u);
}

TEST(DefragTest, CpuPercentFollowsRedisComputeDefragCycles) {
  DefragSettings s;  // Redis' defaults: 10%..100%, 1%..25% CPU, 100mb ignored
  const uint64_t mb = 1 << 20;
  // Below either threshold: no walk.
  EXPECT_EQ(DefragCpuPercent({200 * mb, 9.9}, s, 1), 0);
  EXPECT_EQ(DefragCpuPercent({99 * mb, 50}, s, 1), 0);
  // Interpolated between the thresholds, limited to [cycle-min, cycle-max].
  EXPECT_EQ(DefragCpuPercent({200 * mb, 10}, s, 1), 1);
  EXPECT_EQ(DefragCpuPercent({200 * mb, 55}, s, 1), 13);
  EXPECT_EQ(DefragCpuPercent({200 * mb, 100}, s, 1), 25);
  EXPECT_EQ(DefragCpuPercent({200 * mb, 400}, s, 1), 25);
  // ignore-bytes is shared between the shards.
  EXPECT_EQ(DefragCpuPercent({30 * mb, 100}, s, 4), 25);
  EXPECT_EQ(DefragCpuPercent({20 * mb, 100}, s, 4), 0);
  // Equal thresholds: the most it may take.
  s.threshold_upper = s.threshold_lower;
  EXPECT_EQ(DefragCpuPercent({200 * mb, 50}, s, 1), 25);
}

TEST(DefragTest, AWalkThatMovedNothingWaitsForMoreFragmentation) {
  // Moved something: the next walk need not wait.
  EXPECT_EQ(FragmentationToWalkAgain(1, 1000), 0u);
  EXPECT_EQ(FragmentationToWalkAgain(5000, 0), 0u);
  // Moved nothing: wait for a tenth more than it left.
  EXPECT_EQ(FragmentationToWalkAgain(0, 1000), 1100u);
  EXPECT_EQ(FragmentationToWalkAgain(0, 0), 0u);
}

}  // namespace
}  // namespace shardis::shard

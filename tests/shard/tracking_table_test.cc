// TrackingTable off the proactors: messages are delivered inline, into `delivered`.
#include "shard/tracking_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace shardis::shard {
namespace {

std::vector<TrackingMessage> delivered;

void Capture(TrackingMessage* m) {
  std::unique_ptr<TrackingMessage> owned(m);
  delivered.push_back(std::move(*m));
}

class TrackingTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    delivered.clear();
    SetTrackingDeliverer(&Capture);
    SetTrackingTableMaxKeys(1'000'000);
  }
  void TearDown() override { SetTrackingDeliverer(nullptr); }
  TrackingTable table;
};

TEST_F(TrackingTableTest, ReadersHearOnceThenAreForgotten) {
  EXPECT_FALSE(table.active());
  table.Remember("k", {7, 0});
  table.Remember("k", {7, 0});  // once per reader
  table.Remember("k", {8, 1});
  EXPECT_TRUE(table.active());
  EXPECT_EQ(TrackedKeysTotal(), 1u);
  EXPECT_EQ(TrackedItemsTotal(), 2u);
  table.Invalidate("other", 9);
  EXPECT_TRUE(delivered.empty());
  table.Invalidate("k", 9);
  ASSERT_EQ(delivered.size(), 2u);
  EXPECT_EQ(delivered[0].client_id, 7u);
  EXPECT_EQ(delivered[1].client_id, 8u);
  EXPECT_EQ(delivered[0].writer_id, 9u);
  EXPECT_FALSE(delivered[0].bcast);
  EXPECT_EQ(delivered[0].keys, std::vector<std::string>{"k"});
  table.Invalidate("k", 9);
  EXPECT_EQ(delivered.size(), 2u);
  EXPECT_EQ(TrackedKeysTotal(), 0u);
  EXPECT_EQ(TrackedItemsTotal(), 0u);
  EXPECT_FALSE(table.active());
}

TEST_F(TrackingTableTest, CaptureTakesTheInvalidationsOfItsClientOnly) {
  table.Remember("a", {7, 0});
  table.Remember("a", {8, 0});
  table.Remember("b", {7, 0});
  {
    InvalidationCapture evicted(7);
    table.Invalidate("a", 0);
    table.Invalidate("b", 0);
    EXPECT_EQ(evicted.keys(), (std::vector<std::string>{"a", "b"}));
    ASSERT_EQ(delivered.size(), 1u);  // client 8 hears as usual
    EXPECT_EQ(delivered[0].client_id, 8u);
  }
  EXPECT_EQ(TrackedKeysTotal(), 0u);
  // Without a capture, client 7 hears through a message again.
  table.Remember("c", {7, 0});
  table.Invalidate("c", 0);
  ASSERT_EQ(delivered.size(), 2u);
  EXPECT_EQ(delivered[1].client_id, 7u);
}

TEST_F(TrackingTableTest, BroadcastsCollectUntilFlushedAndSkipOwnWritesWithNoloop) {
  table.AddPrefix("a:", {1, 0}, /*noloop=*/true);
  table.AddPrefix("a:", {2, 0}, /*noloop=*/false);
  table.AddPrefix("", {3, 0}, /*noloop=*/false);
  EXPECT_EQ(TrackedPrefixesTotal(), 2u);  // counted by shard 0, which this table is
  table.Invalidate("a:1", /*writer=*/1);
  table.Invalidate("a:2", /*writer=*/5);
  table.Invalidate("b:1", /*writer=*/5);
  EXPECT_TRUE(delivered.empty());
  EXPECT_TRUE(table.FlushBroadcasts());
  ASSERT_EQ(delivered.size(), 3u);
  std::vector<std::vector<std::string>> by_client(4);
  for (TrackingMessage& m : delivered) {
    EXPECT_TRUE(m.bcast);
    std::sort(m.keys.begin(), m.keys.end());
    by_client[m.client_id] = m.keys;
  }
  EXPECT_EQ(by_client[1], std::vector<std::string>{"a:2"});
  EXPECT_EQ(by_client[2], (std::vector<std::string>{"a:1", "a:2"}));
  EXPECT_EQ(by_client[3], (std::vector<std::string>{"a:1", "a:2", "b:1"}));
  EXPECT_FALSE(table.FlushBroadcasts());
  table.RemovePrefixes(3);
  table.RemovePrefixes(1);
  table.RemovePrefixes(2);
  EXPECT_EQ(TrackedPrefixesTotal(), 0u);
  EXPECT_FALSE(table.active());
}

TEST_F(TrackingTableTest, LimitShedsKeysAndTellsTheirReaders) {
  for (const char* k : {"a", "b", "c", "d"}) table.Remember(k, {4, 0});
  SetTrackingTableMaxKeys(1);
  table.EnforceLimit();
  EXPECT_EQ(delivered.size(), 3u);
  EXPECT_EQ(TrackedKeysTotal(), 1u);
  // Over the limit at once when it is reached by a new key.
  table.Remember("e", {4, 0});
  EXPECT_EQ(delivered.size(), 4u);
  EXPECT_EQ(TrackedKeysTotal(), 1u);
  table.ForgetAllKeys();
  EXPECT_EQ(TrackedKeysTotal(), 0u);
  EXPECT_EQ(TrackedItemsTotal(), 0u);
}

TEST(CommandClientScopeTest, RestoresTheOuterClient) {
  CurrentCommandClient() = {1, nullptr};
  {
    CommandClientScope scope({2, nullptr});
    EXPECT_EQ(CurrentCommandClient().id, 2u);
  }
  EXPECT_EQ(CurrentCommandClient().id, 1u);
  CurrentCommandClient() = {};
}

}  // namespace
}  // namespace shardis::shard

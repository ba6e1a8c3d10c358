#include "shard/shard_set.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/fiber/operations.hpp>

namespace shardis::shard {
namespace {

TEST(ShardSetTest, HashtagsColocateKeys) {
  EXPECT_EQ(ShardSet::HashKey("{user1}.name"), ShardSet::HashKey("{user1}.mail"));
  EXPECT_EQ(ShardSet::HashKey("a{user1}b"), ShardSet::HashKey("user1"));
  // An empty tag means the whole key is hashed.
  EXPECT_NE(ShardSet::HashKey("{}a"), ShardSet::HashKey("{}b"));
  EXPECT_EQ(ShardSet::HashKey("{}a"), ShardSet::HashKey(std::string_view("{}a")));
}

class ShardSetHopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pool_.Start().ok());
    set_ = std::make_unique<ShardSet>(&pool_);
    set_->Start();
  }
  void TearDown() override {
    set_->Stop();
    pool_.Stop();
  }
  io::ProactorPool pool_{3};
  std::unique_ptr<ShardSet> set_;
};

TEST_F(ShardSetHopTest, AwaitRunsOnTheOwnerThread) {
  pool_.AwaitOnAll([&](io::Proactor* p) {
    for (unsigned sid = 0; sid < set_->size(); ++sid) {
      unsigned ran_on = ~0u;
      set_->Await(sid, [&](Shard& s) {
        EXPECT_EQ(s.id(), sid);
        ran_on = io::Proactor::current()->index();
      });
      EXPECT_EQ(ran_on, sid);
    }
  });
}

TEST_F(ShardSetHopTest, KeysWrittenThroughHopsAreSeenByTheirOwner) {
  // Every thread writes keys through the owner, then every thread reads them all back.
  pool_.AwaitOnAll([&](io::Proactor* p) {
    for (int i = 0; i < 2000; ++i) {
      std::string key = "k" + std::to_string(p->index()) + ":" + std::to_string(i);
      set_->Await(set_->ShardOf(key), [&](Shard& s) {
        bool inserted;
        s.db(0).FindOrInsert(key, NowMs(), &inserted)->value = key;
      });
    }
  });
  std::atomic<size_t> total{0};
  pool_.AwaitOnAll([&](io::Proactor*) {
    std::vector<size_t> sizes(set_->size());
    set_->AwaitAll([&](Shard& s) { sizes[s.id()] = s.db(0).size(); });
    size_t sum = 0;
    for (size_t n : sizes) sum += n;
    total += sum;
  });
  EXPECT_EQ(total.load(), 3u * 3 * 2000);
}

TEST_F(ShardSetHopTest, AwaitAllInFibersMayYield) {
  pool_.AwaitOn(0, [&](io::Proactor*) {
    std::vector<int> counts(set_->size());
    set_->AwaitAllInFibers([&](Shard& s) {
      for (int i = 0; i < 10; ++i) {
        boost::this_fiber::yield();
        counts[s.id()]++;
      }
    });
    for (int c : counts) EXPECT_EQ(c, 10);
  });
}

}  // namespace
}  // namespace shardis::shard

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
  // Unclosed or empty tags hash the whole key.
  EXPECT_EQ(ShardSet::HashKey("{abc"), core::HashBytes("{abc"));
  EXPECT_EQ(ShardSet::HashKey("{}abc}"), core::HashBytes("{}abc}"));
}

TEST(ShardSetTest, RoutingReusesTheKeyHash) {
  // A key without a hashtag is routed by the very hash the table uses; with one, by the tag's.
  for (std::string_view key : {"plain", "12345", "", "a}b{"}) {
    EXPECT_EQ(ShardSet::RoutingHash(key, core::HashBytes(key)), core::HashBytes(key)) << key;
  }
  EXPECT_EQ(ShardSet::RoutingHash("x{tag}y", core::HashBytes("x{tag}y")), core::HashBytes("tag"));
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
      const uint64_t hash = core::HashBytes(key);
      const unsigned sid = set_->ShardOf(key, hash);
      EXPECT_EQ(sid, set_->ShardOf(key));
      set_->Await(sid, [&](Shard& s) {
        bool inserted;
        s.db(0).FindOrInsert(key, hash, NowMs(), &inserted).value().SetString(key);
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
  // Each owner finds every key it was sent, with its value.
  pool_.AwaitOn(0, [&](io::Proactor*) {
    std::vector<size_t> found(set_->size());
    set_->AwaitAll([&](Shard& s) {
      const int64_t now = NowMs();
      for (unsigned t = 0; t < 3; ++t) {
        for (int i = 0; i < 2000; ++i) {
          std::string key = "k" + std::to_string(t) + ":" + std::to_string(i);
          const uint64_t hash = core::HashBytes(key);
          if (set_->ShardOf(key, hash) != s.id()) continue;
          Db::Iterator it = s.db(0).Find(key, hash, now);
          if (Db::Found(it) && it.value().ToString() == key) ++found[s.id()];
        }
      }
    });
    size_t sum = 0;
    for (size_t n : found) sum += n;
    EXPECT_EQ(sum, 3u * 2000);
  });
}

TEST_F(ShardSetHopTest, UsedMemoryCountsValuesOnTheirShard) {
  pool_.AwaitOn(0, [&](io::Proactor*) {
    auto used = [&] {
      std::vector<size_t> bytes(set_->size());
      set_->AwaitAll([&](Shard& s) { bytes[s.id()] = s.used_memory(); });
      size_t sum = 0;
      for (size_t n : bytes) sum += n;
      return sum;
    };
    const size_t before = used();
    const std::string value(1000, 'v');
    for (int i = 0; i < 300; ++i) {
      std::string key = "mem:" + std::to_string(i);
      const uint64_t hash = core::HashBytes(key);
      set_->Await(set_->ShardOf(key, hash), [&](Shard& s) {
        bool inserted;
        s.db(0).FindOrInsert(key, hash, NowMs(), &inserted).value().SetString(value);
      });
    }
    // At least the 300 values (each a heap block of 1000+ bytes) are counted.
    EXPECT_GE(used(), before + 300 * 1000);
    set_->AwaitAll([&](Shard& s) { s.db(0).Clear(); });
    EXPECT_EQ(used(), before);
  });
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

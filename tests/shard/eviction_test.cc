// Eviction on one Shard (no threads): which keys each policy may take, and the answers of
// MakeRoomForWrite and EvictOverShare under maxmemory.
#include "shard/eviction.h"

#include <gtest/gtest.h>

#include <string>

#include "core/access_clock.h"
#include "shard/shard.h"

namespace shardis::shard {
namespace {

using core::HashBytes;

class EvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryLimit::set_num_shards(1);
    MemoryLimit::set_samples(5);
  }
  void TearDown() override {
    MemoryLimit::set_container_limit(0);
    MemoryLimit::set_maxmemory(0);
    MemoryLimit::set_policy(EvictionPolicy::kNoEviction);
  }
  void Set(int db, const std::string& key, int64_t at_ms = 0) {
    bool inserted;
    Db& d = shard_.db(db);
    Db::Iterator it = d.FindOrInsert(key, HashBytes(key), kNow, &inserted);
    it.value().SetString(std::string(200, 'v'));
    if (at_ms > 0) d.SetExpire(it, key, HashBytes(key), at_ms);
  }
  bool Has(int db, const std::string& key) {
    return Db::Found(shard_.db(db).Find(key, HashBytes(key), kNow));
  }

  static constexpr int64_t kNow = 1'000'000;
  Shard shard_{0};
};

TEST_F(EvictionTest, NoEvictionAndEmptyShardEvictNothing) {
  EXPECT_FALSE(EvictOne(shard_, EvictionPolicy::kAllKeysRandom, kNow));
  Set(0, "a");
  EXPECT_FALSE(EvictOne(shard_, EvictionPolicy::kNoEviction, kNow));
  EXPECT_FALSE(EvictOne(shard_, EvictionPolicy::kVolatileRandom, kNow));  // no key has a TTL
  EXPECT_TRUE(Has(0, "a"));
}

TEST_F(EvictionTest, AllKeysEvictsFromEveryDatabase) {
  for (int i = 0; i < 50; ++i) Set(i % 3, "k" + std::to_string(i));
  int evicted = 0;
  while (EvictOne(shard_, EvictionPolicy::kAllKeysRandom, kNow)) ++evicted;
  EXPECT_EQ(evicted, 50);
  EXPECT_EQ(shard_.stats().evicted_keys, 50u);
  for (int db = 0; db < 3; ++db) EXPECT_EQ(shard_.db(db).size(), 0u);
}

TEST_F(EvictionTest, VolatileTakesOnlyKeysWithATtl) {
  for (int i = 0; i < 20; ++i) Set(0, "plain" + std::to_string(i));
  for (int i = 0; i < 20; ++i) Set(1, "ttl" + std::to_string(i), kNow + 10'000 + i);
  int evicted = 0;
  while (EvictOne(shard_, EvictionPolicy::kVolatileLru, kNow)) ++evicted;
  EXPECT_EQ(evicted, 20);
  EXPECT_EQ(shard_.db(0).size(), 20u);
  EXPECT_EQ(shard_.db(1).size(), 0u);
}

TEST_F(EvictionTest, VolatileTtlPrefersNearDeadlines) {
  for (int i = 0; i < 500; ++i) Set(0, "soon" + std::to_string(i), kNow + 1000 + i);
  for (int i = 0; i < 500; ++i) Set(0, "late" + std::to_string(i), kNow + 100'000'000 + i);
  for (int i = 0; i < 250; ++i) ASSERT_TRUE(EvictOne(shard_, EvictionPolicy::kVolatileTtl, kNow));
  int soon_left = 0, late_left = 0;
  for (int i = 0; i < 500; ++i) {
    soon_left += Has(0, "soon" + std::to_string(i));
    late_left += Has(0, "late" + std::to_string(i));
  }
  // With 5 samples, a victim is a 'late' key only when all 5 are: rare while half are 'soon'.
  EXPECT_GT(500 - soon_left, 4 * (500 - late_left)) << soon_left << " " << late_left;
}

// 200 keys last accessed 100 s ago and 200 accessed now: the LRU policies' sampled pool takes
// nearly only old ones; the same with LFU counters of 5 and 30.
TEST_F(EvictionTest, LruAndLfuEvictTheIdlestAndLeastUsed) {
  for (EvictionPolicy policy : {EvictionPolicy::kAllKeysLru, EvictionPolicy::kAllKeysLfu,
                                EvictionPolicy::kVolatileLru, EvictionPolicy::kVolatileLfu}) {
    SCOPED_TRACE(EvictionPolicyName(policy));
    MemoryLimit::set_policy(policy);
    const bool lfu = IsLfuPolicy(policy);
    Db& db = shard_.db(0);
    for (int i = 0; i < 400; ++i) {
      const std::string key = (i % 2 ? "cold" : "hot") + std::to_string(i);
      Set(0, key, kNow + 3'600'000);
      Db::Iterator it = db.Peek(key, HashBytes(key), kNow);
      const uint32_t clock = lfu ? core::LfuClock(i % 2 ? 5 : 30, kNow)
                                 : core::LruClock(i % 2 ? kNow - 100'000 : kNow);
      db.SetAccessClock(it, clock);
    }
    for (int i = 0; i < 150; ++i) ASSERT_TRUE(EvictOne(shard_, policy, kNow));
    int hot_left = 0;
    for (int i = 0; i < 400; i += 2) {
      const std::string key = "hot" + std::to_string(i);
      hot_left += Db::Found(db.Peek(key, HashBytes(key), kNow));
    }
    EXPECT_GE(hot_left, 190);
    while (EvictOne(shard_, policy, kNow)) {
    }
    EXPECT_EQ(db.size(), 0u);
  }
}

TEST_F(EvictionTest, MakeRoomForWrite) {
  for (int i = 0; i < 1000; ++i) Set(0, "k" + std::to_string(i));
  const uint64_t used = shard_.used_memory();
  MemoryLimit::set_maxmemory(0);
  EXPECT_TRUE(MakeRoomForWrite(shard_, kNow));  // no limit
  MemoryLimit::set_maxmemory(used / 2);
  MemoryLimit::set_policy(EvictionPolicy::kNoEviction);
  EXPECT_FALSE(MakeRoomForWrite(shard_, kNow));
  EXPECT_EQ(shard_.db(0).size(), 1000u);
  MemoryLimit::set_policy(EvictionPolicy::kAllKeysRandom);
  EXPECT_TRUE(MakeRoomForWrite(shard_, kNow));
  EXPECT_LE(shard_.used_memory(), used / 2);
  EXPECT_LT(shard_.db(0).size(), 1000u);
  EXPECT_GT(shard_.stats().evicted_keys, 0u);
  // Nothing evictable under a volatile policy and over the limit: refused.
  MemoryLimit::set_policy(EvictionPolicy::kVolatileTtl);
  MemoryLimit::set_maxmemory(1);
  EXPECT_FALSE(MakeRoomForWrite(shard_, kNow));
}

// maxmemory derived from a container's limit (docs/memory.md): what the process holds beyond
// used_memory is headroom, down to half of maxmemory; over 95% of the limit writes are refused.
TEST_F(EvictionTest, ContainerLimitCountsResidentMemory) {
  constexpr uint64_t kMiB = 1 << 20;
  MemoryLimit::set_maxmemory(800 * kMiB);
  MemoryLimit::set_container_limit(1000 * kMiB);
  EXPECT_EQ(MemoryLimit::limit(), 800 * kMiB);  // no sample yet
  MemoryLimit::UpdateResident(500 * kMiB, 400 * kMiB);  // 100 MiB beyond used_memory
  EXPECT_EQ(MemoryLimit::limit(), 800 * kMiB);        // 900 - 100 is over maxmemory
  MemoryLimit::UpdateResident(800 * kMiB, 400 * kMiB);
  EXPECT_EQ(MemoryLimit::limit(), 500 * kMiB);  // 900 - 400
  EXPECT_EQ(MemoryLimit::share(), 500 * kMiB);
  EXPECT_FALSE(MemoryLimit::resident_over_deny());
  MemoryLimit::UpdateResident(960 * kMiB, 300 * kMiB);
  EXPECT_EQ(MemoryLimit::limit(), 400 * kMiB);  // the floor: half of maxmemory
  EXPECT_TRUE(MemoryLimit::resident_over_deny());
  // Over 95% of the limit a write is refused even when eviction could go on.
  MemoryLimit::set_policy(EvictionPolicy::kAllKeysRandom);
  Set(0, "a");
  EXPECT_FALSE(MakeRoomForWrite(shard_, kNow));
  MemoryLimit::UpdateResident(700 * kMiB, 300 * kMiB);
  EXPECT_TRUE(MakeRoomForWrite(shard_, kNow));
  // An explicit maxmemory (what CONFIG SET does) counts used_memory only.
  MemoryLimit::set_container_limit(0);
  MemoryLimit::UpdateResident(960 * kMiB, 300 * kMiB);
  EXPECT_EQ(MemoryLimit::limit(), 800 * kMiB);
  EXPECT_FALSE(MemoryLimit::resident_over_deny());
}

TEST_F(EvictionTest, EvictOverShare) {
  for (int i = 0; i < 1000; ++i) Set(0, "k" + std::to_string(i), i < 10 ? kNow + 1000 : 0);
  const uint64_t used = shard_.used_memory();
  // Under its share: nothing goes.
  MemoryLimit::set_maxmemory(used * 2);
  MemoryLimit::set_policy(EvictionPolicy::kAllKeysRandom);
  EXPECT_TRUE(EvictOverShare(shard_, kNow));
  EXPECT_EQ(shard_.db(0).size(), 1000u);
  // noeviction never evicts, and leaves the decision to the global test.
  MemoryLimit::set_maxmemory(used / 2);
  MemoryLimit::set_policy(EvictionPolicy::kNoEviction);
  EXPECT_FALSE(EvictOverShare(shard_, kNow));
  EXPECT_EQ(shard_.db(0).size(), 1000u);
  // A volatile policy takes what it may (the 10 keys with a TTL), then reports it is stuck.
  MemoryLimit::set_policy(EvictionPolicy::kVolatileRandom);
  EXPECT_FALSE(EvictOverShare(shard_, kNow));
  EXPECT_EQ(shard_.db(0).size(), 990u);
  EXPECT_EQ(shard_.db(0).expires_count(), 0u);
  // An allkeys policy gets under the share.
  MemoryLimit::set_policy(EvictionPolicy::kAllKeysRandom);
  EXPECT_TRUE(EvictOverShare(shard_, kNow));
  EXPECT_LE(shard_.used_memory(), used / 2);
}

TEST_F(EvictionTest, EvictBeforeCommandEvictsOnlyWhenTheShardMayExceedItsShare) {
  for (int i = 0; i < 1000; ++i) Set(0, "k" + std::to_string(i));
  const uint64_t used = shard_.used_memory();
  MemoryLimit::set_policy(EvictionPolicy::kAllKeysRandom);
  MemoryLimit::set_maxmemory(used * 2);
  EXPECT_TRUE(MakeRoomForWrite(shard_, kNow));
  EXPECT_TRUE(shard_.may_exceed_share());  // the write that follows is not measured yet
  EvictBeforeCommand(shard_, kNow);        // measures: under the share
  EXPECT_FALSE(shard_.may_exceed_share());
  // Bytes added without a measure (no write admission, no tick) go unseen by a read...
  for (int i = 0; i < 100; ++i) {
    const std::string key = "big" + std::to_string(i);
    bool inserted;
    shard_.db(0).FindOrInsert(key, HashBytes(key), kNow, &inserted).value().SetString(
        std::string(10'000, 'v'));
  }
  EvictBeforeCommand(shard_, kNow);
  EXPECT_EQ(shard_.db(0).size(), 1100u);
  // ...until a measure (the periodic tick) finds the shard over its share.
  NoteUsedMemory(shard_, shard_.used_memory(), /*force_publish=*/true);
  EXPECT_TRUE(shard_.may_exceed_share());
  EvictBeforeCommand(shard_, kNow);
  EXPECT_LT(shard_.db(0).size(), 1100u);
  EXPECT_LE(shard_.used_memory(), used * 2);
  EXPECT_FALSE(shard_.may_exceed_share());
}

TEST_F(EvictionTest, AWriteLeavingTheShardOverItsShareWithNoVictimAsksTheOthers) {
  MemoryLimit::set_short_of_victims(false);
  for (int i = 0; i < 1000; ++i) Set(0, "k" + std::to_string(i));  // no TTL
  const uint64_t used = shard_.used_memory();
  MemoryLimit::set_policy(EvictionPolicy::kVolatileRandom);
  MemoryLimit::set_maxmemory(used * 2);
  NoteWriteGrowth(shard_);  // under its share
  EXPECT_FALSE(MemoryLimit::short_of_victims());
  MemoryLimit::set_maxmemory(used / 2);
  MemoryLimit::set_policy(EvictionPolicy::kNoEviction);
  NoteWriteGrowth(shard_);  // noeviction: nobody evicts for anybody
  EXPECT_FALSE(MemoryLimit::short_of_victims());
  MemoryLimit::set_policy(EvictionPolicy::kVolatileRandom);
  NoteWriteGrowth(shard_);  // over, and no key with a TTL: the others must evict
  EXPECT_TRUE(MemoryLimit::short_of_victims());
  EXPECT_EQ(shard_.db(0).size(), 1000u);  // it evicts nothing itself
  EXPECT_TRUE(shard_.may_exceed_share());
  MemoryLimit::set_short_of_victims(false);
  Set(1, "ttl", kNow + 1000);
  NoteWriteGrowth(shard_);  // it has a victim now: it evicts it before its next command
  EXPECT_FALSE(MemoryLimit::short_of_victims());
  EXPECT_FALSE(EvictOverShare(shard_, kNow));  // takes it, then is stuck: says so
  EXPECT_FALSE(Has(1, "ttl"));
  EXPECT_TRUE(MemoryLimit::short_of_victims());
  MemoryLimit::set_short_of_victims(false);
}

}  // namespace
}  // namespace shardis::shard

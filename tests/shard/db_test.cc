#include "shard/db.h"

#include <gtest/gtest.h>

namespace shardis::shard {
namespace {

TEST(DbTest, FindInsertErase) {
  Db db;
  bool inserted;
  Entry* e = db.FindOrInsert("k", 1000, &inserted);
  EXPECT_TRUE(inserted);
  e->value = "v";
  EXPECT_EQ(db.Find("k", 1000)->value, "v");
  db.FindOrInsert("k", 1000, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_TRUE(db.Erase("k", 1000));
  EXPECT_FALSE(db.Erase("k", 1000));
  EXPECT_EQ(db.Find("k", 1000), nullptr);
}

TEST(DbTest, LazyExpiry) {
  Db db;
  bool inserted;
  Entry* e = db.FindOrInsert("k", 1000, &inserted);
  db.SetExpire("k", e, 2000);
  EXPECT_EQ(db.expires_count(), 1u);
  EXPECT_NE(db.Find("k", 1999), nullptr);
  EXPECT_EQ(db.Find("k", 2000), nullptr);  // the deadline itself is already expired, as in Redis
  EXPECT_EQ(db.size(), 0u);
  EXPECT_EQ(db.expires_count(), 0u);
  EXPECT_EQ(db.expired_keys(), 1u);
}

TEST(DbTest, ExpiredKeyIsReinsertedFresh) {
  Db db;
  bool inserted;
  Entry* e = db.FindOrInsert("k", 0, &inserted);
  e->value = "old";
  db.SetExpire("k", e, 10);
  e = db.FindOrInsert("k", 20, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(e->value, "");
  EXPECT_EQ(e->expire_at_ms, 0);
  EXPECT_EQ(db.expires_count(), 0u);
}

TEST(DbTest, ActiveExpiryRemovesOnlyDueKeysInDeadlineOrder) {
  Db db;
  bool inserted;
  for (int i = 0; i < 100; ++i) {
    std::string key = "k" + std::to_string(i);
    Entry* e = db.FindOrInsert(key, 0, &inserted);
    db.SetExpire(key, e, 100 + i);
  }
  db.FindOrInsert("forever", 0, &inserted);
  EXPECT_EQ(db.ExpireSome(149, 10), 10u);  // budget
  EXPECT_EQ(db.ExpireSome(149, 1000), 40u);
  EXPECT_EQ(db.size(), 51u);
  EXPECT_NE(db.Find("k50", 149), nullptr);
  EXPECT_EQ(db.ExpireSome(10000, 1000), 50u);
  EXPECT_EQ(db.size(), 1u);
  EXPECT_EQ(db.expires_count(), 0u);
}

TEST(DbTest, PersistAndChangeExpiry) {
  Db db;
  bool inserted;
  Entry* e = db.FindOrInsert("k", 0, &inserted);
  db.SetExpire("k", e, 100);
  db.SetExpire("k", e, 200);
  EXPECT_EQ(db.expires_count(), 1u);
  EXPECT_EQ(db.ExpireSome(150, 10), 0u);
  db.SetExpire("k", e, 0);
  EXPECT_EQ(db.expires_count(), 0u);
  EXPECT_EQ(db.ExpireSome(1000, 10), 0u);
  EXPECT_NE(db.Find("k", 1000), nullptr);
}

}  // namespace
}  // namespace shardis::shard

namespace shardis::shard {
namespace {

TEST(DbTest, SumTtlFollowsEveryChange) {
  Db db;
  bool inserted;
  Entry* a = db.FindOrInsert("a", 0, &inserted);
  db.SetExpire("a", a, 1000);
  Entry* b = db.FindOrInsert("b", 0, &inserted);
  db.SetExpire("b", b, 3000);
  EXPECT_EQ(db.SumTtlMs(500), 500 + 2500);
  db.SetExpire("b", b, 2000);
  EXPECT_EQ(db.SumTtlMs(500), 500 + 1500);
  db.Erase("a", 500);
  EXPECT_EQ(db.SumTtlMs(500), 1500);
  EXPECT_EQ(db.ExpireSome(2500, 10), 1u);
  EXPECT_EQ(db.SumTtlMs(2500), 0);
  // Deadlines whose sum overflows 64 bits: the running sum stays exact, the answer saturates.
  for (int i = 0; i < 1000; ++i) {
    std::string key = "k" + std::to_string(i);
    db.SetExpire(key, db.FindOrInsert(key, 0, &inserted), int64_t(1) << 60);
  }
  EXPECT_EQ(db.SumTtlMs(0), INT64_MAX);
  EXPECT_EQ(db.SumTtlMs((int64_t(1) << 60) - 1), 1000);
}

}  // namespace
}  // namespace shardis::shard

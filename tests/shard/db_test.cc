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

// The per-shard lazy-free queue (shard/lazy_free.h): which values it takes (Redis' free effort
// above 64), its counters, freeing by deadline, whole tables, and used_memory falling as it
// drains.
#include "shard/lazy_free.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/cycle_clock.h"
#include "core/hash_object.h"
#include "core/set_object.h"
#include "core/value_object.h"
#include "shard/shard.h"

namespace shardis::shard {
namespace {

using core::HashBytes;

constexpr int64_t kNow = 1'000'000;

// Stores a set of n non-integer members (a hash table past 128) at key.
void AddSet(Db& db, const std::string& key, int n) {
  bool inserted;
  core::CompactValue& cell = db.FindOrInsert(key, HashBytes(key), kNow, &inserted).value();
  core::SetRef::InitCell(&cell, "m");
  core::SetRef set(cell);
  for (int i = 0; i < n; ++i) set.Add("member:" + std::to_string(i));
}

uint64_t Never() { return UINT64_MAX; }

// A shard (its heap installed on this thread), its database 0 and its queue.
class LazyFreeQueueTest : public ::testing::Test {
 protected:
  Shard s{0};
  Db& db = s.db(0);
  LazyFreeQueue& q = s.lazy_free();
};

TEST_F(LazyFreeQueueTest, TakesOnlyValuesCostlierThanTheThreshold) {
  AddSet(db, "small", 10);  // packed: one block, effort 1
  AddSet(db, "big", 1000);  // a table of 1000 members: effort 1000
  EXPECT_TRUE(db.Erase("small", HashBytes("small"), kNow, /*lazy=*/true));
  EXPECT_EQ(q.pending(), 0u);
  const size_t before = s.used_memory();
  EXPECT_TRUE(db.Erase("big", HashBytes("big"), kNow, /*lazy=*/true));
  EXPECT_EQ(db.size(), 0u);  // the key is gone at once
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_GT(q.value_bytes(), 1000u * 8);
  // Its memory is still held, until the queue frees it.
  EXPECT_GT(s.used_memory(), before - 1000);
  EXPECT_TRUE(q.FreeUntil(Never()));
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.freed(), 1u);
  EXPECT_EQ(q.value_bytes(), 0u);
  EXPECT_LT(s.used_memory() + 1000u * 8, before);
  q.ResetStats();
  EXPECT_EQ(q.freed(), 0u);
}

TEST_F(LazyFreeQueueTest, EraseWithoutLazyFreesAtOnce) {
  AddSet(db, "big", 1000);
  EXPECT_TRUE(db.Erase("big", HashBytes("big"), kNow));
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.freed(), 0u);
}

TEST_F(LazyFreeQueueTest, KeepsTheCellFlagsForTheTable) {
  AddSet(db, "big", 200);
  Db::Iterator it = db.Find("big", HashBytes("big"), kNow);
  db.SetExpire(it, "big", HashBytes("big"), kNow + 10'000);
  // A lazy erase of a key with a TTL leaves no entry in either table.
  EXPECT_TRUE(db.Erase("big", HashBytes("big"), kNow, /*lazy=*/true));
  EXPECT_EQ(db.size(), 0u);
  EXPECT_EQ(db.expires_count(), 0u);
  EXPECT_EQ(q.pending(), 1u);
}

TEST_F(LazyFreeQueueTest, StopsAtTheDeadlineBetweenValues) {
  for (int i = 0; i < 3; ++i) AddSet(db, "big" + std::to_string(i), 200);
  for (int i = 0; i < 3; ++i) {
    const std::string key = "big" + std::to_string(i);
    db.Erase(key, HashBytes(key), kNow, /*lazy=*/true);
  }
  ASSERT_EQ(q.pending(), 3u);
  // A deadline already passed still frees one value: the clock is read after each.
  EXPECT_FALSE(q.FreeUntil(0));
  EXPECT_EQ(q.pending(), 2u);
  EXPECT_EQ(q.freed(), 1u);
  EXPECT_TRUE(q.FreeUntil(Never()));
  EXPECT_EQ(q.freed(), 3u);
}

TEST_F(LazyFreeQueueTest, ALazyClearHandsOverTheTablesAndCountsEveryKey) {
  for (int i = 0; i < 5000; ++i) {
    bool inserted;
    const std::string key = "key:" + std::to_string(i);
    Db::Iterator it = db.FindOrInsert(key, HashBytes(key), kNow, &inserted);
    it.value().SetString(std::string(100, 'v'));
    if (i % 2 == 0) db.SetExpire(it, key, HashBytes(key), kNow + 10'000);
  }
  AddSet(db, "big", 1000);
  const size_t full = s.used_memory();
  db.Clear(/*lazy=*/true);
  EXPECT_EQ(db.size(), 0u);
  EXPECT_EQ(db.expires_count(), 0u);
  EXPECT_EQ(q.pending(), 5001u);  // one per key, as Redis' emptyDbAsync counts
  EXPECT_GE(s.used_memory() + 4096, full);  // nothing freed yet
  // The database takes new keys meanwhile.
  bool inserted;
  db.FindOrInsert("new", HashBytes("new"), kNow, &inserted);
  EXPECT_TRUE(inserted);
  // Slices: each does at least one bucket.
  int slices = 0;
  while (!q.FreeUntil(0)) ++slices;
  EXPECT_GT(slices, 1);
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_EQ(q.freed(), 5001u);
  EXPECT_LT(s.used_memory() + 5000u * 100, full);
  EXPECT_EQ(db.size(), 1u);
  // An empty database hands over nothing.
  s.db(1).Clear(/*lazy=*/true);
  EXPECT_TRUE(q.empty());
}

TEST_F(LazyFreeQueueTest, FreeEffortIsRedis) {
  AddSet(db, "packed", 100);
  AddSet(db, "table", 300);
  bool inserted;
  core::CompactValue& hash = db.FindOrInsert("hash", HashBytes("hash"), kNow, &inserted).value();
  core::HashRef::InitCell(&hash);
  core::HashRef h(hash);
  for (int i = 0; i < 600; ++i) h.Set("f" + std::to_string(i), "v");
  auto effort = [&](std::string_view key) {
    return core::FreeEffort(db.Find(key, HashBytes(key), kNow).value());
  };
  EXPECT_EQ(effort("packed"), 1u);  // one block
  EXPECT_EQ(effort("table"), 300u);  // its members
  EXPECT_EQ(effort("hash"), 600u);   // its fields (past hash-max-listpack-entries 512)
  EXPECT_EQ(core::FreeEffort(core::CompactValue::FromString(std::string(100000, 'x'))), 1u);
}

TEST_F(LazyFreeQueueTest, FreesASetTableInPieces) {
  AddSet(db, "big", 5000);
  const size_t full = s.used_memory();
  db.Erase("big", HashBytes("big"), kNow, /*lazy=*/true);
  // Deadline passed: each call frees one piece of 1024 members and stops, the value still there.
  EXPECT_FALSE(q.FreeUntil(0));
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_LE(s.used_memory() + 1024u * 8, full);  // 1024 blocks of at least 8 bytes ("member:N")
  int more = 0;
  while (!q.FreeUntil(0)) ++more;
  EXPECT_EQ(more, 3);  // 3 more pieces of 1024, then the last 904 and the value, done
  EXPECT_EQ(q.freed(), 1u);
  EXPECT_EQ(q.value_bytes(), 0u);
}

TEST(LazyFreeSettingsTest, AreOffByDefaultAndSettable) {
  for (LazyFreePath p : {LazyFreePath::kEviction, LazyFreePath::kExpire, LazyFreePath::kServerDel,
                         LazyFreePath::kUserDel, LazyFreePath::kUserFlush}) {
    EXPECT_FALSE(LazyFreeOn(p));
    SetLazyFree(p, true);
    EXPECT_TRUE(LazyFreeOn(p));
    SetLazyFree(p, false);
  }
}

TEST_F(LazyFreeQueueTest, ServerDelTakesAnOverwrittenValue) {
  AddSet(db, "big", 1000);
  Db::Iterator it = db.Find("big", HashBytes("big"), kNow);
  db.ReleaseOldValue(it);  // the setting is off: nothing taken
  EXPECT_EQ(q.pending(), 0u);
  SetLazyFree(LazyFreePath::kServerDel, true);
  db.Store("big", HashBytes("big"), core::CompactValue::FromString("x"), 0, kNow);
  SetLazyFree(LazyFreePath::kServerDel, false);
  EXPECT_EQ(q.pending(), 1u);
  char scratch[core::CompactValue::kScratchSize];
  EXPECT_EQ(db.Find("big", HashBytes("big"), kNow).value().GetString(scratch), "x");
}

}  // namespace
}  // namespace shardis::shard

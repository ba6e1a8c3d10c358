#include "shard/db.h"

#include <gtest/gtest.h>

#include <climits>
#include <set>
#include <string>
#include <vector>

namespace shardis::shard {
namespace {

using core::CompactValue;
using core::HashBytes;

// The Db calls of one key, with its hash computed once as the connection does.
class DbTest : public ::testing::Test {
 protected:
  Db::Iterator Find(std::string_view key, int64_t now) {
    return db_.Find(key, HashBytes(key), now);
  }
  Db::Iterator Insert(std::string_view key, int64_t now, bool* inserted) {
    return db_.FindOrInsert(key, HashBytes(key), now, inserted);
  }
  // Inserts (or overwrites) key = value; at_ms > 0 sets a deadline.
  Db::Iterator Set(std::string_view key, std::string_view value, int64_t now, int64_t at_ms = 0) {
    bool inserted;
    Db::Iterator it = Insert(key, now, &inserted);
    it.value().SetString(value);
    db_.SetExpire(it, key, HashBytes(key), at_ms);
    return it;
  }
  bool Erase(std::string_view key, int64_t now) { return db_.Erase(key, HashBytes(key), now); }
  int64_t ExpireAt(std::string_view key, int64_t now) {
    Db::Iterator it = Find(key, now);
    return Db::Found(it) ? db_.ExpireAt(it, key, HashBytes(key)) : -1;
  }
  void SetExpire(std::string_view key, int64_t now, int64_t at_ms) {
    Db::Iterator it = Find(key, now);
    ASSERT_TRUE(Db::Found(it)) << key;
    db_.SetExpire(it, key, HashBytes(key), at_ms);
  }
  // The value of a live key, or "<missing>".
  std::string Get(std::string_view key, int64_t now) {
    Db::Iterator it = Find(key, now);
    return Db::Found(it) ? it.value().ToString() : "<missing>";
  }
  std::set<std::string> LiveKeys(int64_t now) {
    std::set<std::string> keys;
    db_.ForEachLive(now, [&](std::string_view key, Db::Iterator it) {
      EXPECT_TRUE(it.key().EqualsString(key));
      EXPECT_TRUE(keys.emplace(key).second) << "visited twice: " << key;
    });
    return keys;
  }
  // Calls ExpireSome until it has removed `want` keys (or clearly never will).
  size_t ExpireAll(int64_t now, size_t want) {
    size_t removed = 0, examined;
    for (int round = 0; round < 100 && removed < want; ++round) {
      removed += db_.ExpireSome(now, 16, &examined);
    }
    return removed;
  }

  Db db_;
};

TEST_F(DbTest, FindInsertErase) {
  bool inserted;
  Db::Iterator it = Insert("k", 1000, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(it.value().ToString(), "");  // a new key is an empty string without TTL
  EXPECT_EQ(it.value().flags(), 0);
  it.value().SetString("v");
  EXPECT_EQ(Get("k", 1000), "v");
  it = Insert("k", 1000, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(it.value().ToString(), "v");
  EXPECT_EQ(db_.size(), 1u);

  EXPECT_TRUE(Erase("k", 1000));
  EXPECT_FALSE(Erase("k", 1000));
  EXPECT_FALSE(Db::Found(Find("k", 1000)));
  EXPECT_EQ(db_.size(), 0u);
  EXPECT_EQ(db_.expired_keys(), 0u);

  // Erase through an iterator, TTL included.
  Set("a", "1", 0, 500);
  Set("b", "2", 0);
  Db::Iterator a = Find("a", 0);
  ASSERT_TRUE(Db::Found(a));
  db_.Erase(a, "a", HashBytes("a"));
  EXPECT_EQ(db_.size(), 1u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.SumTtlMs(0), 0);
  EXPECT_EQ(Get("b", 0), "2");
  EXPECT_EQ(db_.expired_keys(), 0u);
}

TEST_F(DbTest, ManyKeysSurviveGrowth) {
  for (int i = 0; i < 5000; ++i) Set("key:" + std::to_string(i), "v" + std::to_string(i), 0);
  EXPECT_EQ(db_.size(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(Get("key:" + std::to_string(i), 0), "v" + std::to_string(i));
  }
  for (int i = 0; i < 5000; i += 2) ASSERT_TRUE(Erase("key:" + std::to_string(i), 0));
  EXPECT_EQ(db_.size(), 2500u);
  EXPECT_EQ(LiveKeys(0).size(), 2500u);
  EXPECT_EQ(Get("key:1", 0), "v1");
  EXPECT_EQ(Get("key:2", 0), "<missing>");
}

TEST_F(DbTest, LazyExpiry) {
  Set("k", "v", 1000, 2000);
  EXPECT_EQ(db_.expires_count(), 1u);
  EXPECT_EQ(ExpireAt("k", 1000), 2000);
  EXPECT_TRUE(Db::Found(Find("k", 1999)));
  EXPECT_FALSE(Db::Found(Find("k", 2000)));  // the deadline itself is already expired, as in Redis
  EXPECT_EQ(db_.size(), 0u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.expired_keys(), 1u);
  EXPECT_EQ(db_.SumTtlMs(2000), 0);

  // Erase of an expired key removes it but does not count as a deletion; it counts as expired.
  Set("e", "v", 0, 100);
  EXPECT_FALSE(Erase("e", 100));
  EXPECT_EQ(db_.size(), 0u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.expired_keys(), 2u);
}

TEST_F(DbTest, ExpiredKeyIsReinsertedFresh) {
  Set("k", "a value longer than fifteen bytes", 0, 10);
  bool inserted;
  Db::Iterator it = Insert("k", 20, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(it.value().ToString(), "");
  EXPECT_FALSE(it.value().HasFlag(kHasExpireFlag));
  EXPECT_EQ(db_.ExpireAt(it, "k", HashBytes("k")), 0);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.size(), 1u);
  EXPECT_EQ(db_.expired_keys(), 1u);
  EXPECT_EQ(db_.SumTtlMs(20), 0);

  // Before its deadline the key is found as it is, TTL included.
  Set("t", "v", 0, 100);
  it = Insert("t", 99, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(it.value().ToString(), "v");
  EXPECT_EQ(db_.ExpireAt(it, "t", HashBytes("t")), 100);
}

TEST_F(DbTest, PausedExpiryHidesDueKeysWithoutRemovingThem) {
  Set("due", "v", 0, 100);
  Set("later", "v", 0, 1000);
  PauseExpiryUntil(500);
  // Before the pause's end: the due key reads as missing, but neither lookups nor active expiry
  // remove it.
  EXPECT_EQ(Get("due", 200), "<missing>");
  EXPECT_EQ(Get("later", 200), "v");
  size_t examined = 0;
  EXPECT_EQ(db_.ExpireSome(200, 100, &examined), 0u);
  EXPECT_EQ(db_.size(), 2u);
  EXPECT_EQ(db_.expired_keys(), 0u);
  // Past it (or after UNPAUSE) expiry goes on.
  EXPECT_EQ(Get("due", 600), "<missing>");
  EXPECT_EQ(db_.size(), 1u);
  EXPECT_EQ(db_.expired_keys(), 1u);
  PauseExpiryUntil(0);
}

TEST_F(DbTest, ActiveExpiryRemovesOnlyDueKeys) {
  for (int i = 0; i < 100; ++i) Set("k" + std::to_string(i), "v", 0, 100 + i);
  Set("forever", "v", 0);
  EXPECT_EQ(db_.expires_count(), 100u);

  // Nothing is due: a whole pass looks at every key with a TTL once, and removes none.
  size_t examined = 0;
  EXPECT_EQ(db_.ExpireSome(99, 1000, &examined), 0u);
  EXPECT_EQ(examined, 100u);
  EXPECT_EQ(db_.size(), 101u);

  // The budget bounds the work (a step finishes the bucket it is in, so it may go a little over).
  size_t removed = db_.ExpireSome(149, 10, &examined);
  EXPECT_GE(examined, 10u);
  EXPECT_LT(examined, 100u);
  EXPECT_LE(removed, examined);
  EXPECT_EQ(db_.size(), 101u - removed);

  // Keys k0..k49 are due at 149; the others are not, and keys without a TTL are never looked at.
  removed += ExpireAll(149, 50 - removed);
  EXPECT_EQ(removed, 50u);
  EXPECT_EQ(db_.size(), 51u);
  EXPECT_EQ(db_.expires_count(), 50u);
  EXPECT_EQ(db_.expired_keys(), 50u);
  std::set<std::string> live = LiveKeys(149);
  EXPECT_EQ(live.size(), 51u);
  EXPECT_TRUE(live.count("forever"));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(live.count("k" + std::to_string(i)), i >= 50 ? 1u : 0u) << i;
  }
  // A later pass examines only the keys that still have a TTL.
  for (int round = 0; round < 100 && db_.expires_count() > 0; ++round) {
    db_.ExpireSome(10000, 16, &examined);
    EXPECT_LE(examined, 50u);
  }
  EXPECT_EQ(db_.size(), 1u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.expired_keys(), 100u);
  EXPECT_EQ(db_.ExpireSome(10000, 16, &examined), 0u);
  EXPECT_EQ(examined, 0u);
  EXPECT_EQ(Get("forever", 10000), "v");
}

TEST_F(DbTest, ForEachLiveSkipsExpiredKeysWithoutDeleting) {
  Set("a", "1", 0);
  Set("b", "2", 0, 50);
  Set("c", "3", 0, 500);
  EXPECT_EQ(LiveKeys(100), (std::set<std::string>{"a", "c"}));
  EXPECT_EQ(db_.size(), 3u);
  EXPECT_EQ(db_.expired_keys(), 0u);
  EXPECT_EQ(LiveKeys(0), (std::set<std::string>{"a", "b", "c"}));
}

TEST_F(DbTest, SetExpireChangesAndPersists) {
  Set("k", "v", 0, 100);
  SetExpire("k", 0, 200);
  EXPECT_EQ(ExpireAt("k", 0), 200);
  EXPECT_EQ(db_.expires_count(), 1u);
  EXPECT_EQ(db_.SumTtlMs(0), 200);
  size_t examined;
  EXPECT_EQ(db_.ExpireSome(150, 10, &examined), 0u);
  EXPECT_TRUE(Db::Found(Find("k", 150)));

  SetExpire("k", 0, 0);  // PERSIST
  EXPECT_EQ(ExpireAt("k", 0), 0);
  EXPECT_FALSE(Find("k", 0).value().HasFlag(kHasExpireFlag));
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.SumTtlMs(0), 0);
  EXPECT_EQ(db_.ExpireSome(1000, 10, &examined), 0u);
  EXPECT_TRUE(Db::Found(Find("k", 1000)));
  SetExpire("k", 1000, 0);  // clearing what is not set changes nothing
  EXPECT_EQ(db_.expires_count(), 0u);

  // Overwriting a value keeps the TTL (the flag travels with the cell) until it is cleared.
  SetExpire("k", 1000, 3000);
  Find("k", 1000).value().SetString("a new value, on the heap this time");
  EXPECT_EQ(ExpireAt("k", 1000), 3000);
  EXPECT_FALSE(Db::Found(Find("k", 3000)));
  EXPECT_EQ(db_.expires_count(), 0u);
}

TEST_F(DbTest, SetExpireKeepsThePrimeIteratorValid) {
  // Adding a TTL inserts into the expire table only (which grows and splits on the way): the
  // prime table iterator stays usable.
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "x" + std::to_string(i);
    bool inserted;
    Db::Iterator it = Insert(key, 0, &inserted);
    ASSERT_TRUE(inserted);
    db_.SetExpire(it, key, HashBytes(key), 10000 + i);
    it.value().SetString("value of " + key);
    ASSERT_EQ(db_.ExpireAt(it, key, HashBytes(key)), 10000 + i);
  }
  EXPECT_EQ(db_.expires_count(), 5000u);
  for (int i = 0; i < 5000; i += 97) {
    const std::string key = "x" + std::to_string(i);
    EXPECT_EQ(Get(key, 0), "value of " + key);
    EXPECT_EQ(ExpireAt(key, 0), 10000 + i);
  }
}

TEST_F(DbTest, SumTtlIsExactAndSaturates) {
  Set("a", "v", 0, 1000);
  Set("b", "v", 0, 3000);
  EXPECT_EQ(db_.SumTtlMs(500), 500 + 2500);
  SetExpire("b", 500, 2000);
  EXPECT_EQ(db_.SumTtlMs(500), 500 + 1500);
  EXPECT_TRUE(Erase("a", 500));
  EXPECT_EQ(db_.SumTtlMs(500), 1500);
  size_t examined;
  EXPECT_EQ(db_.ExpireSome(2500, 10, &examined), 1u);
  EXPECT_EQ(db_.SumTtlMs(2500), 0);
  // Keys past their deadline but not removed yet do not make the sum negative.
  Set("c", "v", 0, 100);
  EXPECT_EQ(db_.SumTtlMs(5000), 0);
  Erase("c", 0);
  // Deadlines whose sum overflows 64 bits: the running sum stays exact, the answer saturates.
  for (int i = 0; i < 1000; ++i) Set("k" + std::to_string(i), "v", 0, int64_t(1) << 60);
  EXPECT_EQ(db_.SumTtlMs(0), INT64_MAX);
  EXPECT_EQ(db_.SumTtlMs((int64_t(1) << 60) - 1), 1000);
  EXPECT_EQ(db_.SumTtlMs(int64_t(1) << 60), 0);
  // And it comes back exactly as they go.
  for (int i = 0; i < 999; ++i) EXPECT_TRUE(Erase("k" + std::to_string(i), 0));
  EXPECT_EQ(db_.SumTtlMs(0), int64_t(1) << 60);
  db_.Clear();
  EXPECT_EQ(db_.size(), 0u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_EQ(db_.SumTtlMs(0), 0);
}

TEST_F(DbTest, IntEncodedAndLongKeysAndValues) {
  const std::string long_key(200, 'k');
  const std::string long_value(5000, 'v');
  // Keys that look like integers (canonical or not), an empty key, binary bytes and a long key.
  const std::vector<std::string> keys = {"0",  "12345", "-9223372036854775808", "007",   "-0",
                                         "+1", "",      std::string("a\0b", 3), long_key};
  for (const std::string& key : keys) Set(key, "val:" + key, 0);
  EXPECT_EQ(db_.size(), keys.size());
  for (const std::string& key : keys) EXPECT_EQ(Get(key, 0), "val:" + key) << key;
  EXPECT_EQ(Get("7", 0), "<missing>");  // "007" is not 7
  EXPECT_EQ(Get("1", 0), "<missing>");  // "+1" is not 1
  EXPECT_EQ(Get("12345 ", 0), "<missing>");
  EXPECT_EQ(LiveKeys(0), std::set<std::string>(keys.begin(), keys.end()));

  // Values: a canonical int is int-encoded and reads back as the same bytes; others are not.
  Db::Iterator it = Find("12345", 0);
  it.value().SetString("-42");
  EXPECT_TRUE(it.value().IsInt());
  EXPECT_EQ(it.value().AsInt(), -42);
  EXPECT_EQ(Get("12345", 0), "-42");
  for (std::string_view not_int : {"01", " 1", "1 ", "+1", "-0", "1.0", "99999999999999999999"}) {
    it = Find("12345", 0);
    it.value().SetString(not_int);
    EXPECT_FALSE(it.value().IsInt()) << not_int;
    EXPECT_EQ(Get("12345", 0), not_int);
  }
  it = Find(long_key, 0);
  it.value().SetString(long_value);
  EXPECT_EQ(it.value().StringSize(), long_value.size());
  EXPECT_EQ(Get(long_key, 0), long_value);
  it.value().SetInt(7);
  EXPECT_EQ(Get(long_key, 0), "7");

  // TTLs on such keys: lazy and active expiry find them again from the expire table's key cells.
  SetExpire("12345", 0, 100);
  SetExpire(long_key, 0, 100);
  SetExpire("-0", 0, 100);
  SetExpire("", 0, 200);
  EXPECT_EQ(ExpireAt("12345", 0), 100);
  EXPECT_EQ(ExpireAt(long_key, 0), 100);
  EXPECT_EQ(ExpireAt("", 0), 200);
  EXPECT_EQ(ExpireAll(100, 3), 3u);
  EXPECT_EQ(db_.size(), keys.size() - 3);
  EXPECT_EQ(Get("12345", 100), "<missing>");
  EXPECT_EQ(Get(long_key, 100), "<missing>");
  EXPECT_EQ(Get("-0", 100), "<missing>");
  EXPECT_EQ(Get("", 150), "val:");
  EXPECT_EQ(Get("", 200), "<missing>");  // lazily
  EXPECT_EQ(db_.expired_keys(), 4u);
  EXPECT_EQ(db_.expires_count(), 0u);
  EXPECT_TRUE(Erase("-9223372036854775808", 0));
  EXPECT_TRUE(Erase(std::string("a\0b", 3), 0));
  EXPECT_EQ(db_.size(), keys.size() - 6);
}

TEST_F(DbTest, AppendAndSetRangeInPlace) {
  Set("k", "12", 0, 1000);
  Db::Iterator it = Find("k", 0);
  EXPECT_TRUE(it.value().IsInt());
  EXPECT_EQ(it.value().Append("3"), 3u);
  EXPECT_TRUE(it.value().IsInt());
  EXPECT_EQ(it.value().Append(std::string(40, 'x')), 43u);
  EXPECT_EQ(it.value().SetRange(50, "end"), 53u);
  EXPECT_EQ(Get("k", 0), "123" + std::string(40, 'x') + std::string(7, '\0') + "end");
  EXPECT_EQ(ExpireAt("k", 0), 1000);  // edits keep the TTL flag
}

// memcached's flags and CAS (McMeta): kept only for the keys given one, and dropped by every way
// a key is written or removed other than through it.
TEST_F(DbTest, McMetaIsDroppedByWritesAndRemovals) {
  auto give = [&](std::string_view key, uint32_t flags) {
    McMeta& m = db_.MutableMcMeta(key, HashBytes(key));
    m.flags = flags;
    m.cas = db_.NextCas();
    return m.cas;
  };
  auto has = [&](std::string_view key) { return db_.FindMcMeta(key, HashBytes(key)) != nullptr; };
  EXPECT_EQ(db_.mc_meta_count(), 0u);
  Set("a", "1", 0);
  EXPECT_EQ(db_.mc_meta_count(), 0u);  // RESP keys have no entry
  const uint64_t c1 = give("a", 7);
  EXPECT_EQ(db_.FindMcMeta("a", HashBytes("a"))->flags, 7u);
  EXPECT_GT(give("a", 7), c1);  // uniques only grow
  db_.NoteModified("a");        // a RESP write (multi-key commands, expiry)
  EXPECT_FALSE(has("a"));
  give("a", 1);
  db_.DropMcMeta("a", HashBytes("a"));  // a single-key RESP write (RunShardCommand)
  EXPECT_FALSE(has("a"));
  give("a", 1);
  EXPECT_TRUE(Erase("a", 0));
  EXPECT_FALSE(has("a"));
  Set("b", "2", 0);
  give("b", 1);
  db_.Store("b", HashBytes("b"), CompactValue::FromString("x"), 0, 0);
  EXPECT_FALSE(has("b"));
  give("b", 1);
  int64_t at;
  CompactValue v = db_.Take(Find("b", 0), "b", HashBytes("b"), &at);
  EXPECT_FALSE(has("b"));
  Set("c", "3", 0, 100);
  give("c", 1);
  EXPECT_FALSE(Db::Found(Find("c", 200)));  // lazy expiry
  EXPECT_FALSE(has("c"));
  Set("d", "4", 0);
  give("d", 1);
  db_.Clear();
  EXPECT_EQ(db_.mc_meta_count(), 0u);
}

}  // namespace
}  // namespace shardis::shard

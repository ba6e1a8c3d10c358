#include "core/dash_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/sanitizers.h"
#include "core/shard_heap.h"
#include "core/string_util.h"

namespace shardis::core {
namespace {

// Sanitizers slow the random-operation tests down ~10x; they run a quarter of the operations.
#if SHARDIS_ASAN || SHARDIS_TSAN
constexpr int kOpsScale = 4;
#else
constexpr int kOpsScale = 1;
#endif

struct StringPolicy {
  static uint64_t Hash(std::string_view s) { return absl::HashOf(ToAbsl(s)); }
  static bool Equal(const std::string& key, std::string_view probe) { return key == probe; }
};
using StringTable = DashTable<std::string, std::string, StringPolicy>;

// A 16-byte trivially copyable cell, as the shard will store.
struct Cell {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Cell&) const = default;
};
uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
struct CellPolicy {
  static uint64_t Hash(const Cell& c) { return Mix(c.lo ^ Mix(c.hi)); }
  static bool Equal(const Cell& key, const Cell& probe) { return key == probe; }
};
using CellTable = DashTable<Cell, Cell, CellPolicy>;
static_assert(sizeof(Cell) == 16 && std::is_trivially_copyable_v<Cell>);

std::string KeyOf(uint64_t n) { return "key:" + std::to_string(n); }

std::pair<StringTable::Iterator, bool> Upsert(StringTable& t, std::string_view key,
                                              std::string_view value) {
  auto res = t.FindOrInsert(StringPolicy::Hash(key), key, [&] { return std::string(key); });
  res.first.value() = std::string(value);
  return res;
}
StringTable::Iterator Lookup(StringTable& t, std::string_view key) {
  return t.Find(StringPolicy::Hash(key), key);
}

// Every entry, by a full scan from cursor 0; counts how often each key was visited.
template <typename Table, typename KeyFn>
auto ScanAll(Table& t, KeyFn key_of) {
  std::unordered_map<decltype(key_of(std::declval<typename Table::Iterator>())), int> seen;
  uint64_t cursor = 0;
  size_t steps = 0;
  do {
    cursor = t.Traverse(cursor, [&](typename Table::Iterator it) { ++seen[key_of(it)]; });
    EXPECT_LT(cursor, uint64_t(1) << Table::kCursorBits);
    ++steps;
  } while (cursor != 0);
  EXPECT_EQ(steps, std::max<size_t>(1, t.segment_count() * Table::kBucketsPerSegment));
  return seen;
}

TEST(DashTableTest, Basics) {
  StringTable t;
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.capacity(), 0u);
  EXPECT_EQ(t.memory_bytes(), 0u);
  EXPECT_TRUE(Lookup(t, "a") == t.end());
  t.Prefetch(StringPolicy::Hash("a"));
  t.PrefetchSlots(StringPolicy::Hash("a"));
  EXPECT_EQ(t.Traverse(0, [](auto) { FAIL(); }), 0u);

  auto [it, inserted] = Upsert(t, "a", "1");
  EXPECT_TRUE(inserted);
  EXPECT_EQ(it.key(), "a");
  EXPECT_EQ(it.value(), "1");
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.capacity(), StringTable::SlotsOfClass(0));
  EXPECT_EQ(t.segment_count(), 1u);
  EXPECT_GT(t.memory_bytes(), StringTable::SlotsOfClass(0) * (sizeof(std::string) * 2 + 1));

  auto [it2, inserted2] = Upsert(t, "a", "2");
  EXPECT_FALSE(inserted2);
  EXPECT_TRUE(it2 == it);
  EXPECT_EQ(Lookup(t, "a").value(), "2");
  EXPECT_TRUE(Lookup(t, "b") == t.end());

  auto it3 = t.Insert(StringPolicy::Hash("b"), "b", "3");
  EXPECT_EQ(it3.value(), "3");
  EXPECT_EQ(t.size(), 2u);

  t.Erase(Lookup(t, "a"));
  EXPECT_TRUE(Lookup(t, "a") == t.end());
  EXPECT_EQ(Lookup(t, "b").value(), "3");
  EXPECT_EQ(t.size(), 1u);

  StringTable moved(std::move(t));
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_EQ(Lookup(moved, "b").value(), "3");
  EXPECT_EQ(t.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from table is empty
  t = std::move(moved);
  EXPECT_EQ(Lookup(t, "b").value(), "3");

  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.memory_bytes(), 0u);
  EXPECT_TRUE(Lookup(t, "b") == t.end());
  Upsert(t, "c", "4");
  EXPECT_EQ(Lookup(t, "c").value(), "4");
}

// Random insert / overwrite / find / erase against std::unordered_map, growing through many splits
// and directory doublings (keyspace up to 1M) and then shrinking.
void RandomOpsWithStrings(uint32_t seed, uint64_t keyspace, int ops) {
  SCOPED_TRACE(testing::Message() << "seed " << seed << " keyspace " << keyspace);
  std::mt19937_64 rng(seed);
  StringTable t;
  std::unordered_map<std::string, std::string> ref;
  uint32_t max_depth = 0;
  for (int op = 0; op < ops; ++op) {
    // Three phases: insert-heavy growth, balanced churn, erase-heavy shrink.
    const int phase = op * 3 / ops;
    const int insert_pct = phase == 0 ? 70 : phase == 1 ? 40 : 15;
    const int erase_pct = phase == 0 ? 10 : phase == 1 ? 30 : 60;
    std::string key = KeyOf(rng() % keyspace);
    const uint64_t hash = StringPolicy::Hash(key);
    const int dice = int(rng() % 100);
    if (dice < insert_pct) {
      std::string value = std::to_string(rng());
      if (rng() % 8 == 0 && !ref.count(key)) {
        t.Insert(hash, key, value);  // the known-absent path
      } else {
        auto [it, inserted] = Upsert(t, key, value);
        ASSERT_EQ(inserted, ref.count(key) == 0) << key;
        ASSERT_EQ(it.key(), key);
      }
      ref[key] = value;
    } else if (dice < insert_pct + erase_pct) {
      auto it = t.Find(hash, std::string_view(key));
      auto rit = ref.find(key);
      ASSERT_EQ(it == t.end(), rit == ref.end()) << key;
      if (rit != ref.end()) {
        ASSERT_EQ(it.value(), rit->second);
        t.Erase(it);
        ref.erase(rit);
        ASSERT_TRUE(t.Find(hash, std::string_view(key)) == t.end());
      }
    } else {
      if (dice % 2) t.Prefetch(hash);
      auto it = t.Find(hash, std::string_view(key));
      auto rit = ref.find(key);
      ASSERT_EQ(it == t.end(), rit == ref.end()) << key;
      if (rit != ref.end()) {
        ASSERT_EQ(it.value(), rit->second);
      }
    }
    ASSERT_EQ(t.size(), ref.size());
    max_depth = std::max(max_depth, t.global_depth());
    if ((op + 1) % (ops / 4) == 0) {  // a full comparison now and then
      auto seen = ScanAll(t, [](StringTable::Iterator it) { return it.key(); });
      ASSERT_EQ(seen.size(), ref.size());
      for (const auto& [k, v] : ref) {
        ASSERT_EQ(seen[k], 1) << k;  // no split between steps: exactly once
        ASSERT_EQ(Lookup(t, k).value(), v);
      }
    }
  }
  if (keyspace >= 100'000) {
    EXPECT_GE(max_depth, 5u);
  }
}

TEST(DashTableTest, RandomOpsStrings) {
  RandomOpsWithStrings(1, 1'000'000, 1'200'000 / kOpsScale);
  RandomOpsWithStrings(2, 100'000, 600'000 / kOpsScale);
  RandomOpsWithStrings(3, 3'000, 200'000 / kOpsScale);  // one or two segments, many tombstones
}

TEST(DashTableTest, RandomOpsCells) {
  for (uint32_t seed : {11u, 12u}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    CellTable t;
    std::unordered_map<uint64_t, uint64_t> ref;  // key.lo -> value.lo (key.hi = ~key.lo)
    const int ops = 600'000 / kOpsScale;
    const uint64_t keyspace = seed == 11 ? 400'000 : 20'000;
    for (int op = 0; op < ops; ++op) {
      const uint64_t k = rng() % keyspace;
      const Cell key{k, ~k};
      const uint64_t hash = CellPolicy::Hash(key);
      const int dice = int(rng() % 10);
      if (dice < 5) {
        auto [it, inserted] = t.FindOrInsert(hash, key, [&] { return key; });
        ASSERT_EQ(inserted, ref.count(k) == 0);
        if (inserted) {
          EXPECT_EQ(it.value(), Cell{});  // value-initialised
        }
        it.value() = Cell{op + 0ull, 0};
        ref[k] = op;
      } else if (dice < 8) {
        auto it = t.Find(hash, key);
        ASSERT_EQ(it == t.end(), ref.count(k) == 0);
        if (it != t.end()) {
          t.Erase(it);
          ref.erase(k);
        }
      } else {
        auto it = t.Find(hash, key);
        ASSERT_EQ(it == t.end(), ref.count(k) == 0);
        if (it != t.end()) {
          ASSERT_EQ(it.value().lo, ref[k]);
        }
      }
    }
    ASSERT_EQ(t.size(), ref.size());
    for (const auto& [k, v] : ref) {
      auto it = t.Find(CellPolicy::Hash(Cell{k, ~k}), Cell{k, ~k});
      ASSERT_NE(it, t.end());
      ASSERT_EQ(it.value().lo, v);
    }
  }
}

// Slots of a Policy that declares kTriviallyRelocatable move by memcpy and are destroyed once.
struct OwnerPolicy {
  static constexpr bool kTriviallyRelocatable = true;  // unique_ptr is, in practice
  static uint64_t Hash(uint64_t k) { return Mix(k); }
  static bool Equal(uint64_t key, uint64_t probe) { return key == probe; }
};
TEST(DashTableTest, RelocatableValuesSurviveSplits) {
  DashTable<uint64_t, std::unique_ptr<uint64_t>, OwnerPolicy> t;
  for (uint64_t k = 0; k < 50'000; ++k) {
    auto [it, inserted] = t.FindOrInsert(Mix(k), k, [&] { return k; });
    ASSERT_TRUE(inserted);
    it.value() = std::make_unique<uint64_t>(k * 3);
  }
  EXPECT_GT(t.segment_count(), 16u);
  for (uint64_t k = 0; k < 50'000; k += 2) t.Erase(t.Find(Mix(k), k));
  for (uint64_t k = 1; k < 50'000; k += 2) ASSERT_EQ(*t.Find(Mix(k), k).value(), k * 3);
  // The destructor frees the rest (ASan's leak check would notice otherwise).
}

// The segment classes are a ladder of growing sizes that fit allocator blocks of 20-32 KiB.
TEST(DashTableTest, SegmentClasses) {
  for (uint32_t c = 0; c < StringTable::kSegmentClasses; ++c) {
    SCOPED_TRACE(c);
    EXPECT_EQ(StringTable::SlotsOfClass(c), StringTable::GroupsOfClass(c) * 16);
    EXPECT_EQ(StringTable::MaxUsedOfClass(c), StringTable::SlotsOfClass(c) / 8 * 7);
    if (c > 0) {
      // Each step grows by at most 1.25x, and leaves room: the entries at the threshold fill at
      // most 8/9 of the next class's threshold.
      EXPECT_GT(StringTable::GroupsOfClass(c), StringTable::GroupsOfClass(c - 1));
      EXPECT_LE(StringTable::GroupsOfClass(c) * 4, StringTable::GroupsOfClass(c - 1) * 5);
      EXPECT_LE(StringTable::MaxUsedOfClass(c - 1) * 9, StringTable::MaxUsedOfClass(c) * 8);
    }
  }
  // The halves of a full segment of the top class start in the smallest, at most 7/8 of its
  // threshold; the split grows the memory by ~1.25x.
  constexpr uint32_t kTop = StringTable::kSegmentClasses - 1;
  EXPECT_LE(StringTable::MaxUsedOfClass(kTop) / 2 * 8, StringTable::MaxUsedOfClass(0) * 7);
  EXPECT_LE(StringTable::GroupsOfClass(0) * 2 * 10, StringTable::GroupsOfClass(kTop) * 13);
  // 32-byte slots, as the shard stores: 37, 45, 53 and 60 groups.
  EXPECT_EQ(CellTable::GroupsOfClass(0), 37u);
  EXPECT_EQ(CellTable::GroupsOfClass(1), 45u);
  EXPECT_EQ(CellTable::GroupsOfClass(2), 53u);
  EXPECT_EQ(CellTable::GroupsOfClass(kTop), 60u);
}

// A segment fills each class to the threshold, is rebuilt at the next one, and splits from the
// top one into two halves of the smallest; entries survive each step.
TEST(DashTableTest, GrowthThresholds) {
  StringTable t;
  uint64_t n = 0;
  auto all_present = [&] {
    for (uint64_t i = 0; i < n; ++i) {
      if (Lookup(t, KeyOf(i)) == t.end()) return false;
    }
    return true;
  };
  for (uint32_t c = 0; c < StringTable::kSegmentClasses; ++c) {
    SCOPED_TRACE(c);
    for (; n < StringTable::MaxUsedOfClass(c); ++n) ASSERT_TRUE(Upsert(t, KeyOf(n), "v").second);
    // Exactly at the threshold: still this class, nothing moved.
    EXPECT_EQ(t.segment_count(), 1u);
    EXPECT_EQ(t.capacity(), StringTable::SlotsOfClass(c));
    // An overwrite at the threshold does not grow either.
    EXPECT_FALSE(Upsert(t, KeyOf(0), "w").second);
    EXPECT_EQ(t.capacity(), StringTable::SlotsOfClass(c));
    EXPECT_EQ(t.global_depth(), 0u);
    ASSERT_TRUE(all_present());
  }
  // One more key: the top class splits (and the directory doubles from 1 to 2 entries) into two
  // segments of the smallest class, or one of the next when the halves are uneven.
  const size_t memory = t.memory_bytes();
  ASSERT_TRUE(Upsert(t, KeyOf(n++), "v").second);
  EXPECT_EQ(t.segment_count(), 2u);
  EXPECT_EQ(t.global_depth(), 1u);
  EXPECT_GE(t.capacity(), 2 * StringTable::SlotsOfClass(0));
  EXPECT_LE(t.capacity(), StringTable::SlotsOfClass(0) + StringTable::SlotsOfClass(1));
  EXPECT_GT(t.memory_bytes(), memory);
  EXPECT_LT(t.memory_bytes(), memory * 3 / 2);
  ASSERT_TRUE(all_present());
  EXPECT_EQ(Lookup(t, KeyOf(0)).value(), "w");
}

// Reserve sizes an empty table at once: filling it with as many keys splits no segment and grows
// almost none, every key is found, and a full SCAN visits each once.
TEST(DashTableTest, ReserveSizesAnEmptyTable) {
  constexpr uint64_t kKeys = 200000 / kOpsScale;
  StringTable t;
  t.Reserve(kKeys);
  const size_t segments = t.segment_count();
  const uint32_t depth = t.global_depth();
  EXPECT_EQ(segments, size_t(1) << depth);
  EXPECT_GT(t.capacity(), kKeys);
  EXPECT_LT(t.capacity(), kKeys * 2);  // not wasteful: above half full once filled
  for (uint64_t i = 0; i < kKeys; ++i) ASSERT_TRUE(Upsert(t, KeyOf(i), "v").second);
  EXPECT_EQ(t.segment_count(), segments);
  EXPECT_EQ(t.global_depth(), depth);
  for (uint64_t i = 0; i < kKeys; i += 7) ASSERT_NE(Lookup(t, KeyOf(i)), t.end());
  auto seen = ScanAll(t, [](StringTable::Iterator it) { return it.key(); });
  EXPECT_EQ(seen.size(), kKeys);
  // A table that has segments is left as is; an empty one with none stays empty for 0.
  t.Reserve(kKeys * 10);
  EXPECT_EQ(t.segment_count(), segments);
  StringTable empty;
  empty.Reserve(0);
  EXPECT_EQ(empty.segment_count(), 0u);
  // A small reservation is one segment, and the table grows from it as usual.
  StringTable small;
  small.Reserve(10);
  EXPECT_EQ(small.segment_count(), 1u);
  EXPECT_EQ(small.global_depth(), 0u);
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(Upsert(small, KeyOf(i), "v").second);
  EXPECT_EQ(small.size(), 5000u);
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_NE(Lookup(small, KeyOf(i)), small.end());
}

TEST(DashTableTest, TombstonesRehashInPlace) {
  StringTable t;
  const uint64_t full = StringTable::MaxUsedOfClass(0);
  for (uint64_t n = 0; n < full; ++n) Upsert(t, KeyOf(n), "v");
  // Erase half, then insert up to 3/4 of the threshold: every growth happens with at most that
  // many live entries, so the segment is rebuilt at its class (tombstones dropped) rather than
  // resized.
  const uint64_t erased = full / 2, added = full / 4 * 3 - (full - erased);
  for (uint64_t n = 0; n < erased; ++n) t.Erase(Lookup(t, KeyOf(n)));
  for (uint64_t n = full; n < full + added; ++n) ASSERT_TRUE(Upsert(t, KeyOf(n), "v").second);
  EXPECT_EQ(t.capacity(), StringTable::SlotsOfClass(0));
  EXPECT_EQ(t.size(), full / 4 * 3);
  // Churn with a constant size never grows.
  std::mt19937_64 rng(5);
  std::vector<uint64_t> live;
  for (uint64_t n = erased; n < full + added; ++n) live.push_back(n);
  uint64_t next = full + added;
  for (int i = 0; i < 100'000 / kOpsScale; ++i) {
    size_t victim = rng() % live.size();
    t.Erase(Lookup(t, KeyOf(live[victim])));
    live[victim] = next;
    ASSERT_TRUE(Upsert(t, KeyOf(next++), "v").second);
  }
  EXPECT_EQ(t.capacity(), StringTable::SlotsOfClass(0));
  for (uint64_t k : live) ASSERT_NE(Lookup(t, KeyOf(k)), t.end());
}

// A table whose keys are their own hashes, to place entries: PosKey(p, i) is the i-th key at
// position p (hash bits 25..14: bucket p >> 6, home group p * groups / 4096), all in one segment
// while the table has one.
struct HashIsKeyPolicy {
  static uint64_t Hash(uint64_t k) { return k; }
  static bool Equal(uint64_t key, uint64_t probe) { return key == probe; }
};
using PosTable = DashTable<uint64_t, uint64_t, HashIsKeyPolicy>;
uint64_t PosKey(uint32_t position, uint64_t i) {
  return uint64_t(position) << 14 | (i & 0x7F) << 7 | (i >> 7) << 26;
}
std::pair<PosTable::Iterator, bool> Upsert(PosTable& t, uint64_t key) {
  return t.FindOrInsert(key, key, [&] { return key; });
}

// A segment emptied by erases is rebuilt at a smaller class when its tombstones bring it to the
// threshold: the smallest class that its live entries fill to at most 3/4 of the threshold.
TEST(DashTableTest, TombstonesShrinkSegment) {
  PosTable t;
  constexpr uint32_t kTop = PosTable::kSegmentClasses - 1;
  // One probe run from group 0, every group of it full: its erases leave tombstones.
  const uint64_t full = PosTable::MaxUsedOfClass(kTop);
  for (uint64_t i = 0; i < full; ++i) ASSERT_TRUE(Upsert(t, PosKey(0, i)).second);
  ASSERT_EQ(t.capacity(), PosTable::SlotsOfClass(kTop));
  const size_t memory = t.memory_bytes();
  std::vector<uint64_t> live;
  for (uint64_t i = 0; i < full; ++i) {
    if (i % 10 == 0) {
      live.push_back(PosKey(0, i));
    } else {
      t.Erase(t.Find(PosKey(0, i), PosKey(0, i)));
    }
  }
  // Keys homed in the last group take empty slots, and soon reach the threshold.
  uint64_t next = 0;
  while (t.capacity() == PosTable::SlotsOfClass(kTop) && next < full) {
    live.push_back(PosKey(4095, next++));
    ASSERT_TRUE(Upsert(t, live.back()).second);
  }
  EXPECT_EQ(t.segment_count(), 1u);
  EXPECT_EQ(t.capacity(), PosTable::SlotsOfClass(0)) << next;
  EXPECT_LT(t.memory_bytes(), memory);
  EXPECT_EQ(t.size(), live.size());
  for (uint64_t k : live) ASSERT_NE(t.Find(k, k), t.end());
}

// A bucket's entries may have their homes in several groups and its probe run may wrap around the
// end of the segment; Bucket::ForEach and the scan still find each entry once, in every class.
TEST(DashTableTest, BucketRunsAcrossGroupsAndWrap) {
  PosTable t;
  std::vector<uint64_t> keys;
  // 40 keys at each of four positions of bucket 63 (homed in the last two groups), 30 more at
  // the last position: 190 entries, so the run wraps to group 0. Then keys at random positions of
  // the other buckets, up to the threshold of the top class.
  for (uint32_t p = 4032; p < 4096; p += 16) {
    for (uint64_t i = 0; i < 40; ++i) keys.push_back(PosKey(p, i));
  }
  for (uint64_t i = 40; i < 70; ++i) keys.push_back(PosKey(4095, i));
  std::mt19937_64 rng(8);
  while (keys.size() < PosTable::MaxUsedOfClass(PosTable::kSegmentClasses - 1)) {
    keys.push_back(PosKey(uint32_t(rng() % 4032), 1000 + keys.size()));
  }
  size_t checked_capacity = 0;
  for (size_t n = 0; n < keys.size(); ++n) {
    ASSERT_TRUE(Upsert(t, keys[n]).second);
    if (t.capacity() == checked_capacity || n + 1 < 190) continue;
    checked_capacity = t.capacity();  // a new class: check once
    SCOPED_TRACE(testing::Message() << n + 1 << " keys, " << t.capacity() << " slots");
    ASSERT_EQ(t.segment_count(), 1u);
    std::unordered_map<uint64_t, int> in_last;
    t.BucketOf(PosKey(4095, 0)).ForEach([&](PosTable::Iterator it) { ++in_last[it.key()]; });
    EXPECT_EQ(in_last.size(), 190u);
    for (size_t k = 0; k < 190; ++k) EXPECT_EQ(in_last[keys[k]], 1);
    auto seen = ScanAll(t, [](PosTable::Iterator it) { return it.key(); });
    EXPECT_EQ(seen.size(), n + 1);
    for (size_t k = 0; k <= n; ++k) ASSERT_EQ(seen[keys[k]], 1) << k;
  }
  EXPECT_EQ(checked_capacity, PosTable::SlotsOfClass(PosTable::kSegmentClasses - 1));
}

// Gives every bucket its own version (its step number in a scan) and returns the version of each
// of `keys`.
std::unordered_map<std::string, uint64_t> VersionEveryBucket(StringTable& t,
                                                             const std::vector<std::string>& keys) {
  uint64_t cursor = 0, step = 100;
  do {
    cursor = t.TraverseBuckets(cursor, [&](const StringTable::Bucket& b) { b.set_version(step); });
    ++step;
  } while (cursor);
  std::unordered_map<std::string, uint64_t> version_of;
  for (const std::string& k : keys) {
    version_of[k] = t.BucketVersion(Lookup(t, k));
    EXPECT_EQ(t.BucketOf(StringPolicy::Hash(k)).version(), version_of[k]) << k;
  }
  return version_of;
}

// Across every resize (each class in turn) and the splits that follow: a scan in progress visits
// each stable key once, every key stays findable, and each bucket keeps its version.
TEST(DashTableTest, ScanAndVersionsAcrossEveryResize) {
  StringTable t;
  std::vector<std::string> stable;
  for (uint64_t n = 0; n < 100; ++n) {
    stable.push_back("stable:" + std::to_string(n));
    Upsert(t, stable.back(), "s");
  }
  std::unordered_map<std::string, uint64_t> version_of = VersionEveryBucket(t, stable);

  std::unordered_map<std::string, int> seen;
  std::vector<size_t> capacities = {t.capacity()};
  uint64_t next = 0;
  uint64_t cursor = 0;
  do {
    cursor = t.Traverse(cursor, [&](StringTable::Iterator it) { ++seen[it.key()]; });
    for (int i = 0; i < 16; ++i) {
      Upsert(t, KeyOf(next++), "v");
      if (t.capacity() == capacities.back()) continue;
      capacities.push_back(t.capacity());
      for (const std::string& k : stable) {
        auto it = Lookup(t, k);
        ASSERT_NE(it, t.end()) << k;
        ASSERT_EQ(t.BucketVersion(it), version_of[k]) << k;
      }
      for (uint64_t n = 0; n < next; ++n) ASSERT_NE(Lookup(t, KeyOf(n)), t.end());
    }
  } while (cursor != 0);
  for (const std::string& k : stable) EXPECT_EQ(seen[k], 1) << k;
  for (const auto& [k, count] : seen) EXPECT_EQ(count, 1) << k;
  // The scan saw the segment through every class, then split.
  ASSERT_GE(capacities.size(), StringTable::kSegmentClasses + 1);
  for (uint32_t c = 0; c < StringTable::kSegmentClasses; ++c) {
    EXPECT_EQ(capacities[c], StringTable::SlotsOfClass(c));
  }
  EXPECT_GE(t.segment_count(), 2u);
}

TEST(DashTableTest, TraverseFullScan) {
  CellTable t;
  EXPECT_EQ(t.Traverse(0, [](auto) {}), 0u);
  for (uint64_t k = 0; k < 100'000; ++k)
    t.FindOrInsert(CellPolicy::Hash({k, 0}), Cell{k, 0}, [&] { return Cell{k, 0}; });
  auto seen = ScanAll(t, [](CellTable::Iterator it) { return it.key().lo; });
  ASSERT_EQ(seen.size(), 100'000u);
  for (const auto& [k, count] : seen) ASSERT_EQ(count, 1) << k;
  // An invalid cursor (group out of range) ends the scan.
  EXPECT_EQ(t.Traverse(~uint64_t(0), [](auto) {}), 0u);
}

TEST(DashTableTest, TraverseMayEraseVisitedEntries) {
  StringTable t;
  for (uint64_t n = 0; n < 20'000; ++n) Upsert(t, KeyOf(n), n % 2 ? "odd" : "even");
  uint64_t cursor = 0;
  do {
    cursor = t.Traverse(cursor, [&](StringTable::Iterator it) {
      if (it.value() == "odd") t.Erase(it);
    });
  } while (cursor);
  EXPECT_EQ(t.size(), 10'000u);
  for (uint64_t n = 0; n < 20'000; ++n) EXPECT_EQ(Lookup(t, KeyOf(n)) == t.end(), n % 2 == 1);
}

// The SCAN guarantee: a key present for the whole scan is returned, even when inserts between the
// steps split segments (and double the directory) many times and other keys are erased (leaving
// tombstones and causing in-place rehashes).
void ScanUnderChurn(uint32_t seed, uint64_t stable_keys, int inserts_per_step,
                    int erases_per_step) {
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  StringTable t;
  for (uint64_t n = 0; n < stable_keys; ++n) Upsert(t, "stable:" + std::to_string(n), "s");
  std::vector<std::string> volatile_keys;
  uint64_t next = 0;
  auto add_volatile = [&] {
    volatile_keys.push_back("volatile:" + std::to_string(next++));
    Upsert(t, volatile_keys.back(), "v");
  };
  for (uint64_t n = 0; n < stable_keys; ++n) add_volatile();
  const size_t segments_before = t.segment_count();
  const uint32_t depth_before = t.global_depth();

  std::unordered_map<std::string, int> seen;
  uint64_t cursor = 0;
  size_t steps = 0;
  do {
    cursor = t.Traverse(cursor, [&](StringTable::Iterator it) { ++seen[it.key()]; });
    for (int i = 0; i < inserts_per_step; ++i) add_volatile();
    for (int i = 0; i < erases_per_step && !volatile_keys.empty(); ++i) {
      size_t victim = rng() % volatile_keys.size();
      t.Erase(Lookup(t, volatile_keys[victim]));
      volatile_keys[victim] = volatile_keys.back();
      volatile_keys.pop_back();
    }
    ++steps;
  } while (cursor != 0);

  // Every stable key, and (splits only refine the partition the scan walks) exactly once.
  for (uint64_t n = 0; n < stable_keys; ++n) {
    ASSERT_EQ(seen["stable:" + std::to_string(n)], 1) << n;
  }
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << key;
  // The scan ran while the table grew several-fold.
  EXPECT_GE(t.segment_count(), 4 * segments_before) << steps << " steps";
  EXPECT_GE(t.global_depth(), depth_before + 2);
}

// The table grows by (inserts - erases) / (entries per segment) per step, compounded over the 64
// passes of a scan (one per bucket): with 64-byte slots a segment holds ~200-400 entries.
TEST(DashTableTest, TraverseNeverMissesAcrossSplits) {
  ScanUnderChurn(1, 5'000 / kOpsScale, 20, 7);
  ScanUnderChurn(2, 12'000 / kOpsScale, 15, 3);
  ScanUnderChurn(3, 500, 70, 50);  // from a single segment
}

TEST(DashTableTest, BucketVersionsSurviveSplits) {
  StringTable t;
  t.set_new_bucket_version(7);
  Upsert(t, "first", "v");
  EXPECT_EQ(t.BucketVersion(Lookup(t, "first")), 7u);
  EXPECT_EQ(t.BucketOf(StringPolicy::Hash("other")).version(), 7u);
  EXPECT_FALSE(StringTable().BucketOf(StringPolicy::Hash("x")).valid());

  std::vector<std::string> keys;
  for (uint64_t n = 0; n < 10'000; ++n) {
    keys.push_back(KeyOf(n));
    Upsert(t, keys.back(), "v");
  }
  std::unordered_map<std::string, uint64_t> version_of = VersionEveryBucket(t, keys);
  const size_t segments = t.segment_count();
  for (uint64_t n = 10'000; n < 200'000; ++n) Upsert(t, KeyOf(n), "v");
  ASSERT_GE(t.segment_count(), 8 * segments);
  // Each key's bucket was divided between split siblings; both halves kept its version.
  for (const std::string& k : keys) ASSERT_EQ(t.BucketVersion(Lookup(t, k)), version_of[k]) << k;
}

// What a snapshot on bucket versions writes: each bucket below the snapshot's version once, then
// stamped with it (a key met twice is a duplicate).
struct SnapshotWriter {
  explicit SnapshotWriter(uint64_t snap) : snap(snap) {}
  void Serialise(const StringTable::Bucket& b) {
    if (b.version() >= snap) return;
    b.ForEach(
        [&](StringTable::Iterator it) { duplicates += !out.emplace(it.key(), it.value()).second; });
    b.set_version(snap);
  }
  uint64_t snap;
  std::unordered_map<std::string, std::string> out;
  int duplicates = 0;
};

// A fork-free snapshot built on bucket versions, as the persistence code will do it: the result is
// exactly the table at the snapshot's start, although writes, erases and splits run during it.
TEST(DashTableTest, VersionedSnapshotIsPointInTime) {
  std::mt19937_64 rng(9);
  StringTable t;
  std::unordered_map<std::string, std::string> at_start;
  for (uint64_t n = 0; n < 30'000; ++n) {
    std::string v = std::to_string(rng());
    Upsert(t, KeyOf(n), v);
    at_start[KeyOf(n)] = v;
  }
  const uint64_t snap = 1;  // buckets at version < snap are not serialised yet
  SnapshotWriter writer(snap);
  auto serialise = [&](const StringTable::Bucket& b) { writer.Serialise(b); };
  uint64_t next = 30'000;
  uint64_t cursor = 0;
  do {
    cursor = t.TraverseBuckets(cursor, serialise);
    for (int i = 0; i < 30; ++i) {
      const int dice = int(rng() % 3);
      std::string key = KeyOf(dice == 0 ? next++ : rng() % next);
      const uint64_t hash = StringPolicy::Hash(key);
      auto it = t.Find(hash, std::string_view(key));
      if (dice == 2 && it != t.end()) {
        serialise(t.BucketOf(it));  // before the write changes the bucket
        t.Erase(it);
      } else {
        serialise(t.BucketOf(hash));  // the bucket the key is (or will be) in
        Upsert(t, key, "changed");
      }
    }
  } while (cursor);
  EXPECT_EQ(writer.duplicates, 0);
  EXPECT_EQ(writer.out, at_start);
  EXPECT_GT(next, 30'000u + 10'000);
}

// A table whose Policy asks for access clocks: 3 bytes per slot beside the control bytes, which
// start at 0 on insert and follow their entry through resizes, splits and rehashes in place.
struct ClockCellPolicy : CellPolicy {
  static constexpr bool kAccessClock = true;
};
using ClockCellTable = DashTable<Cell, Cell, ClockCellPolicy>;

TEST(DashTableTest, AccessClocksFollowTheirEntries) {
  // 32-byte slots and 3 clock bytes: 34, 41, 48 and 55 groups in the same blocks.
  EXPECT_EQ(ClockCellTable::GroupsOfClass(0), 34u);
  EXPECT_EQ(ClockCellTable::GroupsOfClass(1), 41u);
  EXPECT_EQ(ClockCellTable::GroupsOfClass(2), 48u);
  EXPECT_EQ(ClockCellTable::GroupsOfClass(3), 55u);
  ClockCellTable t;
  auto clock_of = [](uint64_t i) { return uint32_t(Mix(i) & dash_internal::kAccessClockMask); };
  constexpr uint64_t kN = 20'000;
  for (uint64_t i = 0; i < kN; ++i) {
    const Cell key{i, 0};
    auto [it, inserted] = t.FindOrInsert(CellPolicy::Hash(key), key, [&] { return key; });
    ASSERT_TRUE(inserted);
    EXPECT_EQ(it.access_clock(), 0u);
    it.set_access_clock(clock_of(i));
    if (i % 3 == 0 && i > 0) {  // erases make tombstones, so some rebuilds are in place
      const Cell gone{i - 1, 0};
      t.Erase(t.Find(CellPolicy::Hash(gone), gone));
    }
  }
  EXPECT_GT(t.segment_count(), 8u);
  for (uint64_t i = 0; i < kN; ++i) {
    const Cell key{i, 0};
    auto it = t.Find(CellPolicy::Hash(key), key);
    if (i % 3 == 2 && i + 1 < kN) {
      EXPECT_TRUE(it == t.end());
      continue;
    }
    ASSERT_FALSE(it == t.end()) << i;
    EXPECT_EQ(it.access_clock(), clock_of(i)) << i;
  }
}


// ShrinkStep until a pass over the whole directory changes nothing; checks that no step moved
// much more than its budget (a merge in progress finishes: at most one top-class segment more).
template <typename Table>
void ShrinkFully(Table& t, size_t max_segments = 64, size_t max_moves = 4096) {
  for (int round = 0; round < 100; ++round) {
    const size_t segments = t.segment_count();
    size_t moved = 0;
    const size_t steps = (size_t(1) << t.global_depth()) / max_segments + 2;
    for (size_t i = 0; i < steps; ++i) {
      const size_t m = t.ShrinkStep(max_segments, max_moves);
      EXPECT_LE(m, max_moves + 2 * Table::SlotsOfClass(Table::kSegmentClasses - 1));
      moved += m;
    }
    if (moved == 0 && t.segment_count() == segments) return;
  }
  ADD_FAILURE() << "ShrinkStep never settled";
}

// After 90% of the keys go (as after a mass expiry), the segments merge, the directory halves and
// the table's memory per remaining key comes back to about what a table filled to that size has.
TEST(DashTableTest, ShrinksAfterMostKeysAreErased) {
  CellTable t;
  constexpr uint64_t kN = 400'000 / kOpsScale;
  auto insert = [&t](uint64_t k) {
    const Cell key{k, 0};
    t.FindOrInsert(CellPolicy::Hash(key), key, [&] { return key; }).first.value() = Cell{k, 1};
  };
  for (uint64_t k = 0; k < kN; ++k) insert(k);
  const size_t full_bytes = t.memory_bytes();
  const uint32_t full_depth = t.global_depth();
  // A table more than half full is left alone.
  EXPECT_EQ(t.ShrinkStep(1 << 20, 1 << 20), 0u);
  EXPECT_EQ(t.memory_bytes(), full_bytes);

  for (uint64_t k = 0; k < kN; ++k) {
    if (k % 10 == 0) continue;
    t.Erase(t.Find(CellPolicy::Hash({k, 0}), Cell{k, 0}));
  }
  EXPECT_EQ(t.memory_bytes(), full_bytes);  // erases alone give nothing back
  ShrinkFully(t);
  EXPECT_EQ(t.size(), kN / 10);
  EXPECT_LT(t.global_depth(), full_depth);
  // Filled from empty, a table of this size holds ~42 bytes per entry; shrunk, at most 2x that.
  EXPECT_LT(t.memory_bytes(), full_bytes / 10 * 2);
  EXPECT_GE(double(t.size()) / double(t.capacity()), 0.3);
  for (uint64_t k = 0; k < kN; ++k) {
    auto it = t.Find(CellPolicy::Hash({k, 0}), Cell{k, 0});
    ASSERT_EQ(it == t.end(), k % 10 != 0) << k;
    if (k % 10 == 0) {
      ASSERT_EQ(it.value(), (Cell{k, 1})) << k;
    }
  }
  // It grows again as before.
  for (uint64_t k = kN; k < 2 * kN; ++k) insert(k);
  EXPECT_EQ(t.size(), kN + kN / 10);
  auto seen = ScanAll(t, [](CellTable::Iterator it) { return it.key().lo; });
  EXPECT_EQ(seen.size(), t.size());
}

TEST(DashTableTest, ShrinkFreesAnEmptyTable) {
  StringTable t;
  t.set_new_bucket_version(3);
  for (uint64_t n = 0; n < 5'000; ++n) Upsert(t, KeyOf(n), "v");
  for (uint64_t n = 0; n < 5'000; ++n) t.Erase(Lookup(t, KeyOf(n)));
  EXPECT_GT(t.memory_bytes(), 0u);
  t.ShrinkStep(1, 1);
  EXPECT_EQ(t.segment_count(), 0u);
  EXPECT_EQ(t.memory_bytes(), 0u);
  Upsert(t, "again", "v");  // new segments keep the version set for them
  EXPECT_EQ(t.BucketVersion(Lookup(t, "again")), 3u);
}

// A table being filled is not shrunk, even under half full: a Reserve for a snapshot being loaded
// keeps its segments while the entries come; once the table stops growing, it may shrink.
TEST(DashTableTest, ShrinkLeavesAGrowingTableAlone) {
  CellTable t;
  t.Reserve(100'000);
  const size_t segments = t.segment_count();
  EXPECT_EQ(t.ShrinkStep(1 << 20, 1 << 20), 0u);
  for (uint64_t k = 0; k < 20'000; ++k) {
    const Cell key{k, 0};
    t.FindOrInsert(CellPolicy::Hash(key), key, [&] { return key; });
    if (k % 1'000 == 999) t.ShrinkStep(1 << 20, 1 << 20);
  }
  EXPECT_EQ(t.segment_count(), segments);
  ShrinkFully(t);
  EXPECT_LT(t.segment_count(), segments);
  EXPECT_EQ(t.size(), 20'000u);
}

// The SCAN guarantee while the table shrinks: a key present for the whole scan is returned at
// least once (a merge may return keys again: the cursor's position may fall inside the merged
// segment, whose whole bucket is then visited).
TEST(DashTableTest, TraverseNeverMissesWhileShrinking) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    StringTable t;
    const uint64_t stable = 3'000 / kOpsScale;
    for (uint64_t n = 0; n < stable; ++n) Upsert(t, "stable:" + std::to_string(n), "s");
    std::vector<std::string> transient;
    for (uint64_t n = 0; n < 40 * stable; ++n) {
      transient.push_back("transient:" + std::to_string(n));
      Upsert(t, transient.back(), "t");
    }
    const size_t segments_before = t.segment_count();
    std::unordered_map<std::string, int> seen;
    uint64_t cursor = 0;
    do {
      cursor = t.Traverse(cursor, [&](StringTable::Iterator it) { ++seen[it.key()]; });
      for (int i = 0; i < 200 && !transient.empty(); ++i) {
        const size_t victim = rng() % transient.size();
        t.Erase(Lookup(t, transient[victim]));
        transient[victim] = transient.back();
        transient.pop_back();
      }
      t.ShrinkStep(4, 1'000);
    } while (cursor != 0);
    for (uint64_t n = 0; n < stable; ++n) {
      ASSERT_GE(seen["stable:" + std::to_string(n)], 1) << n;
    }
    EXPECT_LE(t.segment_count() * 4, segments_before);  // it did shrink during the scan
  }
}

// A snapshot (as in VersionedSnapshotIsPointInTime) while erases empty the table and ShrinkStep
// merges segments: buddies whose buckets disagree on being serialised are not merged, so the
// output is still exactly the table at the start.
TEST(DashTableTest, VersionedSnapshotWhileShrinking) {
  std::mt19937_64 rng(5);
  StringTable t;
  std::unordered_map<std::string, std::string> at_start;
  std::vector<std::string> keys;
  for (uint64_t n = 0; n < 60'000 / kOpsScale; ++n) {
    keys.push_back(KeyOf(n));
    std::string v = std::to_string(rng());
    Upsert(t, keys.back(), v);
    at_start[keys.back()] = v;
  }
  const size_t segments_before = t.segment_count();
  const uint64_t snap = 1;
  t.set_new_bucket_version(snap);
  SnapshotWriter writer(snap);
  auto serialise = [&](const StringTable::Bucket& b) { writer.Serialise(b); };
  uint64_t cursor = 0;
  do {
    cursor = t.TraverseBuckets(cursor, serialise);
    for (int i = 0; i < 100 && keys.size() > 1'000; ++i) {
      const size_t victim = rng() % keys.size();
      auto it = Lookup(t, keys[victim]);
      serialise(t.BucketOf(it));  // before the erase changes the bucket
      t.Erase(it);
      keys[victim] = keys.back();
      keys.pop_back();
    }
    t.ShrinkStep(8, 2'000);
  } while (cursor);
  EXPECT_EQ(writer.duplicates, 0);
  EXPECT_EQ(writer.out, at_start);
  // After the snapshot every bucket carries its version: what is left merges.
  ShrinkFully(t);
  EXPECT_LE(t.segment_count() * 8, segments_before);
}

// --- Active defragmentation: segments moved whole (DefragSegments).

// A mover for tests: gives a fresh block of the table's heap to the segments `pick` chooses (by
// how many it has looked at before), and remembers the blocks they left.
struct TestMover {
  explicit TestMover(ShardHeap* heap) : heap(heap) {}
  void* FreshBlockFor(const void* p, size_t bytes, size_t align) {
    if (!pick(looked++)) return nullptr;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
    moved_from.push_back(p);
    return heap->AllocateAligned(bytes, align);
  }
  ShardHeap* heap;
  std::function<bool(size_t)> pick = [](size_t) { return true; };
  size_t looked = 0;
  std::vector<const void*> moved_from;
};

// DefragSegments from cursor 0 until the walk is complete; returns the calls it took.
template <typename Table>
size_t DefragAll(Table& t, TestMover& mover, size_t max_segments) {
  size_t calls = 0;
  uint64_t cursor = 0;
  do {
    cursor = t.DefragSegments(cursor, max_segments, mover);
    EXPECT_LT(cursor, uint64_t(1) << Table::kCursorBits);
    ++calls;
  } while (cursor != 0);
  return calls;
}

// Every segment is looked at once per walk; those moved keep every entry (strings: moved slot by
// slot), their bucket versions and the table's accounting, and the table goes on working.
TEST(DashTableTest, DefragMovesSegmentsWhole) {
  ShardHeap heap;  // outlives the table
  StringTable t(&heap);
  std::unordered_map<std::string, std::string> want;
  std::vector<std::string> keys;
  for (uint64_t n = 0; n < 20'000; ++n) {
    keys.push_back(KeyOf(n));
    want[keys.back()] = std::to_string(Mix(n));
    Upsert(t, keys.back(), want[keys.back()]);
  }
  ASSERT_GE(t.segment_count(), 16u);
  std::unordered_map<std::string, uint64_t> version_of = VersionEveryBucket(t, keys);
  // The table is the heap's only user (std::string's own blocks come from malloc).
  EXPECT_EQ(t.memory_bytes(), heap.used_bytes());
  const size_t segments = t.segment_count();

  TestMover every_other(&heap);
  every_other.pick = [](size_t n) { return n % 2 == 0; };
  EXPECT_EQ(DefragAll(t, every_other, 3), (segments + 2) / 3);
  EXPECT_EQ(every_other.looked, segments);
  EXPECT_EQ(every_other.moved_from.size(), (segments + 1) / 2);
  TestMover all(&heap);
  DefragAll(t, all, 1000);
  EXPECT_EQ(all.moved_from.size(), segments);

  EXPECT_EQ(t.segment_count(), segments);
  EXPECT_EQ(t.size(), want.size());
  EXPECT_EQ(t.memory_bytes(), heap.used_bytes());
  for (const auto& [k, v] : want) {
    auto it = Lookup(t, k);
    ASSERT_NE(it, t.end()) << k;
    EXPECT_EQ(it.value(), v);
    EXPECT_EQ(t.BucketVersion(it), version_of[k]) << k;
  }
  // Writes after the moves find the moved segments: grow, erase and look up against a reference.
  std::mt19937_64 rng(3);
  for (uint64_t n = 20'000; n < 40'000; ++n) {
    Upsert(t, KeyOf(n), "new");
    want[KeyOf(n)] = "new";
    const std::string victim = KeyOf(rng() % n);
    if (auto it = Lookup(t, victim); it != t.end()) {
      t.Erase(it);
      want.erase(victim);
    }
  }
  EXPECT_EQ(t.size(), want.size());
  for (const auto& [k, count] : ScanAll(t, [](StringTable::Iterator it) { return it.key(); })) {
    EXPECT_EQ(count, 1) << k;
    EXPECT_TRUE(want.contains(k)) << k;
  }
  for (const auto& [k, v] : want) ASSERT_NE(Lookup(t, k), t.end()) << k;
  t.Clear();
  EXPECT_EQ(heap.used_bytes(), 0u);
}

// A segment of depth d is pointed at by 2^(global depth - d) directory entries: a move repoints
// them all. Here the upper half of the hash space holds a few keys in one segment of depth 1
// under a directory of depth >= 4, whose keys (their own hashes) spread over all its entries.
TEST(DashTableTest, DefragRepointsEveryDirectoryEntryOfASegment) {
  ShardHeap heap;
  PosTable t(&heap);
  std::mt19937_64 rng(11);
  constexpr uint64_t kHigh = uint64_t(1) << 63;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 20'000; ++i) keys.push_back(rng() & ~kHigh);
  for (int i = 0; i < 200; ++i) keys.push_back(rng() | kHigh);
  for (uint64_t k : keys) Upsert(t, k);
  ASSERT_GE(t.global_depth(), 4u);
  TestMover mover(&heap);
  DefragAll(t, mover, 1000);
  EXPECT_EQ(mover.moved_from.size(), t.segment_count());
  for (uint64_t k : keys) ASSERT_NE(t.Find(k, k), t.end()) << k;
  // More keys in the shallow segment, through every one of its entries, until it splits.
  for (int i = 0; i < 2'000; ++i) {
    keys.push_back(rng() | kHigh);
    Upsert(t, keys.back());
  }
  for (uint64_t k : keys) ASSERT_NE(t.Find(k, k), t.end()) << k;
  EXPECT_EQ(t.size(), keys.size());
}

// A SCAN and a snapshot on bucket versions in progress while segments move between their steps
// (with writes, erases and splits as well): the scan visits each stable key once, the snapshot
// is the table at its start with no duplicates.
TEST(DashTableTest, ScanAndSnapshotAcrossSegmentMoves) {
  ShardHeap heap;
  std::mt19937_64 rng(4);
  StringTable t(&heap);
  std::unordered_map<std::string, std::string> at_start;
  for (uint64_t n = 0; n < 20'000; ++n) {
    std::string v = std::to_string(rng());
    Upsert(t, KeyOf(n), v);
    at_start[KeyOf(n)] = v;
  }
  const uint64_t snap = 1;
  t.set_new_bucket_version(snap);
  SnapshotWriter writer(snap);
  auto serialise = [&](const StringTable::Bucket& b) { writer.Serialise(b); };
  std::unordered_map<std::string, int> seen;
  TestMover mover(&heap);
  uint64_t scan = 0, snapshot = 0, defrag = 0;
  bool scan_done = false, snapshot_done = false;
  uint64_t next = 20'000;
  do {
    if (!scan_done) {
      scan = t.Traverse(scan, [&](StringTable::Iterator it) { ++seen[it.key()]; });
      scan_done = scan == 0;
    }
    if (!snapshot_done) {
      snapshot = t.TraverseBuckets(snapshot, serialise);
      snapshot_done = snapshot == 0;
    }
    defrag = t.DefragSegments(defrag, 5, mover);
    // Inserts of new keys only (the stable keys stay for the scan); a few erase new keys.
    for (int i = 0; i < 5; ++i) {
      const std::string key = KeyOf(next++);
      serialise(t.BucketOf(StringPolicy::Hash(key)));
      Upsert(t, key, "new");
      if (rng() % 4 == 0) {
        auto it = Lookup(t, KeyOf(20'000 + rng() % (next - 20'000)));
        if (it != t.end()) {
          serialise(t.BucketOf(it));
          t.Erase(it);
        }
      }
    }
  } while (!scan_done || !snapshot_done);
  EXPECT_GT(mover.moved_from.size(), 2 * t.segment_count());  // segments moved several times
  for (const auto& [k, v] : at_start) EXPECT_EQ(seen[k], 1) << k;
  EXPECT_EQ(writer.duplicates, 0);
  EXPECT_EQ(writer.out, at_start);
}

// Slots moved by memcpy (trivially relocatable cells) keep their access clocks.
TEST(DashTableTest, DefragKeepsAccessClocks) {
  ShardHeap heap;
  ClockCellTable t(&heap);
  constexpr uint64_t kN = 20'000;
  for (uint64_t i = 0; i < kN; ++i) {
    const Cell key{i, 0};
    auto [it, inserted] = t.FindOrInsert(CellPolicy::Hash(key), key, [&] { return key; });
    it.value() = Cell{Mix(i), i};
    it.set_access_clock(uint32_t(Mix(i) & dash_internal::kAccessClockMask));
  }
  TestMover mover(&heap);
  DefragAll(t, mover, 7);
  EXPECT_EQ(mover.moved_from.size(), t.segment_count());
  EXPECT_EQ(t.memory_bytes(), heap.used_bytes());
  for (uint64_t i = 0; i < kN; ++i) {
    const Cell key{i, 0};
    auto it = t.Find(CellPolicy::Hash(key), key);
    ASSERT_NE(it, t.end()) << i;
    EXPECT_EQ(it.value(), (Cell{Mix(i), i}));
    EXPECT_EQ(it.access_clock(), uint32_t(Mix(i) & dash_internal::kAccessClockMask)) << i;
  }
}

// An empty table has nothing to move; a moved table swapped into another keeps its heap.
TEST(DashTableTest, DefragOfAnEmptyTableAndAMovedTable) {
  ShardHeap heap;
  CellTable t(&heap);
  TestMover mover(&heap);
  EXPECT_EQ(t.DefragSegments(0, 10, mover), 0u);
  EXPECT_EQ(mover.looked, 0u);
  for (uint64_t i = 0; i < 3'000; ++i) {
    const Cell key{i, 1};
    t.FindOrInsert(CellPolicy::Hash(key), key, [&] { return key; });
  }
  CellTable other = std::move(t);
  EXPECT_EQ(other.heap(), &heap);
  EXPECT_EQ(other.memory_bytes(), heap.used_bytes());
  DefragAll(other, mover, 10);
  EXPECT_EQ(mover.moved_from.size(), other.segment_count());
  other.Clear();
  EXPECT_EQ(heap.used_bytes(), 0u);
}

}  // namespace
}  // namespace shardis::core

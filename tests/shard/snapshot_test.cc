// ShardSnapshot on one Shard (no threads): whatever writes, erases, inserts (with splits),
// expiries, FLUSHDB and SWAPDB happen between the slices of the walk, the records it hands out
// are exactly the databases at the cut: every key once, with its value and deadline then.
#include "shard/snapshot.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <utility>

#include "core/rdb_format.h"
#include "core/rdb_reader.h"
#include "core/rdb_writer.h"
#include "shard/shard.h"

namespace shardis::shard {
namespace {

using core::HashBytes;

constexpr int64_t kNow = 1'700'000'000'000;

struct Item {
  std::string value;
  int64_t expire_ms = -1;
  bool operator==(const Item&) const = default;
};
using Dataset = std::map<std::pair<uint32_t, std::string>, Item>;

class ShardSnapshotTest : public ::testing::Test {
 protected:
  void Set(int db, const std::string& key, const std::string& value, int64_t at_ms = 0) {
    bool inserted;
    Db& d = shard_.db(db);
    Db::Iterator it = d.FindOrInsert(key, HashBytes(key), kNow, &inserted);
    it.value().SetString(value);
    d.SetExpire(it, key, HashBytes(key), at_ms);
  }

  Dataset Contents() {
    Dataset out;
    for (int db = 0; db < Shard::kNumDbs; ++db) {
      Db& d = shard_.db(db);
      d.ForEachLive(0, [&](std::string_view key, Db::Iterator it) {
        char scratch[core::CompactValue::kScratchSize];
        const std::string value(it.value().GetString(scratch));
        const int64_t at = d.ExpireAt(it, key, HashBytes(key));
        out[{uint32_t(db), std::string(key)}] = Item{value, at == 0 ? -1 : at};
      });
    }
    return out;
  }

  // The pieces as an RDB file (checksum 0: not checked), read back.
  static Dataset Read(const std::string& pieces) {
    core::StringSink sink;
    core::RdbWriter writer(&sink, {.compression = false, .checksum = false});
    EXPECT_TRUE(writer.WriteHeader({}).ok());
    EXPECT_TRUE(writer.Flush().ok());
    std::string file = sink.data() + pieces;
    file.push_back(char(core::rdb::kOpEof));
    file.append(8, '\0');
    core::StringSource source(file);
    core::RdbReader reader(&source);
    EXPECT_TRUE(reader.ReadHeader().ok());
    Dataset out;
    core::RdbEntry e;
    for (;;) {
      absl::StatusOr<bool> more = reader.Next(&e);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      char scratch[core::CompactValue::kScratchSize];
      const std::string value(e.value.GetString(scratch));
      const bool fresh = out.emplace(std::pair{e.db, e.key}, Item{value, e.expire_ms}).second;
      EXPECT_TRUE(fresh) << "key written twice: " << e.db << " " << e.key;
    }
    return out;
  }

  Shard shard_{0};
};

TEST_F(ShardSnapshotTest, RecordsAreTheDatabasesAtTheCutWhateverHappensMeanwhile) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 6000; ++i) {
    Set(0, "k" + std::to_string(i), "v" + std::to_string(i), i % 7 == 0 ? kNow + 1000 + i : 0);
  }
  for (int i = 0; i < 800; ++i) Set(3, "d3:" + std::to_string(i), std::string(i % 50, 'x'));
  for (int i = 0; i < 300; ++i) Set(5, "d5:" + std::to_string(i), "five");
  const Dataset at_cut = Contents();

  ShardSnapshot snap(&shard_, /*compression=*/false);
  std::string pieces;
  int inserted = 0, slices = 0;
  bool more = true;
  while (more) {
    more = snap.SerializeSome(2, 1 << 20);
    ++slices;
    // Between two slices, what clients and the expiry cycle could do.
    for (int op = 0; op < 25; ++op) {
      const std::string key = "k" + std::to_string(rng() % 6000);
      switch (rng() % 6) {
        case 0: {  // overwrite, found through the Db as a command would
          Db::Iterator it = shard_.db(0).Find(key, HashBytes(key), kNow);
          if (Db::Found(it)) it.value().SetString("changed");
          break;
        }
        case 1:  // new keys: the table grows and splits
          Set(0, "new" + std::to_string(inserted++), "n");
          break;
        case 2:
          shard_.db(0).Erase(key, HashBytes(key), kNow);
          break;
        case 3: {  // a deadline set, moved or removed
          Db::Iterator it = shard_.db(0).Find(key, HashBytes(key), kNow);
          if (Db::Found(it)) shard_.db(0).SetExpire(it, key, HashBytes(key), rng() % 2 ? 0 : kNow + 5);
          break;
        }
        case 4: {  // the active expiry cycle, at a time past every deadline
          size_t examined;
          shard_.db(0).ExpireSome(kNow + 1'000'000, 20, &examined);
          break;
        }
        case 5:
          Set(3, "d3:" + std::to_string(rng() % 800), "changed3");
          break;
      }
    }
    if (slices == 40) shard_.db(3).Clear();                   // FLUSHDB mid-walk
    if (slices == 60) shard_.db(5).SwapContents(shard_.db(0));  // SWAPDB mid-walk
    if (rng() % 4 == 0) pieces += snap.TakeOutput();
  }
  pieces += snap.TakeOutput();
  EXPECT_GT(slices, 100);
  EXPECT_GT(inserted, 100);
  EXPECT_EQ(snap.keys(), at_cut.size());
  EXPECT_EQ(Read(pieces), at_cut);
}

TEST_F(ShardSnapshotTest, AbortDetachesAndStopsWriting) {
  for (int i = 0; i < 1000; ++i) Set(0, "k" + std::to_string(i), "v");
  ShardSnapshot snap(&shard_, false);
  snap.SerializeSome(1, 1 << 20);
  snap.Abort();
  EXPECT_TRUE(snap.aborted());
  EXPECT_EQ(snap.output_size(), 0u);
  // Changes no longer go through the snapshot.
  Set(0, "k1", "changed");
  EXPECT_EQ(snap.output_size(), 0u);
}

TEST_F(ShardSnapshotTest, EmptyShardAndKeysInsertedAfterTheCut) {
  ShardSnapshot snap(&shard_, false);
  // The first insert into an empty table makes a segment with the snapshot's version: its keys
  // came after the cut.
  for (int i = 0; i < 500; ++i) Set(0, "late" + std::to_string(i), "v");
  while (snap.SerializeSome(8, 1 << 20)) {
  }
  EXPECT_EQ(snap.keys(), 0u);
  EXPECT_TRUE(Read(snap.TakeOutput()).empty());
}

// The walk stops compressing where nothing compresses (random values in db 0: it tries only a
// probe bucket now and then) and compresses again as soon as a probe does (db 1's values of one
// repeated letter); the records read back as the databases either way.
TEST_F(ShardSnapshotTest, CompressionPausesOnIncompressibleValuesAndResumes) {
  constexpr int kKeys = 20000;
  std::mt19937_64 rng(7);
  std::string random_value(100, ' ');
  for (int i = 0; i < kKeys; ++i) {
    for (char& c : random_value) c = char('!' + rng() % 90);
    Set(0, "r:" + std::to_string(i), random_value);
    Set(1, "x:" + std::to_string(i), std::string(100, 'x'));
  }
  const Dataset expected = Contents();
  ShardSnapshot snap(&shard_, /*compression=*/true);
  std::string pieces;
  const core::rdb::LzfOutcomes start = core::rdb::ThreadLzfOutcomes();
  core::rdb::LzfOutcomes after_db0;
  bool more = true;
  while (more) {
    more = snap.SerializeSome(1, 1 << 20);  // one bucket: the walk is in one database at a time
    pieces += snap.TakeOutput();
    if (snap.keys() == uint64_t(kKeys)) after_db0 = core::rdb::ThreadLzfOutcomes();
  }
  const core::rdb::LzfOutcomes end = core::rdb::ThreadLzfOutcomes();
  // db 0: a few hundred keys tried before the pause and in the probes, not 20000.
  EXPECT_LT(after_db0.tried - start.tried, uint64_t(kKeys / 4));
  EXPECT_EQ(after_db0.saved - start.saved, 0u);
  // db 1: all but the keys of the first probe interval compressed.
  EXPECT_GT(end.saved - after_db0.saved, uint64_t(kKeys * 9 / 10));
  EXPECT_EQ(Read(pieces), expected);
}

}  // namespace
}  // namespace shardis::shard

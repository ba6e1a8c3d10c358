// The reader against damaged files: every truncation of a valid file, and thousands of files
// with flipped bits or overwritten bytes (with the checksum made right again, so that the damage
// reaches the value decoders instead of stopping at the CRC), must give a clean error or a valid
// result, never a crash or a read outside the data (run under ASan by scripts/test.sh).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/crc64.h"
#include "core/hash_object.h"
#include "core/list.h"
#include "core/rdb_dump.h"
#include "core/rdb_reader.h"
#include "core/rdb_writer.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/zset.h"
#include "tests/tools/value_json.h"

namespace shardis::core {
namespace {

// A file with every type, in both encodings where the size allows, kept small so that thousands
// of variants read quickly.
std::string ValidFile() {
  StringSink sink;
  RdbWriter w(&sink);
  EXPECT_TRUE(w.WriteHeader(StandardRdbAux("7.0.15", 1700000000, 1)).ok());
  EXPECT_TRUE(w.SelectDb(0, 12, 1).ok());
  RdbKeyMeta expiring{.expire_ms = 4102444800000};
  EXPECT_TRUE(w.WriteKey("int", CompactValue::FromString("-12345"), expiring).ok());
  EXPECT_TRUE(w.WriteKey("lzf", CompactValue::FromString(std::string(200, 'a') + "b")).ok());
  List* l = ShardNew<List>();
  for (int i = 0; i < 60; ++i) l->Push(ListEnd::kTail, i % 2 ? std::to_string(i) : "item" + std::to_string(i));
  EXPECT_TRUE(w.WriteKey("list", CompactValue::FromObject(ValueType::kList, l)).ok());
  CompactValue h;
  HashRef::InitCell(&h);
  for (int i = 0; i < 5; ++i) HashRef(h).Set("f" + std::to_string(i), std::to_string(i * 100));
  EXPECT_TRUE(w.WriteKey("hash", h).ok());
  CompactValue hb;
  HashRef::InitCell(&hb);
  HashRef(hb).Set("long", std::string(80, 'x'));
  HashRef(hb).Set("short", "y");
  EXPECT_TRUE(w.WriteKey("hashtable", hb).ok());
  CompactValue si;
  SetRef::InitCell(&si, "1");
  for (int v : {1, -70000, 3, 4}) SetRef(si).Add(std::to_string(v));
  EXPECT_TRUE(w.WriteKey("intset", si).ok());
  CompactValue ss;
  SetRef::InitCell(&ss, "a");
  for (const char* m : {"a", "b", "c"}) SetRef(ss).Add(m);
  EXPECT_TRUE(w.WriteKey("set", ss).ok());
  ZSet* z = ShardNew<ZSet>();
  double ignored;
  for (int i = 0; i < 6; ++i) z->Add("m" + std::to_string(i), i * 1.5, 0, &ignored);
  EXPECT_TRUE(w.WriteKey("zset", CompactValue::FromObject(ValueType::kZSet, z)).ok());
  ZSet* zl = ShardNew<ZSet>(ZSet::kLarge);
  for (int i = 0; i < 4; ++i) zl->Add("big" + std::to_string(i), -i, 0, &ignored);
  EXPECT_TRUE(w.WriteKey("skiplist", CompactValue::FromObject(ValueType::kZSet, zl)).ok());
  Stream* s = ShardNew<Stream>();
  for (int i = 1; i <= 8; ++i) {
    s->Append(StreamID{uint64_t(i), 0}, {"f", std::to_string(i), i % 3 ? "a" : "b", "v"});
  }
  StreamGroup* g = s->CreateGroup("g", StreamID{3, 0}, 3);
  bool created;
  StreamConsumer* c = g->GetOrCreateConsumer("c", 10, &created);
  g->Assign(StreamID{2, 0}, c, 20);
  g->Assign(StreamID{3, 0}, c, 30);
  EXPECT_TRUE(w.WriteKey("stream", CompactValue::FromObject(ValueType::kStream, s)).ok());
  EXPECT_TRUE(w.WriteKey("hll", CompactValue::FromString(std::string("HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff\x88", 19))).ok());
  EXPECT_TRUE(w.SelectDb(3, 1, 0).ok());
  EXPECT_TRUE(w.WriteKey("k3", CompactValue::FromString("v3")).ok());
  EXPECT_TRUE(w.Finish().ok());
  return sink.data();
}

// Reads the whole file: OK with every key, or an error that says where. Returns the status.
absl::Status ReadAll(std::string_view data, size_t* keys) {
  StringSource src(data);
  RdbReader r(&src);
  if (absl::Status s = r.ReadHeader(); !s.ok()) return s;
  *keys = 0;
  while (true) {
    RdbEntry e;
    absl::StatusOr<bool> more = r.Next(&e);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    tools::ValueJson(e.value);  // walk the value: it must be consistent enough to read
    ++*keys;
  }
}

// The same through NextRaw and DecodeRdbValue (the parallel loader's path).
absl::Status ReadAllRaw(std::string_view data) {
  StringSource src(data);
  RdbReader r(&src);
  if (absl::Status s = r.ReadHeader(); !s.ok()) return s;
  while (true) {
    RdbRawEntry raw;
    absl::StatusOr<bool> more = r.NextRaw(&raw);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    CompactValue v;
    bool empty;
    if (absl::Status s = DecodeRdbValue(raw.type, r.version(), raw.payload, &v, &empty); !s.ok()) {
      return s;
    }
    tools::ValueJson(v);
  }
}

void FixChecksum(std::string* f) {
  const uint64_t crc = Crc64(0, std::string_view(*f).substr(0, f->size() - 8));
  for (int i = 0; i < 8; ++i) (*f)[f->size() - 8 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
}

void ExpectCleanError(const absl::Status& s) {
  ASSERT_FALSE(s.ok());
  // Every error names the byte offset (or the version it refuses).
  const std::string m(s.message());
  EXPECT_TRUE(m.rfind("at byte ", 0) == 0 || m.rfind("RDB version ", 0) == 0) << m;
}

TEST(RdbCorruption, ValidFileReads) {
  size_t keys = 0;
  ASSERT_TRUE(ReadAll(ValidFile(), &keys).ok());
  EXPECT_EQ(keys, 12u);
}

TEST(RdbCorruption, EveryTruncationIsAnError) {
  const std::string f = ValidFile();
  for (size_t n = 0; n < f.size(); ++n) {
    size_t keys;
    absl::Status s = ReadAll(std::string_view(f).substr(0, n), &keys);
    ExpectCleanError(s);
    ExpectCleanError(ReadAllRaw(std::string_view(f).substr(0, n)));
    if (n > 9 && n < f.size() - 9) {
      // A cut inside the body ends the file early: the message says so.
      EXPECT_NE(s.message().find("end of file"), std::string::npos) << n << ": " << s.message();
    }
  }
}

TEST(RdbCorruption, BitFlipsAndOverwrites) {
  const std::string f = ValidFile();
  std::mt19937_64 rng(20261126);
  size_t ok = 0, errors = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bad = f;
    const int changes = 1 + int(rng() % 3);
    for (int k = 0; k < changes; ++k) {
      const size_t pos = 9 + rng() % (bad.size() - 17);  // keep the signature, damage the body
      if (rng() % 2) {
        bad[pos] = static_cast<char>(bad[pos] ^ (1 << (rng() % 8)));
      } else {
        bad[pos] = static_cast<char>(rng());
      }
    }
    if (round % 4 != 0) FixChecksum(&bad);  // mostly reach the decoders
    size_t keys;
    absl::Status s = ReadAll(bad, &keys);
    absl::Status raw = ReadAllRaw(bad);
    if (!raw.ok()) ExpectCleanError(raw);
    if (s.ok()) {
      ++ok;
    } else {
      ExpectCleanError(s);
      ++errors;
    }
  }
  EXPECT_GT(errors, 5000u);
  // Without a fixed checksum nothing damaged passes.
  std::string bad = f;
  bad[f.size() / 2] ^= 1;
  size_t keys;
  ExpectCleanError(ReadAll(bad, &keys));
  (void)ok;
}

TEST(RdbCorruption, DumpPayloads) {
  std::mt19937_64 rng(7);
  StringSink sink;
  Stream* s = ShardNew<Stream>();
  for (int i = 1; i <= 5; ++i) s->Append(StreamID{uint64_t(i), 1}, {"a", "b"});
  const std::string good = CreateDumpPayload(CompactValue::FromObject(ValueType::kStream, s));
  for (int round = 0; round < 3000; ++round) {
    std::string bad = good;
    bad[rng() % (bad.size() - 10)] ^= static_cast<char>(1 << (rng() % 8));
    CompactValue v;
    absl::Status st = DecodeDumpPayload(bad, &v, /*check_crc=*/false);
    if (st.ok()) tools::ValueJson(v);
  }
  for (size_t n = 0; n < good.size(); ++n) {
    CompactValue v;
    EXPECT_FALSE(DecodeDumpPayload(std::string_view(good).substr(0, n), &v).ok());
  }
}

}  // namespace
}  // namespace shardis::core

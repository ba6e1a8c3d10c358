#include "core/hash_object.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/shard_heap.h"
#include "core/value_object.h"

namespace shardis::core {
namespace {

// Compares every observable of the hash with the model.
void CheckSame(CompactValue& cell, const std::unordered_map<std::string, std::string>& model) {
  HashRef h(cell);
  ASSERT_EQ(h.Size(), model.size());
  for (const auto& [f, v] : model) {
    std::string_view got;
    ASSERT_TRUE(h.Get(f, &got)) << f;
    ASSERT_EQ(got, v) << f;
  }
  std::unordered_map<std::string, std::string> seen;
  h.ForEach([&](std::string_view f, std::string_view v) {
    EXPECT_TRUE(seen.emplace(std::string(f), std::string(v)).second) << "duplicate " << f;
  });
  ASSERT_EQ(seen, model);
}

std::string Str(size_t n, char c) { return std::string(n, c); }

TEST(HashObject, PackedUntilEntryThreshold) {
  CompactValue cell;
  HashRef::InitCell(&cell);
  std::unordered_map<std::string, std::string> model;
  const size_t max = HashMaxListpackEntries();
  for (size_t i = 0; i < max; ++i) {
    const std::string f = "f" + std::to_string(i);
    EXPECT_TRUE(HashRef(cell).Set(f, "v"));
    model[f] = "v";
    ASSERT_EQ(EncodingName(cell), "listpack") << i;
  }
  CheckSame(cell, model);
  // Overwriting at the limit keeps it packed; one more field converts.
  EXPECT_FALSE(HashRef(cell).Set("f0", "w"));
  model["f0"] = "w";
  EXPECT_EQ(EncodingName(cell), "listpack");
  EXPECT_TRUE(HashRef(cell).Set("extra", "x"));
  model["extra"] = "x";
  EXPECT_EQ(EncodingName(cell), "hashtable");
  CheckSame(cell, model);
}

TEST(HashObject, ValueLengthThreshold) {
  const size_t max = HashMaxListpackValue();
  for (int which = 0; which < 2; ++which) {
    CompactValue cell;
    HashRef::InitCell(&cell);
    std::unordered_map<std::string, std::string> model;
    HashRef(cell).Set(Str(max, 'f'), Str(max, 'v'));
    model[Str(max, 'f')] = Str(max, 'v');
    EXPECT_EQ(EncodingName(cell), "listpack");
    const std::string f = which == 0 ? Str(max + 1, 'g') : "g";
    const std::string v = which == 0 ? "v" : Str(max + 1, 'w');
    HashRef(cell).Set(f, v);
    model[f] = v;
    EXPECT_EQ(EncodingName(cell), "hashtable");
    CheckSame(cell, model);
  }
}

TEST(HashObject, SetNoOverwriteAndDelete) {
  CompactValue cell;
  HashRef::InitCell(&cell);
  HashRef h(cell);
  EXPECT_TRUE(h.Set("a", "1"));
  EXPECT_FALSE(h.Set("a", "2", /*overwrite=*/false));
  std::string_view v;
  ASSERT_TRUE(h.Get("a", &v));
  EXPECT_EQ(v, "1");
  EXPECT_TRUE(h.Delete("a"));
  EXPECT_FALSE(h.Delete("a"));
  EXPECT_EQ(h.Size(), 0u);
  EXPECT_TRUE(h.Set("", ""));
  ASSERT_TRUE(h.Get("", &v));
  EXPECT_EQ(v, "");
}

// Random operations against std::unordered_map, with sizes around the entry threshold and
// lengths around the value threshold.
TEST(HashObject, RandomAgainstModel) {
  std::mt19937_64 rng(7);
  const size_t max_value = HashMaxListpackValue();
  for (int round = 0; round < 30; ++round) {
    CompactValue cell;
    HashRef::InitCell(&cell);
    std::unordered_map<std::string, std::string> model;
    const int fields = round % 2 == 0 ? 140 : 400;
    const bool long_values = round % 5 == 4;
    size_t max_size = 0;
    bool had_long = false;
    for (int op = 0; op < 3000; ++op) {
      const std::string f = "f" + std::to_string(rng() % fields);
      const int kind = rng() % 10;
      HashRef h(cell);
      if (kind < 6) {
        size_t len = rng() % (long_values ? max_value + 2 : max_value - 2);
        const std::string v(len, static_cast<char>('a' + rng() % 26));
        const bool overwrite = kind != 0;
        const bool is_new = model.find(f) == model.end();
        ASSERT_EQ(h.Set(f, v, overwrite), is_new);
        if (is_new || overwrite) model[f] = v;
        max_size = std::max(max_size, model.size());
        had_long = had_long || v.size() > max_value;
      } else if (kind < 9) {
        ASSERT_EQ(h.Delete(f), model.erase(f) == 1);
      } else {
        std::string_view v;
        auto it = model.find(f);
        ASSERT_EQ(h.Get(f, &v), it != model.end());
        if (it != model.end()) {
          ASSERT_EQ(v, it->second);
        }
      }
      if (op % 500 == 0) CheckSame(cell, model);
    }
    CheckSame(cell, model);
    // Packed exactly when the hash never went past a threshold (it never converts back).
    EXPECT_EQ(HashRef(cell).packed(), max_size <= HashMaxListpackEntries() && !had_long);
    CompactValue copy = CloneObject(cell);
    CheckSame(copy, model);
  }
}

// HSCAN over a table: every field present for the whole scan is returned, even when the table
// grows and shrinks between the calls.
TEST(HashObject, ScanSurvivesResize) {
  for (int round = 0; round < 20; ++round) {
    CompactValue cell;
    HashRef::InitCell(&cell);
    for (int i = 0; i < 1000; ++i) HashRef(cell).Set("stable" + std::to_string(i), "v");
    // Odd rounds start big and shrink under the scan.
    if (round % 2 == 1) {
      for (int i = 0; i < 8000; ++i) HashRef(cell).Set("tmp" + std::to_string(i), "x");
    }
    ASSERT_FALSE(HashRef(cell).packed());
    std::unordered_set<std::string> seen;
    uint64_t cursor = 0;
    int step = 0;
    do {
      cursor = HashRef(cell).Scan(cursor, 10, [&](std::string_view f, std::string_view) {
        seen.emplace(f);
      });
      // Churn: grow a lot or shrink a lot, depending on the round.
      if (round % 2 == 0 && step < 20) {
        for (int i = 0; i < 500; ++i) {
          HashRef(cell).Set("tmp" + std::to_string(step) + "_" + std::to_string(i), "x");
        }
      } else if (round % 2 == 1 && step < 16) {
        for (int i = 0; i < 500; ++i) HashRef(cell).Delete("tmp" + std::to_string(step * 500 + i));
      }
      ++step;
    } while (cursor != 0);
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(seen.count("stable" + std::to_string(i))) << i;
  }
}

// Lengths of 128 bytes and more take multi-byte varints, in the packed buffer (with a raised
// value limit) and in the table's blocks.
TEST(HashObject, LongFieldsAndValues) {
  const size_t saved = HashMaxListpackValue();
  SetHashMaxListpackValue(20000);
  std::unordered_map<std::string, std::string> model;
  CompactValue cell;
  HashRef::InitCell(&cell);
  for (size_t len : {0, 1, 127, 128, 129, 300, 16383, 16384, 19999}) {
    const std::string f = "f" + std::string(len, 'k');
    const std::string v(len, 'v');
    HashRef(cell).Set(f, v);
    model[f] = v;
  }
  EXPECT_TRUE(HashRef(cell).packed());
  CheckSame(cell, model);
  HashRef(cell).Set("f" + std::string(300, 'k'), "short");
  model["f" + std::string(300, 'k')] = "short";
  CheckSame(cell, model);
  HashRef(cell).Set("big", std::string(100000, 'b'));  // past the limit: a table
  model["big"] = std::string(100000, 'b');
  EXPECT_FALSE(HashRef(cell).packed());
  CheckSame(cell, model);
  HashRef(cell).Set(std::string(70000, 'F'), "");
  model[std::string(70000, 'F')] = "";
  CheckSame(cell, model);
  SetHashMaxListpackValue(saved);
}

TEST(HashObject, RandomEntryIsMember) {
  std::mt19937_64 rng(3);
  CompactValue cell;
  HashRef::InitCell(&cell);
  for (int i = 0; i < 300; ++i) {
    HashRef(cell).Set(std::to_string(i), "v" + std::to_string(i));
    std::string_view f, v;
    HashRef(cell).Random(rng, &f, &v);
    EXPECT_EQ("v" + std::string(f), std::string(v));
  }
}

}  // namespace
}  // namespace shardis::core

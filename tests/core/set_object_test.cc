#include "core/set_object.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <unordered_set>

#include "core/intset.h"
#include "core/value_object.h"

namespace shardis::core {
namespace {

void CheckSame(CompactValue& cell, const std::unordered_set<std::string>& model) {
  SetRef s(cell);
  ASSERT_EQ(s.Size(), model.size());
  for (const std::string& m : model) ASSERT_TRUE(s.Contains(m)) << m;
  std::unordered_set<std::string> seen;
  s.ForEach([&](std::string_view m) {
    EXPECT_TRUE(seen.emplace(m).second) << "duplicate " << m;
  });
  ASSERT_EQ(seen, model);
}

CompactValue NewSet(std::string_view first) {
  CompactValue cell;
  SetRef::InitCell(&cell, first);
  return cell;
}

TEST(IntSet, WidthUpgradesKeepOrder) {
  char* buf = IntSet::New();
  bool added;
  const std::initializer_list<int64_t> values = {5, -3, 40000, -70000, 1, INT64_MAX, INT64_MIN,
                                                 5, 0};
  for (int64_t v : values) {
    buf = IntSet::Insert(buf, v, &added);
  }
  EXPECT_EQ(IntSet::Width(buf), 8u);
  ASSERT_EQ(IntSet::Count(buf), 8u);
  for (uint32_t i = 1; i < IntSet::Count(buf); ++i) {
    EXPECT_LT(IntSet::Get(buf, i - 1), IntSet::Get(buf, i));
  }
  EXPECT_TRUE(IntSet::Contains(buf, INT64_MIN));
  EXPECT_FALSE(IntSet::Contains(buf, 6));
  EXPECT_TRUE(IntSet::Remove(buf, 40000));
  EXPECT_FALSE(IntSet::Contains(buf, 40000));
  IntSet::Free(buf);
}

TEST(SetObject, IntsetUntilThreshold) {
  CompactValue cell = NewSet("0");
  std::unordered_set<std::string> model;
  const size_t max = SetMaxIntsetEntries();
  for (size_t i = 0; i < max; ++i) {
    EXPECT_TRUE(SetRef(cell).Add(std::to_string(static_cast<int64_t>(i) * 1000 - 7)));
    model.insert(std::to_string(static_cast<int64_t>(i) * 1000 - 7));
    ASSERT_EQ(EncodingName(cell), "intset");
  }
  EXPECT_FALSE(SetRef(cell).Add("-7"));
  EXPECT_EQ(EncodingName(cell), "intset");
  CheckSame(cell, model);
  EXPECT_TRUE(SetRef(cell).Add("999999999999"));
  model.insert("999999999999");
  EXPECT_EQ(EncodingName(cell), "hashtable");
  CheckSame(cell, model);
}

TEST(SetObject, NonCanonicalIntegersAreStrings) {
  CompactValue cell = NewSet("1");
  EXPECT_EQ(EncodingName(cell), "intset");
  for (const char* m : {"1", "01", "+1", "-0", " 1"}) SetRef(cell).Add(m);
  EXPECT_EQ(EncodingName(cell), "listpack");
  CheckSame(cell, {"1", "01", "+1", "-0", " 1"});
  EXPECT_FALSE(SetRef(cell).Contains("1 "));
}

TEST(SetObject, IntsetToListpackOrTable) {
  const size_t lp = SetMaxListpackEntries();
  // Below the listpack limit: a string member makes it a listpack.
  {
    CompactValue cell = NewSet("1");
    std::unordered_set<std::string> model;
    for (size_t i = 0; i < lp - 1; ++i) {
      SetRef(cell).Add(std::to_string(i));
      model.insert(std::to_string(i));
    }
    SetRef(cell).Add("x");
    model.insert("x");
    EXPECT_EQ(EncodingName(cell), "listpack");
    CheckSame(cell, model);
    SetRef(cell).Add("y");  // lp + 1 members
    model.insert("y");
    EXPECT_EQ(EncodingName(cell), "hashtable");
    CheckSame(cell, model);
  }
  // At the listpack limit already: a table.
  {
    CompactValue cell = NewSet("1");
    std::unordered_set<std::string> model;
    for (size_t i = 0; i < lp; ++i) {
      SetRef(cell).Add(std::to_string(i));
      model.insert(std::to_string(i));
    }
    SetRef(cell).Add("x");
    model.insert("x");
    EXPECT_EQ(EncodingName(cell), "hashtable");
    CheckSame(cell, model);
  }
  // A long string member: a table.
  {
    CompactValue cell = NewSet("1");
    const std::string long_member(SetMaxListpackValue() + 1, 'z');
    SetRef(cell).Add("1");
    SetRef(cell).Add(long_member);
    EXPECT_EQ(EncodingName(cell), "hashtable");
    CheckSame(cell, {"1", long_member});
  }
}

TEST(SetObject, ListpackThresholds) {
  const size_t lp = SetMaxListpackEntries(), max_value = SetMaxListpackValue();
  CompactValue cell = NewSet("a");
  std::unordered_set<std::string> model;
  for (size_t i = 0; i < lp; ++i) {
    SetRef(cell).Add("m" + std::to_string(i));
    model.insert("m" + std::to_string(i));
  }
  EXPECT_EQ(EncodingName(cell), "listpack");
  SetRef(cell).Add("m" + std::to_string(lp));
  model.insert("m" + std::to_string(lp));
  EXPECT_EQ(EncodingName(cell), "hashtable");
  CheckSame(cell, model);

  CompactValue cell2 = NewSet(std::string(max_value, 'a'));
  SetRef(cell2).Add(std::string(max_value, 'a'));
  EXPECT_EQ(EncodingName(cell2), "listpack");
  SetRef(cell2).Add(std::string(max_value + 1, 'b'));
  EXPECT_EQ(EncodingName(cell2), "hashtable");
  CheckSame(cell2, {std::string(max_value, 'a'), std::string(max_value + 1, 'b')});

  CompactValue cell3 = NewSet(std::string(max_value + 1, 'a'));
  EXPECT_EQ(EncodingName(cell3), "hashtable");
}

// The encoding after adding a new member m to a set of `size` members (the conversion rules).
std::string NextEncoding(const std::string& enc, size_t size, const std::string& m) {
  int64_t v;
  const bool is_int = ParseInt64(m, &v);
  if (enc == "intset") {
    if (is_int) return size + 1 > SetMaxIntsetEntries() ? "hashtable" : "intset";
    return size < SetMaxListpackEntries() && m.size() <= SetMaxListpackValue() ? "listpack"
                                                                              : "hashtable";
  }
  if (enc == "listpack") {
    return size + 1 > SetMaxListpackEntries() || m.size() > SetMaxListpackValue() ? "hashtable"
                                                                                  : "listpack";
  }
  return enc;
}

TEST(SetObject, RandomAgainstModel) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 40; ++round) {
    const std::string first = round % 2 == 0 ? "1" : "a";
    CompactValue cell = NewSet(first);
    std::unordered_set<std::string> model;
    std::string enc(EncodingName(cell));
    const int universe = (round % 4 < 2) ? 140 : 600;
    const int strings_per_mille = (round % 3 == 0) ? 0 : (round % 3 == 1 ? 5 : 300);
    for (int op = 0; op < 4000; ++op) {
      std::string m;
      if (static_cast<int>(rng() % 1000) < strings_per_mille) {
        m = "s" + std::string(rng() % 70, 'q') + std::to_string(rng() % universe);
      } else {
        m = std::to_string(static_cast<int64_t>(rng() % universe) - universe / 2);
        if (rng() % 50 == 0) m = std::to_string(static_cast<int64_t>(rng()));
      }
      const int kind = rng() % 10;
      SetRef s(cell);
      if (kind < 6) {
        const bool is_new = model.count(m) == 0;
        if (is_new) enc = NextEncoding(enc, model.size(), m);
        ASSERT_EQ(s.Add(m), model.insert(m).second);
        ASSERT_EQ(EncodingName(cell), enc) << m;
      } else if (kind < 9) {
        ASSERT_EQ(s.Remove(m), model.erase(m) == 1);
      } else {
        ASSERT_EQ(s.Contains(m), model.count(m) == 1);
      }
      if (op % 500 == 0) CheckSame(cell, model);
    }
    CheckSame(cell, model);
    CompactValue copy = CloneObject(cell);
    CheckSame(copy, model);
    if (!model.empty()) {
      for (int i = 0; i < 20; ++i) EXPECT_TRUE(model.count(SetRef(cell).Random(rng)));
    }
  }
}

TEST(SetObject, ScanCoversStableMembers) {
  CompactValue cell = NewSet("x");
  for (int i = 0; i < 2000; ++i) SetRef(cell).Add("m" + std::to_string(i));
  std::unordered_set<std::string> seen;
  uint64_t cursor = 0;
  int step = 0;
  do {
    cursor = SetRef(cell).Scan(cursor, 7, [&](std::string_view m) { seen.emplace(m); });
    // Grow for a while (several doublings), then let the scan finish.
    if (step < 30) {
      for (int i = 0; i < 200; ++i) SetRef(cell).Add("t" + std::to_string(step * 200 + i));
    }
    ++step;
  } while (cursor != 0);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(seen.count("m" + std::to_string(i)));
}

}  // namespace
}  // namespace shardis::core

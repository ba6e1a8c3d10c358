#include "core/zset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/value_object.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace shardis::core {
namespace {

using Item = std::pair<double, std::string>;  // (score, member): std::string orders as memcmp
using Items = std::vector<Item>;

// The reference: member -> score plus the (score, member) order.
struct Model {
  std::map<std::string, double> scores;
  std::set<Item> order;

  void Set(const std::string& m, double s) {
    auto it = scores.find(m);
    if (it != scores.end()) order.erase({it->second, m});
    scores[m] = s;
    order.insert({s, m});
  }
  void Erase(const std::string& m) {
    auto it = scores.find(m);
    if (it == scores.end()) return;
    order.erase({it->second, m});
    scores.erase(it);
  }
  Items All() const { return Items(order.begin(), order.end()); }
};

Items Collect(const std::function<void(ZSet::Visitor)>& run) {
  Items out;
  run([&](std::string_view m, double s) { out.emplace_back(s, std::string(m)); });
  return out;
}

Items AllOf(const ZSet& z) {
  if (z.size() == 0) return {};
  return Collect([&](ZSet::Visitor v) { z.RangeByRank(0, z.size() - 1, false, v); });
}

ZScoreRange Range(double min, double max, bool minex, bool maxex) {
  ZScoreRange r;
  r.min = min;
  r.max = max;
  r.minex = minex;
  r.maxex = maxex;
  return r;
}

Items ModelByScore(const Model& m, const ZScoreRange& r, bool reverse, size_t offset,
                   int64_t limit) {
  Items in;
  for (const Item& it : m.order) {
    if (r.AboveMin(it.first) && r.BelowMax(it.first)) in.push_back(it);
  }
  if (reverse) std::reverse(in.begin(), in.end());
  Items out;
  for (size_t i = offset; i < in.size() && (limit < 0 || int64_t(out.size()) < limit); ++i) {
    out.push_back(in[i]);
  }
  return out;
}

std::string RandomMember(std::mt19937_64& rng, bool allow_long) {
  if (allow_long && rng() % 50 == 0) {
    return std::string(65 + rng() % 10, 'L') + char('a' + rng() % 5);
  }
  return "m" + std::to_string(rng() % 300);
}

void CheckAll(const ZSet& z, const Model& m, std::mt19937_64& rng) {
  ASSERT_EQ(z.size(), m.scores.size());
  ASSERT_EQ(AllOf(z), m.All());
  const Items all = m.All();
  const size_t n = all.size();
  for (int i = 0; i < 5 && n > 0; ++i) {
    const Item& pick = all[rng() % n];
    const size_t rank = std::lower_bound(all.begin(), all.end(), pick) - all.begin();
    double s;
    ASSERT_EQ(z.Rank(pick.second, false, &s), int64_t(rank));
    ASSERT_EQ(s, pick.first);
    ASSERT_EQ(z.Rank(pick.second, true), int64_t(n - 1 - rank));
    std::string_view am;
    double as;
    z.At(rank, &am, &as);
    ASSERT_EQ(am, pick.second);
    // A rank range in both directions.
    size_t a = rng() % n, b = rng() % n;
    if (a > b) std::swap(a, b);
    Items expect(all.begin() + a, all.begin() + b + 1);
    ASSERT_EQ(Collect([&](ZSet::Visitor v) { z.RangeByRank(a, b, false, v); }), expect);
    Items rexpect(all.rbegin() + a, all.rbegin() + b + 1);
    ASSERT_EQ(Collect([&](ZSet::Visitor v) { z.RangeByRank(a, b, true, v); }), rexpect);
  }
  EXPECT_EQ(z.Rank("absent", false), -1);
  for (int i = 0; i < 5; ++i) {
    double lo = double(int64_t(rng() % 40) - 20), hi = double(int64_t(rng() % 40) - 20);
    if (rng() % 8 == 0) lo = -std::numeric_limits<double>::infinity();
    if (rng() % 8 == 0) hi = std::numeric_limits<double>::infinity();
    ZScoreRange r = Range(lo, hi, rng() % 2, rng() % 2);
    const bool reverse = rng() % 2;
    const size_t offset = rng() % 3 == 0 ? rng() % 5 : 0;
    const int64_t limit = rng() % 3 == 0 ? int64_t(rng() % 6) : -1;
    ASSERT_EQ(Collect([&](ZSet::Visitor v) { z.RangeByScore(r, reverse, offset, limit, v); }),
              ModelByScore(m, r, reverse, offset, limit))
        << lo << " " << hi << " " << r.minex << r.maxex << " rev " << reverse;
    ASSERT_EQ(z.CountByScore(r), ModelByScore(m, r, false, 0, -1).size());
  }
}

TEST(ZSetTest, RandomOperationsAgainstModel) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 30; ++round) {
    ZSet z;
    Model m;
    const int ops = 200 + int(rng() % 800);
    for (int i = 0; i < ops; ++i) {
      const std::string member = RandomMember(rng, round % 3 == 0);
      const double score = double(int64_t(rng() % 40) - 20) + (rng() % 4 == 0 ? 0.5 : 0);
      switch (rng() % 10) {
        case 0:
        case 1:
        case 2:
        case 3: {
          double out = 0;
          const unsigned r = z.Add(member, score, 0, &out);
          const bool existed = m.scores.count(member);
          const bool changed = existed && m.scores[member] != score;
          EXPECT_EQ(r, existed ? (changed ? unsigned(kZAddOutUpdated) : 0u)
                               : unsigned(kZAddOutAdded));
          m.Set(member, score);
          break;
        }
        case 4: {  // INCR
          double out = 0;
          const auto it = m.scores.find(member);
          const double expect = (it == m.scores.end() ? 0 : it->second) + score;
          z.Add(member, score, kZAddIncr, &out);
          EXPECT_EQ(out, expect);
          m.Set(member, expect);
          break;
        }
        case 5:
          EXPECT_EQ(z.Erase(member), m.scores.count(member) == 1);
          m.Erase(member);
          break;
        case 6: {  // erase a score range
          ZScoreRange r = Range(double(int64_t(rng() % 40) - 20), double(int64_t(rng() % 40) - 20),
                                rng() % 2, rng() % 2);
          if (rng() % 3) r.max = r.min + 1;
          const Items gone = ModelByScore(m, r, false, 0, -1);
          EXPECT_EQ(z.EraseRangeByScore(r), gone.size());
          for (const Item& it : gone) m.Erase(it.second);
          break;
        }
        case 7:
          if (m.scores.size() > 0 && rng() % 4 == 0) {  // erase a rank range
            const size_t n = m.scores.size();
            size_t a = rng() % n, b = std::min(n - 1, a + rng() % 4);
            const Items all = m.All();
            EXPECT_EQ(z.EraseRangeByRank(a, b), b - a + 1);
            for (size_t k = a; k <= b; ++k) m.Erase(all[k].second);
          }
          break;
        default: {
          double s;
          const auto it = m.scores.find(member);
          ASSERT_EQ(z.Score(member, &s), it != m.scores.end());
          if (it != m.scores.end()) {
            EXPECT_EQ(s, it->second);
          }
        }
      }
      if (i % 25 == 0) {
        CheckAll(z, m, rng);
      }
      // The encoding follows Redis' rule: packed until a limit is crossed, then never back.
      if (z.encoding() == ZSet::kPacked) {
        EXPECT_LE(z.size(), ZSetMaxListpackEntries());
      }
    }
    CheckAll(z, m, rng);
    // Cloning keeps members, scores and encoding.
    ZSet* copy = z.Clone();
    EXPECT_EQ(AllOf(*copy), m.All());
    EXPECT_EQ(copy->encoding(), z.encoding());
    ShardDelete(copy);
  }
}

TEST(ZSetTest, ConversionBoundary) {
  ZSet z;
  for (size_t i = 0; i < ZSetMaxListpackEntries(); ++i) {
    z.Add("m" + std::to_string(i), double(i), 0, nullptr);
  }
  EXPECT_EQ(z.encoding(), ZSet::kPacked);
  EXPECT_EQ(z.size(), 128u);
  z.Add("m0", 5, 0, nullptr);  // an update does not convert
  EXPECT_EQ(z.encoding(), ZSet::kPacked);
  z.Add("extra", 1000, 0, nullptr);
  EXPECT_EQ(z.encoding(), ZSet::kLarge);
  EXPECT_EQ(z.size(), 129u);
  z.Erase("extra");
  EXPECT_EQ(z.encoding(), ZSet::kLarge);  // Redis never converts back on removal
  z.ConvertToPackedIfFits();
  EXPECT_EQ(z.encoding(), ZSet::kPacked);
  EXPECT_EQ(z.size(), 128u);

  ZSet y;
  y.Add(std::string(64, 'a'), 1, 0, nullptr);
  EXPECT_EQ(y.encoding(), ZSet::kPacked);
  y.Add(std::string(65, 'b'), 2, 0, nullptr);
  EXPECT_EQ(y.encoding(), ZSet::kLarge);
  y.ConvertToPackedIfFits();  // a long member stays large
  EXPECT_EQ(y.encoding(), ZSet::kLarge);
  EXPECT_EQ(ZSet::StartsLarge(64), ZSet::kPacked);
  EXPECT_EQ(ZSet::StartsLarge(65), ZSet::kLarge);
}

TEST(ZSetTest, AddFlags) {
  for (ZSet::Encoding enc : {ZSet::kPacked, ZSet::kLarge}) {
    ZSet z(enc);
    double out = -1;
    EXPECT_EQ(z.Add("a", 1, kZAddXx, &out), unsigned(kZAddOutNop));
    EXPECT_EQ(z.size(), 0u);
    EXPECT_EQ(z.Add("a", 1, kZAddNx, &out), unsigned(kZAddOutAdded));
    EXPECT_EQ(z.Add("a", 2, kZAddNx, &out), unsigned(kZAddOutNop));
    EXPECT_EQ(z.Add("a", 0, kZAddGt, &out), unsigned(kZAddOutNop));
    EXPECT_EQ(z.Add("a", 3, kZAddGt, &out), unsigned(kZAddOutUpdated));
    EXPECT_EQ(out, 3);
    EXPECT_EQ(z.Add("a", 5, kZAddLt, &out), unsigned(kZAddOutNop));
    EXPECT_EQ(z.Add("a", -1, kZAddLt | kZAddIncr, &out), unsigned(kZAddOutUpdated));
    EXPECT_EQ(out, 2);
    EXPECT_EQ(z.Add("a", 2, 0, &out), 0u);  // same score: neither added nor updated
    EXPECT_EQ(z.Add("b", 7, kZAddGt, &out), unsigned(kZAddOutAdded));  // GT adds new members
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(z.Add("c", inf, 0, &out), unsigned(kZAddOutAdded));
    EXPECT_EQ(z.Add("c", -inf, kZAddIncr, &out), unsigned(kZAddOutNan));
    double s;
    ASSERT_TRUE(z.Score("c", &s));
    EXPECT_EQ(s, inf);
    EXPECT_EQ(z.Add("d", std::nan(""), 0, &out), unsigned(kZAddOutNan));
  }
}

TEST(ZSetTest, OrderIsScoreThenMemcmp) {
  for (ZSet::Encoding enc : {ZSet::kPacked, ZSet::kLarge}) {
    ZSet z(enc);
    for (const std::string& m : std::vector<std::string>{"b", "a", "", "ab", std::string("\xff", 1),
                                                       std::string("a\0", 2)}) {
      z.Add(m, 1, 0, nullptr);
    }
    z.Add("z", 0, 0, nullptr);
    z.Add("-0", -0.0, 0, nullptr);
    Items expect = {{-0.0, "-0"}, {0, "z"}, {1, ""}, {1, "a"}, {1, std::string("a\0", 2)},
                    {1, "ab"}, {1, "b"}, {1, "\xff"}};
    EXPECT_EQ(AllOf(z), expect);
  }
}

TEST(ZSetTest, PackedLosesTheSignOfZeroLikeListpack) {
  ZSet packed(ZSet::kPacked), large(ZSet::kLarge);
  packed.Add("a", -0.0, 0, nullptr);
  large.Add("a", -0.0, 0, nullptr);
  double s;
  ASSERT_TRUE(packed.Score("a", &s));
  EXPECT_FALSE(std::signbit(s));
  ASSERT_TRUE(large.Score("a", &s));
  EXPECT_TRUE(std::signbit(s));
}

// The packed block stores short decimals and integers in 1-5 bytes and anything else as the raw
// double: every score must come back bit for bit, whatever its form, also after an in-place
// update (ZINCRBY) that changes the stored size.
TEST(ZSetTest, PackedScoresRoundTripExactly) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> scores = {0,         1,      -1,        0.5,     -9.5,    3.14,
                                0.1,       1e-5,   1e14,      -1e15,   1.7e9,   1732000000.123,
                                9007199254740991.0, 9007199254740992.0, 1e300, -1e-300,
                                4.9e-324,  inf,    -inf,      1.0 / 3, 2.5e-14, 123456789.987654};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    if (!std::isnan(d)) scores.push_back(d);
    scores.push_back(double(int64_t(rng() % 2000000) - 1000000) / double(1 + rng() % 10000));
  }
  for (double score : scores) {
    ZSet z(ZSet::kPacked);
    z.Add("m", 0.25, 0, nullptr);
    z.Add("n", score, 0, nullptr);
    z.Add("m", score, 0, nullptr);  // an update in place or a move
    double got;
    for (const char* member : {"m", "n"}) {
      ASSERT_TRUE(z.Score(member, &got));
      ASSERT_EQ(std::memcmp(&got, &score, 8), 0) << member << " " << score;
    }
    ASSERT_EQ(z.encoding(), ZSet::kPacked);
  }
}

// Small decimal scores take 2 bytes, not 8: ten 13-byte members with scores 0.5 .. 9.5 take
// 8 + 10 * (1 + 13 + 2) = 168 bytes, the allocator's 192-byte class (raw doubles: 228, so 256).
TEST(ZSetTest, PackedDecimalScoresAreCompact) {
  ZSet z(ZSet::kPacked);
  for (int j = 0; j < 10; ++j) {
    char member[16];
    std::snprintf(member, sizeof(member), "mem:%07d:%d", 42, j);
    z.Add(member, j + 0.5, 0, nullptr);
  }
  EXPECT_LE(z.MallocBytes(), 192u);
}

// MEMORY USAGE's figure is exactly what the set holds on the heap, index block included (a large
// block's size is not its request), and sampling extrapolates from alike members.
TEST(ZSetTest, MallocBytesIsTheHeapGrowth) {
  ShardHeap* heap = ShardHeap::Current();
  const size_t before = heap->used_bytes();
  ZSet* z = ShardNew<ZSet>(ZSet::kLarge);
  for (int j = 0; j < 30000; ++j) {
    char member[16];
    std::snprintf(member, sizeof(member), "member-%08d", j);
    z->Add(member, j, 0, nullptr);
  }
  const size_t grown = heap->used_bytes() - before;
  EXPECT_EQ(z->MallocBytes() + ShardHeap::UsableSize(z), grown);
  const double sampled = double(z->MallocBytes(5) + ShardHeap::UsableSize(z));
  EXPECT_NEAR(sampled, double(grown), 0.1 * double(grown));
  ShardDelete(z);
  EXPECT_EQ(heap->used_bytes(), before);
}

TEST(ZSetTest, LexRanges) {
  std::mt19937_64 rng(7);
  for (ZSet::Encoding enc : {ZSet::kPacked, ZSet::kLarge}) {
    ZSet z(enc);
    std::set<std::string> model;
    for (int i = 0; i < 100; ++i) {
      std::string m(1 + rng() % 3, 'a');
      for (char& c : m) c = char('a' + rng() % 4);
      z.Add(m, 0, 0, nullptr);
      model.insert(m);
    }
    const std::vector<std::string> bounds = {"-", "+", "[a", "(a", "[b", "(bb", "[c", "(dd",
                                             "[", "(", "[ddd", "(ab"};
    for (const std::string& lo : bounds) {
      for (const std::string& hi : bounds) {
        ZLexRange r;
        ASSERT_TRUE(ParseLexRange(lo, hi, &r));
        std::vector<std::string> in;
        for (const std::string& m : model) {
          if (r.AboveMin(m) && r.BelowMax(m)) in.push_back(m);
        }
        std::vector<std::string> got;
        z.RangeByLex(r, false, 0, -1, [&](std::string_view m, double) { got.emplace_back(m); });
        EXPECT_EQ(got, in) << lo << " " << hi;
        got.clear();
        z.RangeByLex(r, true, 1, 3, [&](std::string_view m, double) { got.emplace_back(m); });
        std::vector<std::string> rin(in.rbegin(), in.rend());
        std::vector<std::string> rexp;
        for (size_t i = 1; i < rin.size() && rexp.size() < 3; ++i) rexp.push_back(rin[i]);
        EXPECT_EQ(got, rexp) << lo << " " << hi;
        EXPECT_EQ(z.CountByLex(r), in.size());
      }
    }
    ZLexRange r;
    ASSERT_TRUE(ParseLexRange("[b", "(c", &r));
    const size_t n = z.CountByLex(r);
    EXPECT_EQ(z.EraseRangeByLex(r), n);
    EXPECT_EQ(z.CountByLex(r), 0u);
    EXPECT_EQ(z.size(), model.size() - n);
  }
  ZLexRange r;
  EXPECT_FALSE(ParseLexRange("a", "+", &r));
  EXPECT_FALSE(ParseLexRange("-", "++", &r));
  EXPECT_FALSE(ParseLexRange("", "+", &r));
}

TEST(ZSetTest, ParseScoreRange) {
  ZScoreRange r;
  ASSERT_TRUE(ParseScoreRange("(1.5", "+inf", &r));
  EXPECT_TRUE(r.minex);
  EXPECT_EQ(r.min, 1.5);
  EXPECT_TRUE(std::isinf(r.max));
  ASSERT_TRUE(ParseScoreRange("(", "-inf", &r));  // strtod of "" is 0, as in Redis
  EXPECT_EQ(r.min, 0);
  EXPECT_FALSE(ParseScoreRange("abc", "1", &r));
  EXPECT_FALSE(ParseScoreRange("1", "(x", &r));
  EXPECT_FALSE(ParseScoreRange("nan", "1", &r));
  EXPECT_FALSE(ParseScoreRange("(nan", "1", &r));
}

TEST(ZSetTest, HundredThousandMembersRanks) {
  ZSet z;
  Model m;
  std::mt19937_64 rng(99);
  for (int i = 0; i < 100000; ++i) {
    const std::string member = "member:" + std::to_string(rng() % 1000000);
    const double score = double(rng() % 50000);
    z.Add(member, score, 0, nullptr);
    m.Set(member, score);
  }
  for (int i = 0; i < 20000; ++i) {  // score updates: in place or moved, spans must follow
    const auto it = std::next(m.scores.begin(), rng() % 64);
    const std::string member = it->first;
    double score = rng() % 2 ? it->second + 0.5 : double(rng() % 50000);
    if (score == it->second) score += 1;
    EXPECT_EQ(z.Add(member, score, 0, nullptr), unsigned(kZAddOutUpdated));
    m.Set(member, score);
  }
  for (int i = 0; i < 5000; ++i) {  // some removals so spans are exercised
    const std::string member = "member:" + std::to_string(rng() % 1000000);
    EXPECT_EQ(z.Erase(member), m.scores.count(member) == 1);
    m.Erase(member);
  }
  ASSERT_EQ(z.encoding(), ZSet::kLarge);
  const Items all = m.All();
  ASSERT_EQ(z.size(), all.size());
  for (int i = 0; i < 2000; ++i) {
    const size_t rank = rng() % all.size();
    ASSERT_EQ(z.Rank(all[rank].second, false), int64_t(rank));
    ASSERT_EQ(z.Rank(all[rank].second, true), int64_t(all.size() - 1 - rank));
    std::string_view am;
    double as;
    z.At(rank, &am, &as);
    ASSERT_EQ(am, all[rank].second);
  }
  for (int i = 0; i < 200; ++i) {
    const size_t a = rng() % all.size();
    const size_t b = std::min(all.size() - 1, a + rng() % 100);
    ASSERT_EQ(Collect([&](ZSet::Visitor v) { z.RangeByRank(a, b, false, v); }),
              Items(all.begin() + a, all.begin() + b + 1));
    ZScoreRange r = Range(double(rng() % 50000), 0, rng() % 2, rng() % 2);
    r.max = r.min + double(rng() % 20);
    ASSERT_EQ(z.CountByScore(r), ModelByScore(m, r, false, 0, -1).size());
    ASSERT_EQ(Collect([&](ZSet::Visitor v) { z.RangeByScore(r, true, 1, 5, v); }),
              ModelByScore(m, r, true, 1, 5));
  }
  EXPECT_EQ(AllOf(z), all);
  // A scan visits every member, 100 at a time.
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int calls = 0;
  do {
    cursor = z.Scan(cursor, 100, [&](std::string_view mm, double) { seen.emplace(mm); });
    ++calls;
  } while (cursor != 0);
  EXPECT_EQ(seen.size(), all.size());
  EXPECT_GT(calls, 100);
  EXPECT_EQ(z.EraseRangeByRank(10, 20009), 20000u);
  EXPECT_EQ(z.size(), all.size() - 20000);
  Items rest(all.begin(), all.begin() + 10);
  rest.insert(rest.end(), all.begin() + 20010, all.end());
  EXPECT_EQ(AllOf(z), rest);
}

TEST(ZSetTest, ScanSurvivesChangesBetweenCalls) {
  ZSet z(ZSet::kLarge);
  for (int i = 0; i < 1000; ++i) z.Add("m" + std::to_string(i), double(i % 100), 0, nullptr);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int k = 0;
  do {
    cursor = z.Scan(cursor, 10, [&](std::string_view m, double) { seen.emplace(m); });
    // Add and remove members that are not part of the original set.
    z.Add("new" + std::to_string(k), double(k % 100), 0, nullptr);
    if (k > 2) z.Erase("new" + std::to_string(k - 2));
    ++k;
  } while (cursor != 0);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.count("m" + std::to_string(i))) << i;
}

}  // namespace
}  // namespace shardis::core

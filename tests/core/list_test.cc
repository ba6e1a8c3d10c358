#include "core/list.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "core/shard_heap.h"
#include "core/value_object.h"

namespace shardis::core {
namespace {

std::vector<std::string> Contents(const List& l) {
  std::vector<std::string> out;
  char scratch[kInt64BufSize];
  for (List::Iterator it = l.Begin(); it.Valid(); it.Next()) out.emplace_back(it.Get(scratch));
  return out;
}

std::vector<std::string> ContentsBackwards(const List& l) {
  std::vector<std::string> out;
  char scratch[kInt64BufSize];
  for (List::Iterator it = l.At(-1); it.Valid(); it.Prev()) out.emplace_back(it.Get(scratch));
  return {out.rbegin(), out.rend()};
}

// Restores the default node size after each test.
class ListTest : public ::testing::Test {
 protected:
  void TearDown() override { SetListMaxListpackSize(kListMaxListpackSizeDefault); }
};

TEST_F(ListTest, PushPopBothEnds) {
  List l;
  EXPECT_TRUE(l.empty());
  std::string out;
  EXPECT_FALSE(l.Pop(ListEnd::kHead, &out));
  l.Push(ListEnd::kTail, "b");
  l.Push(ListEnd::kHead, "a");
  l.Push(ListEnd::kTail, "12");
  l.Push(ListEnd::kTail, "-9223372036854775808");
  l.Push(ListEnd::kTail, "007");
  EXPECT_EQ(l.size(), 5u);
  EXPECT_EQ(l.node_count(), 1u);  // a small list is one node
  EXPECT_EQ(Contents(l),
            (std::vector<std::string>{"a", "b", "12", "-9223372036854775808", "007"}));
  ASSERT_TRUE(l.Pop(ListEnd::kTail, &out));
  EXPECT_EQ(out, "007");
  ASSERT_TRUE(l.Pop(ListEnd::kTail, &out));
  EXPECT_EQ(out, "-9223372036854775808");
  ASSERT_TRUE(l.Pop(ListEnd::kHead, &out));
  EXPECT_EQ(out, "a");
  EXPECT_TRUE(l.Verify());
}

TEST_F(ListTest, IntegersAreCompactAndExact) {
  List l;
  const std::vector<std::string> values = {
      "0",   "31",   "32",   "-1",  "127", "128",  "-128", "-129",  "32767", "-32768", "65536",
      "9223372036854775807", "-9223372036854775807", "1099511627776", "-0", "+1", "01", " 1",
      "1.5", "", "18446744073709551616"};
  for (const std::string& v : values) l.Push(ListEnd::kTail, v);
  EXPECT_EQ(Contents(l), values);
  EXPECT_EQ(ContentsBackwards(l), values);
  EXPECT_TRUE(l.Verify());
  // 1000 small integers take about 2 bytes each: well under one 8 KiB node.
  List ints;
  for (int i = 0; i < 1000; ++i) ints.Push(ListEnd::kTail, std::to_string(i % 30));
  EXPECT_EQ(ints.node_count(), 1u);
  EXPECT_LE(ints.NodeBytes(), 2600u);
}

TEST_F(ListTest, NodesStayUnderTheByteLimit) {
  List l;
  const std::string item(100, 'x');
  for (int i = 0; i < 1000; ++i) l.Push(ListEnd::kTail, item);
  EXPECT_GT(l.node_count(), 10u);
  EXPECT_LE(l.NodeBytes(), l.node_count() * 8192);
  for (int i = 0; i < 1000; ++i) l.Push(ListEnd::kHead, item);
  EXPECT_LE(l.NodeBytes(), l.node_count() * 8192);
  EXPECT_TRUE(l.Verify());
  // An element larger than a node gets its own.
  const std::string big(20000, 'b');
  l.Push(ListEnd::kTail, big);
  std::string out;
  ASSERT_TRUE(l.Index(-1, &out));
  EXPECT_EQ(out, big);
  ASSERT_TRUE(l.Index(-2, &out));
  EXPECT_EQ(out, item);
  EXPECT_TRUE(l.Verify());
}

TEST_F(ListTest, PosRankCountMaxlen) {
  List l;
  for (const char* v : {"a", "b", "c", "a", "1", "a", "b"}) l.Push(ListEnd::kTail, v);
  auto pos = [&](std::string_view v, int64_t rank, size_t count, size_t maxlen) {
    std::vector<size_t> out;
    l.Pos(v, rank, count, maxlen, [&](size_t i) { out.push_back(i); });
    return out;
  };
  EXPECT_EQ(pos("a", 1, 1, 0), (std::vector<size_t>{0}));
  EXPECT_EQ(pos("a", 2, 0, 0), (std::vector<size_t>{3, 5}));
  EXPECT_EQ(pos("a", -1, 0, 0), (std::vector<size_t>{5, 3, 0}));
  EXPECT_EQ(pos("a", -2, 1, 0), (std::vector<size_t>{3}));
  EXPECT_EQ(pos("a", 1, 0, 4), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(pos("b", -1, 0, 1), (std::vector<size_t>{6}));
  EXPECT_EQ(pos("1", 1, 0, 0), (std::vector<size_t>{4}));
  EXPECT_EQ(pos("01", 1, 0, 0), (std::vector<size_t>{}));
  EXPECT_EQ(pos("zz", 1, 0, 0), (std::vector<size_t>{}));
}

TEST_F(ListTest, CloneIsDeep) {
  List l;
  for (int i = 0; i < 5000; ++i) l.Push(ListEnd::kTail, "v" + std::to_string(i));
  List* c = l.Clone();
  EXPECT_EQ(Contents(*c), Contents(l));
  c->Push(ListEnd::kHead, "new");
  EXPECT_EQ(c->size(), l.size() + 1);
  EXPECT_TRUE(c->Verify());
  ShardDelete(c);
}

// packed_bytes() is the size of Redis' listpack of the same elements, whatever changed them.
TEST_F(ListTest, PackedBytesAreRedisListpackBytes) {
  auto listpack_of = [](const List& l) {
    ListpackBuilder lp;
    for (const std::string& v : Contents(l)) lp.Append(v);
    return lp.bytes();
  };
  List l;
  EXPECT_EQ(l.packed_bytes(), 7u);
  for (const char* v : {"a", "127", "128", "-4096", "40000", "-70000", "3000000000",
                        "9223372036854775807", "007", "-0", "1.5"}) {
    l.Push(ListEnd::kTail, v);
  }
  l.Push(ListEnd::kHead, std::string(100, 'y'));
  l.Push(ListEnd::kHead, std::string(5000, 'z'));
  EXPECT_EQ(l.packed_bytes(), listpack_of(l));
  ASSERT_TRUE(l.Set(3, std::string(70, 's')));
  ASSERT_TRUE(l.Insert("a", "12", /*after=*/true));
  EXPECT_EQ(l.Remove("128", 0), 1u);
  l.Trim(1, -2);
  EXPECT_EQ(l.packed_bytes(), listpack_of(l));
  EXPECT_TRUE(l.Verify());
}

// The encoding label follows Redis 7.2's t_list.c conversions (see list.h).
TEST_F(ListTest, EncodingLabelConvertsBothWays) {
  SetListMaxListpackSize(3);
  List l;
  EXPECT_TRUE(l.listpack());
  l.ConvertBeforeGrowing(3, 3);
  EXPECT_TRUE(l.listpack());
  for (const char* v : {"a", "b", "c"}) l.Push(ListEnd::kTail, v);
  l.ConvertBeforeGrowing(1, 1);  // a fourth element passes the count
  EXPECT_FALSE(l.listpack());
  l.Push(ListEnd::kTail, "d");
  std::string out;
  l.Pop(ListEnd::kTail, &out);
  l.ConvertAfterShrinking();  // 3 is not under half of 3
  EXPECT_FALSE(l.listpack());
  l.Pop(ListEnd::kTail, &out);
  l.Pop(ListEnd::kTail, &out);
  l.ConvertAfterShrinking();  // 1 is
  EXPECT_TRUE(l.listpack());
  // Built in one go: a listpack when it fits the limit, not half of it.
  for (const char* v : {"b", "c"}) l.Push(ListEnd::kTail, v);
  l.ConvertAfterBuilding();
  EXPECT_TRUE(l.listpack());
  l.ConvertAfterBuilding(/*try_listpack=*/false);
  EXPECT_FALSE(l.listpack());
  // An empty list (7 bytes) that is about to take `add` bytes in one element: listpack still?
  auto fits = [](size_t add) {
    List e;
    e.ConvertBeforeGrowing(add, 1);
    return e.listpack();
  };
  // A count fill still caps a listpack at 8192 bytes.
  EXPECT_TRUE(fits(8192 - 7));
  EXPECT_FALSE(fits(8192 - 6));
  // Size fills: -1 is 4096 bytes, below -5 counts as -5 (64 KiB).
  SetListMaxListpackSize(-1);
  EXPECT_TRUE(fits(4096 - 7));
  EXPECT_FALSE(fits(4096 - 6));
  SetListMaxListpackSize(-9);
  EXPECT_TRUE(fits(65536 - 7));
  EXPECT_FALSE(fits(65536 - 6));
  // Clones keep the label.
  List* c = l.Clone();
  EXPECT_FALSE(c->listpack());
  ShardDelete(c);
}

TEST_F(ListTest, FreesEverything) {
  ShardHeap* heap = ShardHeap::Current();
  const size_t before = heap->used_bytes();
  {
    List* l = ShardNew<List>();
    for (int i = 0; i < 10000; ++i) l->Push(ListEnd::kTail, std::string(i % 300, 'q'));
    l->Trim(100, 5000);
    l->Remove(std::string(7, 'q'), 0);
    ShardDelete(l);
  }
  EXPECT_EQ(heap->used_bytes(), before);
}

std::string RandomValue(std::mt19937_64& rng) {
  static const std::vector<std::string> kFixed = {
      "",   "a",  "b",   "0",   "1",   "-1",  "31", "32", "007", "-0", "abc", "+5",
      "9223372036854775807", "-9223372036854775808", "300", "-70000"};
  switch (rng() % 10) {
    case 0:
      return std::string(rng() % 300, static_cast<char>('a' + rng() % 3));
    case 1:
      return std::to_string(static_cast<int64_t>(rng()) >> (rng() % 64));
    case 2:
      if (rng() % 20 == 0) return std::string(16384 + rng() % 3000, 'L');  // beyond a node
      return std::string(120 + rng() % 20, 'm');                           // around 127/128
    default:
      return kFixed[rng() % kFixed.size()];
  }
}

// The model: std::deque with Redis' semantics for each operation.
void RandomOps(uint64_t seed, int ops, int fill) {
  SetListMaxListpackSize(fill);
  std::mt19937_64 rng(seed);
  List l;
  std::deque<std::string> m;
  std::string out;
  size_t max_size = 0, max_nodes = 0;
  auto rnd_index = [&]() -> int64_t {
    const int64_t n = static_cast<int64_t>(m.size()) + 3;
    return static_cast<int64_t>(rng() % (2 * n)) - n;
  };
  for (int op = 0; op < ops; ++op) {
    const int kind = static_cast<int>(rng() % 100);
    SCOPED_TRACE("seed " + std::to_string(seed) + " op " + std::to_string(op) + " kind " +
                 std::to_string(kind));
    if (kind < 25) {
      // Phases of growth (to over a thousand elements) and of shrinking.
      const size_t target = (op / 1500) % 2 == 0 ? 1500 : 30;
      const int burst = m.size() < target ? 16 : 2;
      for (int k = 1 + static_cast<int>(rng() % burst); k > 0; --k) {
        const std::string v = RandomValue(rng);
        if (rng() % 2) {
          l.Push(ListEnd::kHead, v);
          m.push_front(v);
        } else {
          l.Push(ListEnd::kTail, v);
          m.push_back(v);
        }
      }
    } else if (kind < 35) {
      const bool head = rng() % 2;
      const bool ok = l.Pop(head ? ListEnd::kHead : ListEnd::kTail, &out);
      ASSERT_EQ(ok, !m.empty());
      if (ok) {
        ASSERT_EQ(out, head ? m.front() : m.back());
        head ? m.pop_front() : m.pop_back();
      }
    } else if (kind < 40) {
      const bool head = rng() % 2;
      const size_t n = rng() % 20;
      std::vector<std::string> got, want;
      l.PopN(head ? ListEnd::kHead : ListEnd::kTail, n,
             [&](std::string_view v) { got.emplace_back(v); });
      for (size_t i = 0; i < n && !m.empty(); ++i) {
        want.push_back(head ? m.front() : m.back());
        head ? m.pop_front() : m.pop_back();
      }
      ASSERT_EQ(got, want);
    } else if (kind < 50) {
      const int64_t i = rnd_index();
      const int64_t norm = i < 0 ? i + static_cast<int64_t>(m.size()) : i;
      const bool in = norm >= 0 && norm < static_cast<int64_t>(m.size());
      ASSERT_EQ(l.Index(i, &out), in);
      if (in) {
        ASSERT_EQ(out, m[norm]);
      }
    } else if (kind < 57) {
      const int64_t i = rnd_index();
      const int64_t norm = i < 0 ? i + static_cast<int64_t>(m.size()) : i;
      const bool in = norm >= 0 && norm < static_cast<int64_t>(m.size());
      const std::string v = RandomValue(rng);
      ASSERT_EQ(l.Set(i, v), in);
      if (in) m[norm] = v;
    } else if (kind < 65) {
      const std::string pivot =
          m.empty() || rng() % 4 == 0 ? RandomValue(rng) : m[rng() % m.size()];
      const std::string v = RandomValue(rng);
      const bool after = rng() % 2;
      auto it = std::find(m.begin(), m.end(), pivot);
      ASSERT_EQ(l.Insert(pivot, v, after), it != m.end());
      if (it != m.end()) m.insert(after ? it + 1 : it, v);
    } else if (kind < 72) {
      const std::string v = m.empty() || rng() % 4 == 0 ? RandomValue(rng) : m[rng() % m.size()];
      const int64_t count = static_cast<int64_t>(rng() % 7) - 3;
      size_t removed = 0;
      if (count >= 0) {
        for (auto it = m.begin(); it != m.end();) {
          if (*it == v && (count == 0 || removed < static_cast<size_t>(count))) {
            it = m.erase(it);
            ++removed;
          } else {
            ++it;
          }
        }
      } else {
        for (size_t i = m.size(); i-- > 0;) {
          if (m[i] == v && removed < static_cast<size_t>(-count)) {
            m.erase(m.begin() + static_cast<int64_t>(i));
            ++removed;
          }
        }
      }
      ASSERT_EQ(l.Remove(v, count), removed);
    } else if (kind < 77) {
      // LTRIM, mostly small trims at the ends (the common queue pattern).
      const int64_t n = static_cast<int64_t>(m.size());
      int64_t start = rng() % 10 == 0 ? rnd_index() : static_cast<int64_t>(rng() % 3);
      int64_t stop = rng() % 10 == 0 ? rnd_index() : -1 - static_cast<int64_t>(rng() % 3);
      l.Trim(start, stop);
      if (start < 0) start += n;
      if (stop < 0) stop += n;
      if (start < 0) start = 0;
      if (start > stop || start >= n) {
        m.clear();
      } else {
        if (stop >= n) stop = n - 1;
        m.erase(m.begin() + stop + 1, m.end());
        m.erase(m.begin(), m.begin() + start);
      }
    } else if (kind < 80) {
      const size_t first = rng() % (m.size() + 2), n = rng() % 50;
      l.Erase(first, n);
      if (first < m.size()) {
        m.erase(m.begin() + first, m.begin() + std::min(m.size(), first + n));
      }
    } else if (kind < 90) {
      const int64_t start = rnd_index(), stop = rnd_index();
      size_t first, count;
      std::vector<std::string> got, want;
      if (l.NormalizeRange(start, stop, &first, &count)) {
        l.ForRange(first, count, [&](std::string_view v) { got.emplace_back(v); });
      }
      int64_t s = start, e = stop, n = static_cast<int64_t>(m.size());
      if (s < 0) s += n;
      if (e < 0) e += n;
      if (s < 0) s = 0;
      if (!(s > e || s >= n)) {
        if (e >= n) e = n - 1;
        for (int64_t i = s; i <= e; ++i) want.push_back(m[i]);
      }
      ASSERT_EQ(got, want);
    } else if (kind < 95) {
      const std::string v = m.empty() || rng() % 4 == 0 ? RandomValue(rng) : m[rng() % m.size()];
      int64_t rank = static_cast<int64_t>(rng() % 5) - 2;
      if (rank == 0) rank = 1;
      const size_t count = rng() % 4, maxlen = rng() % 3 == 0 ? rng() % 20 : 0;
      std::vector<size_t> got, want;
      l.Pos(v, rank, count, maxlen, [&](size_t i) { got.push_back(i); });
      int64_t skip = (rank > 0 ? rank : -rank) - 1;
      const size_t n = m.size();
      for (size_t seen = 0; seen < n && (maxlen == 0 || seen < maxlen); ++seen) {
        const size_t i = rank > 0 ? seen : n - 1 - seen;
        if (m[i] != v) continue;
        if (skip > 0) {
          --skip;
          continue;
        }
        want.push_back(i);
        if (want.size() == count) break;
      }
      ASSERT_EQ(got, want);
    } else {
      ASSERT_TRUE(l.Verify());
      ASSERT_EQ(Contents(l), std::vector<std::string>(m.begin(), m.end()));
      ASSERT_EQ(ContentsBackwards(l), std::vector<std::string>(m.begin(), m.end()));
    }
    ASSERT_EQ(l.size(), m.size());
    max_size = std::max(max_size, m.size());
    max_nodes = std::max(max_nodes, l.node_count());
  }
  // The stream must have grown the list over many nodes, or the boundaries were not exercised.
  EXPECT_GE(max_size, 200u);
  EXPECT_GE(max_nodes, fill > 0 ? 50u : 3u);
  ASSERT_TRUE(l.Verify());
  ASSERT_EQ(Contents(l), std::vector<std::string>(m.begin(), m.end()));
}

TEST_F(ListTest, RandomAgainstDequeDefaultNodes) {
  for (uint64_t seed = 1; seed <= 6; ++seed) RandomOps(seed, 6000, -2);
}

TEST_F(ListTest, RandomAgainstDequeTinyNodes) {
  // Three entries per node: every operation crosses node boundaries.
  for (uint64_t seed = 10; seed <= 15; ++seed) RandomOps(seed, 6000, 3);
}

TEST_F(ListTest, RandomAgainstDequeOneEntryNodes) {
  for (uint64_t seed = 20; seed <= 22; ++seed) RandomOps(seed, 3000, 1);
}

TEST_F(ListTest, RandomAgainstDeque4KiBNodes) {
  for (uint64_t seed = 30; seed <= 32; ++seed) RandomOps(seed, 6000, -1);
}

TEST_F(ListTest, LargeListIndexFromBothEnds) {
  List l;
  std::vector<std::string> m;
  for (int i = 0; i < 100000; ++i) {
    m.push_back("item:" + std::to_string(i));
    l.Push(ListEnd::kTail, m.back());
  }
  std::string out;
  for (int64_t i : {0, 1, 4999, 50000, 99998, 99999}) {
    ASSERT_TRUE(l.Index(i, &out));
    EXPECT_EQ(out, m[i]);
    ASSERT_TRUE(l.Index(i - 100000, &out));
    EXPECT_EQ(out, m[i]);
  }
  EXPECT_FALSE(l.Index(100000, &out));
  EXPECT_FALSE(l.Index(-100001, &out));
  // Nodes are well filled: the data costs about its size plus ~12%.
  size_t data = 0;
  for (const auto& s : m) data += s.size() + 2;
  EXPECT_LE(l.NodeBytes(), data + data / 4);
}

}  // namespace
}  // namespace shardis::core

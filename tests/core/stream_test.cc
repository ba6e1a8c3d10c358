#include "core/stream.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace shardis::core {
namespace {

using Model = std::map<StreamID, std::vector<std::string>>;

std::vector<std::pair<StreamID, std::vector<std::string>>> All(const Stream& s, bool rev = false,
                                                               StreamID a = StreamID::Min(),
                                                               StreamID b = StreamID::Max()) {
  std::vector<std::pair<StreamID, std::vector<std::string>>> out;
  s.Range(a, b, rev, [&](StreamID id, const Stream::FieldValues& fv) {
    out.emplace_back(id, std::vector<std::string>(fv.begin(), fv.end()));
    return true;
  });
  return out;
}

void ExpectEqualModel(const Stream& s, const Model& m) {
  auto got = All(s);
  ASSERT_EQ(got.size(), m.size());
  ASSERT_EQ(s.length(), m.size());
  size_t i = 0;
  for (const auto& [id, fv] : m) {
    EXPECT_EQ(got[i].first, id);
    EXPECT_EQ(got[i].second, fv);
    ++i;
  }
  auto rev = All(s, true);
  ASSERT_EQ(rev.size(), m.size());
  i = m.size();
  for (const auto& [id, fv] : m) {
    --i;
    EXPECT_EQ(rev[i].first, id);
  }
}

void Add(Stream* s, Model* m, StreamID id, std::vector<std::string> fv) {
  std::vector<std::string_view> v(fv.begin(), fv.end());
  s->Append(id, v);
  (*m)[id] = fv;
}

TEST(StreamIdTest, Parse) {
  StreamID id;
  bool seq_given;
  EXPECT_TRUE(ParseStreamID("5-3", 0, true, &id));
  EXPECT_EQ(id, (StreamID{5, 3}));
  EXPECT_TRUE(ParseStreamID("7", 9, true, &id));
  EXPECT_EQ(id, (StreamID{7, 9}));
  EXPECT_FALSE(ParseStreamID("-", 0, true, &id));
  EXPECT_TRUE(ParseStreamID("-", 0, false, &id));
  EXPECT_EQ(id, StreamID::Min());
  EXPECT_TRUE(ParseStreamID("+", 0, false, &id));
  EXPECT_EQ(id, StreamID::Max());
  EXPECT_FALSE(ParseStreamID("1--5", 0, true, &id));  // string2ll reads -5: negative
  EXPECT_TRUE(ParseStreamID(" 1-+3", 0, true, &id));   // strtoull accepts these
  EXPECT_EQ(id, (StreamID{1, 3}));
  EXPECT_FALSE(ParseStreamID("", 0, true, &id));
  EXPECT_FALSE(ParseStreamID("1-", 0, true, &id));
  EXPECT_FALSE(ParseStreamID("a-1", 0, true, &id));
  EXPECT_TRUE(ParseStreamID("18446744073709551615-18446744073709551615", 0, true, &id));
  EXPECT_EQ(id, StreamID::Max());
  EXPECT_FALSE(ParseStreamID("18446744073709551616", 0, true, &id));
  EXPECT_FALSE(ParseStreamID("5-*", 0, true, &id));
  EXPECT_TRUE(ParseStreamID("5-*", 0, true, &id, &seq_given));
  EXPECT_FALSE(seq_given);
  EXPECT_EQ(id.ms, 5u);
  EXPECT_TRUE(ParseStreamID("5-1", 0, true, &id, &seq_given));
  EXPECT_TRUE(seq_given);
}

TEST(StreamIdTest, OrderAndIncr) {
  EXPECT_LT((StreamID{1, 5}), (StreamID{2, 0}));
  EXPECT_LT((StreamID{1, 5}), (StreamID{1, 6}));
  StreamID id{1, UINT64_MAX};
  EXPECT_TRUE(id.Incr());
  EXPECT_EQ(id, (StreamID{2, 0}));
  EXPECT_TRUE(id.Decr());
  EXPECT_EQ(id, (StreamID{1, UINT64_MAX}));
  StreamID max = StreamID::Max();
  EXPECT_FALSE(max.Incr());
  StreamID min;
  EXPECT_FALSE(min.Decr());
  EXPECT_EQ((StreamID{12, 3}).ToString(), "12-3");
}

TEST(StreamTest, AppendRangeAndNodeSplits) {
  Stream s;
  Model m;
  for (uint64_t i = 1; i <= 1000; ++i) {
    if (i % 3 == 0) {
      Add(&s, &m, {i, 0}, {"other", std::to_string(i)});
    } else {
      Add(&s, &m, {i, 0}, {"a", std::to_string(i), "b", "x"});
    }
  }
  ExpectEqualModel(s, m);
  EXPECT_EQ(s.node_count(), 10u);  // 100 entries per node
  EXPECT_EQ(s.first_id(), (StreamID{1, 0}));
  EXPECT_EQ(s.last_id(), (StreamID{1000, 0}));
  EXPECT_EQ(s.entries_added(), 1000u);
  auto part = All(s, false, {150, 0}, {250, 0});
  ASSERT_EQ(part.size(), 101u);
  EXPECT_EQ(part.front().first, (StreamID{150, 0}));
  auto rpart = All(s, true, {150, 0}, {250, 0});
  ASSERT_EQ(rpart.size(), 101u);
  EXPECT_EQ(rpart.front().first, (StreamID{250, 0}));
  EXPECT_EQ(rpart.front().second, (std::vector<std::string>{"a", "250", "b", "x"}));
}

TEST(StreamTest, BigValuesSplitByBytes) {
  Stream s;
  Model m;
  std::string big(1500, 'x');
  for (uint64_t i = 1; i <= 10; ++i) Add(&s, &m, {i, 0}, {"f", big});
  ExpectEqualModel(s, m);
  EXPECT_GE(s.node_count(), 4u);
}

TEST(StreamTest, DeleteKeepsNodeCountForSplits) {
  Stream s;
  Model m;
  for (uint64_t i = 1; i <= 100; ++i) Add(&s, &m, {i, 0}, {"a", "1"});
  for (uint64_t i = 1; i <= 99; ++i) {
    ASSERT_TRUE(s.Delete({i, 0}));
    m.erase({i, 0});
  }
  EXPECT_FALSE(s.Delete({5, 0}));
  ExpectEqualModel(s, m);
  EXPECT_EQ(s.first_id(), (StreamID{100, 0}));
  Add(&s, &m, {101, 0}, {"a", "2"});
  EXPECT_EQ(s.node_count(), 2u);  // the first node is full, counting its deleted entries
  ASSERT_TRUE(s.Delete({100, 0}));
  m.erase({100, 0});
  EXPECT_EQ(s.node_count(), 1u);  // an emptied node goes away
  ExpectEqualModel(s, m);
}

TEST(StreamTest, TrimExactAndApprox) {
  Stream s;
  Model m;
  for (uint64_t i = 1; i <= 250; ++i) Add(&s, &m, {i, 0}, {"a", std::to_string(i)});
  // Approximate: whole nodes only.
  EXPECT_EQ(s.Trim(120, {}, true, 0), 100);
  EXPECT_EQ(s.length(), 150u);
  EXPECT_EQ(s.Trim(120, {}, true, 0), 0);
  // Exact.
  EXPECT_EQ(s.Trim(120, {}, false, 0), 30);
  for (uint64_t i = 1; i <= 130; ++i) m.erase({i, 0});
  ExpectEqualModel(s, m);
  // MINID.
  EXPECT_EQ(s.Trim(-1, {200, 0}, false, 0), 69);
  for (uint64_t i = 1; i < 200; ++i) m.erase({i, 0});
  ExpectEqualModel(s, m);
  EXPECT_EQ(s.first_id(), (StreamID{200, 0}));
  // LIMIT caps whole-node removals.
  Stream t;
  Model tm;
  for (uint64_t i = 1; i <= 300; ++i) Add(&t, &tm, {i, 0}, {"a", "b"});
  EXPECT_EQ(t.Trim(0, {}, true, 150), 100);
  EXPECT_EQ(t.Trim(0, {}, false, 0), 200);
  EXPECT_EQ(t.length(), 0u);
  EXPECT_EQ(t.first_id(), StreamID{});
  EXPECT_EQ(t.last_id(), (StreamID{300, 0}));
}

TEST(StreamTest, ApproxMinIdSeesDeletedLastEntryOfANode) {
  // As Redis, whose listpack keeps a deleted entry flagged: a node ends at its last appended ID.
  Stream s;
  Model m;
  for (uint64_t i = 1; i <= 101; ++i) Add(&s, &m, {i, 0}, {"a", "1"});
  ASSERT_TRUE(s.Delete({100, 0}));
  EXPECT_EQ(s.Trim(-1, {100, 0}, true, 0), 0);
  EXPECT_EQ(s.Trim(-1, {101, 0}, true, 0), 99);
  EXPECT_EQ(s.length(), 1u);
}

TEST(StreamTest, RandomAgainstModel) {
  std::mt19937 rng(7);
  Stream s;
  Model m;
  uint64_t next = 1;
  for (int step = 0; step < 5000; ++step) {
    int op = int(rng() % 10);
    if (op < 6) {
      next += rng() % 3;
      StreamID id{next, rng() % 4};
      if (id <= s.last_id()) id = StreamID{s.last_id().ms, s.last_id().seq + 1};
      Add(&s, &m, id, {"f" + std::to_string(rng() % 3), std::to_string(step)});
    } else if (op < 9 && !m.empty()) {
      auto it = m.begin();
      std::advance(it, rng() % m.size());
      ASSERT_TRUE(s.Delete(it->first));
      m.erase(it);
    } else if (!m.empty()) {
      int64_t maxlen = int64_t(rng() % (m.size() + 1));
      s.Trim(maxlen, {}, false, 0);
      while (int64_t(m.size()) > maxlen) m.erase(m.begin());
    }
    ASSERT_EQ(s.last_valid_id(), m.empty() ? StreamID{} : m.rbegin()->first);
    ASSERT_EQ(s.first_id(), m.empty() ? StreamID{} : m.begin()->first);
  }
  ExpectEqualModel(s, m);
  Stream* c = s.Clone();
  ExpectEqualModel(*c, m);
  ShardDelete(c);
}

TEST(StreamTest, GroupsAndPel) {
  Stream s;
  Model m;
  for (uint64_t i = 1; i <= 5; ++i) Add(&s, &m, {i, 0}, {"a", "1"});
  StreamGroup* g = s.CreateGroup("g", {0, 0}, 0);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(s.CreateGroup("g", {0, 0}, 0), nullptr);
  bool created;
  StreamConsumer* alice = g->GetOrCreateConsumer("alice", 100, &created);
  EXPECT_TRUE(created);
  StreamConsumer* bob = g->GetOrCreateConsumer("bob", 100, &created);
  EXPECT_EQ(g->GetOrCreateConsumer("alice", 200, &created), alice);
  EXPECT_FALSE(created);
  // Redis 7.2: a new consumer was seen now and never active.
  EXPECT_EQ(bob->seen_time, 100);
  EXPECT_EQ(bob->active_time, -1);
  alice->active_time = 150;
  for (uint64_t i = 1; i <= 3; ++i) g->Assign({i, 0}, alice, 1000);
  EXPECT_EQ(g->pel.size(), 3u);
  EXPECT_EQ(alice->pel.size(), 3u);
  // Reassigning moves the entry between consumers' PELs.
  StreamNack* n = g->Assign({2, 0}, bob, 2000);
  EXPECT_EQ(n->consumer, bob);
  EXPECT_EQ(n->delivery_time, 2000);
  EXPECT_EQ(alice->pel.size(), 2u);
  EXPECT_EQ(bob->pel.size(), 1u);
  EXPECT_TRUE(g->Ack({1, 0}));
  EXPECT_FALSE(g->Ack({1, 0}));
  EXPECT_EQ(alice->pel.size(), 1u);
  // Clone keeps the PEL and consumers consistent.
  Stream* c = s.Clone();
  StreamGroup* cg = c->FindGroup("g");
  ASSERT_NE(cg, nullptr);
  EXPECT_EQ(cg->pel.size(), 2u);
  EXPECT_EQ(cg->FindConsumer("bob")->pel.size(), 1u);
  EXPECT_EQ(cg->pel.at({2, 0})->consumer, cg->FindConsumer("bob"));
  EXPECT_EQ(cg->FindConsumer("alice")->active_time, 150);
  EXPECT_EQ(cg->FindConsumer("bob")->active_time, -1);
  ShardDelete(c);
  EXPECT_EQ(g->DeleteConsumer("alice"), 1u);
  EXPECT_EQ(g->pel.size(), 1u);
  EXPECT_EQ(g->FindConsumer("alice"), nullptr);
  EXPECT_TRUE(s.DestroyGroup("g"));
  EXPECT_FALSE(s.DestroyGroup("g"));
}

TEST(StreamTest, LagHelpers) {
  Stream s;
  Model m;
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({5, 0}), 0);
  for (uint64_t i = 1; i <= 5; ++i) Add(&s, &m, {i, 0}, {"a", "1"});
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({5, 0}), 5);
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({1, 0}), 1);
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({0, 5}), 0);
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({3, 0}), -1);
  EXPECT_EQ(s.EstimateDistanceFromFirstEverEntry({6, 0}), -1);
  EXPECT_FALSE(s.RangeHasTombstones({0, 0}, StreamID::Max()));
  s.Delete({3, 0});
  s.set_max_deleted_entry_id({3, 0});
  EXPECT_TRUE(s.RangeHasTombstones({0, 0}, StreamID::Max()));
  EXPECT_FALSE(s.RangeHasTombstones({4, 0}, StreamID::Max()));
}

}  // namespace
}  // namespace shardis::core

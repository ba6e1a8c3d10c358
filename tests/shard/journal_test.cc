// ShardJournal records and JournalMerger's serial order: each shard's records in their order, a
// transaction's commands where the markers of all its shards are, SELECT when the database
// changes, MULTI/EXEC around a payload of several commands.
#include "shard/journal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/aof_reader.h"

namespace shardis::shard {
namespace {

// The RESP of one command, for the expected outputs.
std::string Resp(std::vector<std::string_view> args) {
  std::string out;
  core::AppendRespCommand(&out, args);
  return out;
}

TEST(JournalTest, RecordsRoundTrip) {
  ShardJournal j;
  j.set_on(true);
  const std::string_view set[] = {"SET", "k", "v"};
  j.AppendCommand(3, set);
  j.AppendMarker(77, 2);
  JournalUnit unit;
  unit.Add(1, set);
  j.AppendPayload(77, unit);
  EXPECT_EQ(j.seq(), 2u);  // payloads are not part of the shard's order
  ShardJournal::Chunk c = j.Take();
  EXPECT_EQ(c.end_seq, 2u);
  size_t pos = 0;
  JournalRecord r;
  ASSERT_TRUE(NextJournalRecord(c.records, &pos, &r));
  EXPECT_EQ(r.kind, JournalRecord::kCommand);
  EXPECT_EQ(r.db, 3);
  EXPECT_EQ(r.resp, Resp({"SET", "k", "v"}));
  ASSERT_TRUE(NextJournalRecord(c.records, &pos, &r));
  EXPECT_EQ(r.kind, JournalRecord::kMarker);
  EXPECT_EQ(r.id, 77u);
  EXPECT_EQ(r.shards, 2u);
  EXPECT_FALSE(NextJournalRecord(c.records, &pos, &r));
  pos = 0;
  ASSERT_TRUE(NextJournalRecord(c.payloads, &pos, &r));
  EXPECT_EQ(r.kind, JournalRecord::kPayload);
  EXPECT_EQ(r.id, 77u);
  EXPECT_EQ(r.commands, 1u);
  EXPECT_EQ(r.db, 1);
  EXPECT_EQ(r.resp, Resp({"SET", "k", "v"}));
  EXPECT_TRUE(j.Take().records.empty());
}

// A request recorded as the client sent it is the same record as its arguments encoded.
TEST(JournalTest, RequestIsRecordedAsItIs) {
  ShardJournal j;
  j.set_on(true);
  const std::string_view set[] = {"set", "key", "value"};
  j.AppendCommand(2, set);
  j.AppendRequest(2, Resp({"set", "key", "value"}));
  EXPECT_EQ(j.seq(), 2u);
  EXPECT_EQ(j.appended_bytes(), 2 * (6 + Resp({"set", "key", "value"}).size()));
  ShardJournal::Chunk c = j.Take();
  size_t pos = 0;
  JournalRecord first, second;
  ASSERT_TRUE(NextJournalRecord(c.records, &pos, &first));
  ASSERT_TRUE(NextJournalRecord(c.records, &pos, &second));
  EXPECT_FALSE(NextJournalRecord(c.records, &pos, &second));
  EXPECT_EQ(second.kind, JournalRecord::kCommand);
  EXPECT_EQ(second.db, 2);
  EXPECT_EQ(second.resp, first.resp);
}

TEST(JournalTest, UnitSelectsBetweenDatabases) {
  JournalUnit unit;
  const std::string_view a[] = {"SET", "a", "1"};
  const std::string_view b[] = {"SET", "b", "2"};
  unit.Add(0, a);
  unit.Add(0, b);
  unit.Add(5, a);
  EXPECT_EQ(unit.commands, 3u);
  EXPECT_EQ(unit.first_db, 0);
  EXPECT_EQ(unit.last_db, 5);
  EXPECT_EQ(unit.resp, Resp({"SET", "a", "1"}) + Resp({"SET", "b", "2"}) + Resp({"SELECT", "5"}) +
                           Resp({"SET", "a", "1"}));
}

TEST(JournalTest, MergerPlacesTransactionsAtTheirMarkers) {
  // Shard 0: SET x 1, [T], SET x 2.  Shard 1: SET y 1, SET y 2, [T], DEL y.
  // T = MSET x 9 y 9 (one command), its payload from a coordinator on shard 1.
  ShardJournal s0, s1;
  s0.set_on(true);
  s1.set_on(true);
  auto cmd = [](ShardJournal& j, int db, std::vector<std::string_view> args) {
    j.AppendCommand(db, args);
  };
  cmd(s0, 0, {"SET", "x", "1"});
  s0.AppendMarker(5, 2);
  cmd(s0, 0, {"SET", "x", "2"});
  cmd(s1, 0, {"SET", "y", "1"});
  JournalMerger merger(2);
  core::PageAlignedString out;
  merger.Add(0, s0.Take());
  merger.Drain(&out);
  // Shard 0 stops at its marker: the rest of the transaction is not known yet.
  EXPECT_EQ(std::string_view(out), Resp({"SELECT", "0"}) + Resp({"SET", "x", "1"}));
  EXPECT_EQ(merger.placed_seq(0), 1u);  // what appendfsync always may call durable after a sync
  cmd(s1, 0, {"SET", "y", "2"});
  s1.AppendMarker(5, 2);
  cmd(s1, 0, {"DEL", "y"});
  merger.Add(1, s1.Take());
  out.clear();
  merger.Drain(&out);
  EXPECT_EQ(std::string_view(out), Resp({"SET", "y", "1"}) + Resp({"SET", "y", "2"}));  // waiting for the payload
  EXPECT_TRUE(merger.waiting());
  // What a stop that waits logs: both shards at T's marker, its payload not in yet.
  EXPECT_EQ(merger.WaitingReport(),
            "transaction 5: markers at the head of 2 shard(s), payload missing; "
            "shard 0 waits at record 2, the marker of transaction 5 over 2 shard(s); "
            "shard 1 waits at record 3, the marker of transaction 5 over 2 shard(s); ");
  JournalUnit unit;
  unit.Add(0, std::vector<std::string_view>{"MSET", "x", "9", "y", "9"});
  s1.AppendPayload(5, unit);
  merger.Add(1, s1.Take());
  out.clear();
  EXPECT_FALSE(merger.Drain(&out));
  EXPECT_EQ(std::string_view(out), Resp({"MSET", "x", "9", "y", "9"}) + Resp({"SET", "x", "2"}) + Resp({"DEL", "y"}));
  EXPECT_FALSE(merger.waiting());
  EXPECT_EQ(merger.placed_seq(0), 3u);
  EXPECT_EQ(merger.placed_seq(1), 4u);
  EXPECT_EQ(merger.placed_seq(1), s1.seq());
}

// A merger that starts after a journal recorded (the AOF turned on again) counts from the first
// record it is given.
TEST(JournalTest, PlacedSeqStartsAtTheFirstChunk) {
  ShardJournal j;
  j.set_on(true);
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "a", "1"});
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "b", "1"});
  j.Take();  // an earlier writer's
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "c", "1"});
  JournalMerger merger(1);
  ShardJournal::Chunk chunk = j.Take();
  EXPECT_EQ(chunk.first_seq, 3u);
  EXPECT_EQ(chunk.end_seq, 3u);
  merger.Add(0, std::move(chunk));
  EXPECT_EQ(merger.placed_seq(0), 2u);
  core::PageAlignedString out;
  merger.Drain(&out);
  EXPECT_EQ(merger.placed_seq(0), 3u);
  merger.Add(0, j.Take());  // empty
  EXPECT_EQ(merger.placed_seq(0), 3u);
}

TEST(JournalTest, EffectOfSeveralCommandsIsOneMultiExecRecord) {
  ShardJournal j;
  j.set_on(true);
  j.AppendEffect(0, std::vector<std::vector<std::string>>{});  // nothing to journal
  EXPECT_EQ(j.seq(), 0u);
  JournalEffect one;
  one.Add({"SREM", "s", "a"});
  j.AppendEffect(1, one.commands());
  JournalEffect two;
  two.Add({"XCLAIM", "s", "g", "c", "0", "1-0"});
  two.Add({"XCLAIM", "s", "g", "c", "0", "2-0"});
  j.AppendEffect(1, two.commands());
  EXPECT_EQ(j.seq(), 2u);
  JournalMerger merger(1);
  merger.Add(0, j.Take());
  core::PageAlignedString out;
  merger.Drain(&out);
  EXPECT_EQ(std::string_view(out), Resp({"SELECT", "1"}) + Resp({"SREM", "s", "a"}) + Resp({"MULTI"}) +
                     Resp({"XCLAIM", "s", "g", "c", "0", "1-0"}) +
                     Resp({"XCLAIM", "s", "g", "c", "0", "2-0"}) + Resp({"EXEC"}));
  EXPECT_EQ(merger.placed_seq(0), 2u);
}

TEST(JournalTest, EffectSetToNoneJournalsNothing) {
  JournalEffect e;
  EXPECT_FALSE(e.set());
  e.Add({"SREM", "s", "a"});
  e.None();
  EXPECT_TRUE(e.set());
  EXPECT_TRUE(e.commands().empty());
  e.Replace({"DEL", "s"});
  ASSERT_EQ(e.commands().size(), 1u);
  e.Clear();
  EXPECT_FALSE(e.set());
}

TEST(JournalTest, MergerWrapsSeveralCommandsAndSkipsEmptyPayloads) {
  ShardJournal s0, s1;
  s0.AppendMarker(1, 2);
  s1.AppendMarker(1, 2);
  s0.AppendMarker(2, 1);  // a one-shard transaction that changed nothing
  s0.AppendCommand(2, std::vector<std::string_view>{"INCR", "n"});
  JournalUnit exec;
  exec.Add(0, std::vector<std::string_view>{"SET", "a", "1"});
  exec.Add(3, std::vector<std::string_view>{"SET", "b", "2"});
  s1.AppendPayload(1, exec);
  s1.AppendPayload(2, JournalUnit());
  JournalMerger merger(2);
  merger.Add(0, s0.Take());
  merger.Add(1, s1.Take());
  core::PageAlignedString out;
  merger.Drain(&out);
  EXPECT_EQ(std::string_view(out), Resp({"SELECT", "0"}) + Resp({"MULTI"}) + Resp({"SET", "a", "1"}) +
                     Resp({"SELECT", "3"}) + Resp({"SET", "b", "2"}) + Resp({"EXEC"}) +
                     Resp({"SELECT", "2"}) + Resp({"INCR", "n"}));
  EXPECT_FALSE(merger.waiting());
}

// A rewrite's cut (a payload with `rotate`) stops the drain right after it: what follows goes to
// the next file, which selects its database again.
TEST(JournalTest, MergerStopsAtARotation) {
  ShardJournal s0, s1;
  s0.AppendCommand(0, std::vector<std::string_view>{"SET", "before", "1"});
  s0.AppendMarker(9, 2);
  s1.AppendMarker(9, 2);
  s1.AppendCommand(0, std::vector<std::string_view>{"SET", "after", "1"});
  JournalUnit cut;
  cut.rotate = true;
  s0.AppendPayload(9, cut);
  JournalMerger merger(2);
  merger.Add(0, s0.Take());
  merger.Add(1, s1.Take());
  core::PageAlignedString first, second;
  EXPECT_TRUE(merger.Drain(&first));
  EXPECT_EQ(std::string_view(first), Resp({"SELECT", "0"}) + Resp({"SET", "before", "1"}));
  EXPECT_FALSE(merger.Drain(&second));
  EXPECT_EQ(std::string_view(second), Resp({"SELECT", "0"}) + Resp({"SET", "after", "1"}));
}

// Transactions that share shards conclude in the same order on all of them: the merger places
// them in that order whatever order the chunks arrive in.
TEST(JournalTest, MergerOrdersTransactionsSharingShards) {
  ShardJournal s[3];
  for (uint64_t id = 1; id <= 50; ++id) {
    const std::string v = std::to_string(id);
    // Transaction id involves shards id % 3 and (id + 1) % 3.
    const unsigned a = id % 3, b = (id + 1) % 3;
    s[a].AppendMarker(id, 2);
    s[b].AppendMarker(id, 2);
    s[(id + 2) % 3].AppendCommand(0, std::vector<std::string_view>{"SET", "other", v});
    JournalUnit unit;
    unit.Add(0, std::vector<std::string_view>{"SET", "t", v});
    s[id % 2].AppendPayload(id, unit);
  }
  JournalMerger merger(3);
  core::PageAlignedString out;
  merger.Add(2, s[2].Take());
  merger.Drain(&out);
  merger.Add(1, s[1].Take());
  merger.Drain(&out);
  merger.Add(0, s[0].Take());
  merger.Drain(&out);
  EXPECT_FALSE(merger.waiting());
  // Every transaction's SET t comes in id order.
  size_t at = 0;
  for (uint64_t id = 1; id <= 50; ++id) {
    const std::string set = Resp({"SET", "t", std::to_string(id)});
    const size_t found = out.find(set, at);
    ASSERT_NE(found, std::string::npos) << id;
    at = found + set.size();
  }
}


// The backlog bound: a journal whose records the writer has not written past kBacklogLimit says
// so, and stops saying so once the writer has caught up.
TEST(JournalTest, BacklogOverItsLimitIsFlagged) {
  ShardJournal j;
  j.set_on(true);
  const std::string big(ShardJournal::kBacklogLimit / 2, 'x');
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "a", big});
  EXPECT_FALSE(j.over_backlog_limit());
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "b", big});
  EXPECT_TRUE(j.over_backlog_limit());
  EXPECT_GT(j.backlog_bytes(), ShardJournal::kBacklogLimit);
  JournalMerger merger(1);
  merger.Add(0, j.Take());
  core::PageAlignedString out;
  merger.Drain(&out);
  EXPECT_EQ(merger.placed_bytes(0), j.appended_bytes());
  j.set_written_bytes(merger.placed_bytes(0));  // the writer wrote it all
  EXPECT_EQ(j.backlog_bytes(), 0u);
  j.AppendCommand(0, std::vector<std::string_view>{"SET", "c", "1"});
  EXPECT_FALSE(j.over_backlog_limit());
}

}  // namespace
}  // namespace shardis::shard

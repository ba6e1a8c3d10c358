// Stream commands (XADD ... XSETID) with Redis 7.0's semantics, reply shapes and error texts.
// Single-key commands run on the key's shard; XREAD/XREADGROUP run over a shard::Transaction on
// their keys; XGROUP/XINFO are containers whose subcommands hop to their key's shard.
#include "server/stream_family.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/number.h"
#include "core/stream.h"
#include "core/string_util.h"
#include "server/blocked_client.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/subcommand.h"
#include "shard/db.h"
#include "shard/shard_set.h"

namespace shardis::server {

using core::Stream;
using core::StreamConsumer;
using core::StreamGroup;
using core::StreamID;
using core::StreamNack;
using shard::Db;

namespace {

constexpr std::string_view kInvalidIdErr =
    "ERR Invalid stream ID specified as stream command argument";

// ---- Reply helpers

void ReplyID(core::ReplyBuilder& rb, StreamID id) { rb.Bulk(id.ToString()); }

void ReplyEntry(core::ReplyBuilder& rb, StreamID id, const Stream::FieldValues& fv) {
  rb.ArrayHeader(2);
  ReplyID(rb, id);
  rb.ArrayHeader(fv.size());
  for (std::string_view s : fv) rb.Bulk(s);
}

// A reply built apart (to learn its element count first) with rb's protocol.
struct SubReply {
  std::string out;
  core::ReplyBuilder rb;
  explicit SubReply(const core::ReplyBuilder& parent) : rb(&out) { rb.set_resp3(parent.resp3()); }
};

// Entries start..end (count 0: all) as an array, returns how many.
size_t ReplyRange(core::ReplyBuilder& rb, const Stream& s, StreamID start, StreamID end,
                  size_t count, bool rev) {
  SubReply sub(rb);
  size_t n = 0;
  s.Range(start, end, rev, [&](StreamID id, const Stream::FieldValues& fv) {
    ReplyEntry(sub.rb, id, fv);
    ++n;
    return !(count && n >= count);
  });
  rb.ArrayHeader(n);
  rb.output()->append(sub.out);
  return n;
}

bool ParseStrictID(core::ReplyBuilder& rb, std::string_view s, StreamID* id,
                   uint64_t missing_seq = 0) {
  if (core::ParseStreamID(s, missing_seq, true, id)) return true;
  rb.Error(kInvalidIdErr);
  return false;
}

// Redis' streamParseIntervalIDOrReply: "(" makes the bound exclusive (then strict).
bool ParseIntervalID(core::ReplyBuilder& rb, std::string_view s, StreamID* id, bool* exclusive,
                     uint64_t missing_seq) {
  *exclusive = s.size() > 1 && s[0] == '(';
  bool ok = *exclusive ? core::ParseStreamID(s.substr(1), missing_seq, true, id)
                       : core::ParseStreamID(s, missing_seq, false, id);
  if (!ok) rb.Error(kInvalidIdErr);
  return ok;
}

bool ParseStartEnd(core::ReplyBuilder& rb, std::string_view a, std::string_view b,
                   StreamID* start, StreamID* end) {
  bool ex;
  if (!ParseIntervalID(rb, a, start, &ex, 0)) return false;
  if (ex && !start->Incr()) {
    rb.Error("ERR invalid start ID for the interval");
    return false;
  }
  if (!ParseIntervalID(rb, b, end, &ex, UINT64_MAX)) return false;
  if (ex && !end->Decr()) {
    rb.Error("ERR invalid end ID for the interval");
    return false;
  }
  return true;
}

Stream* StreamOf(Db::Iterator it) { return static_cast<Stream*>(it.value().object()); }

std::string NoGroupKeyErr(std::string_view key, std::string_view group) {
  return core::Concat("NOGROUP No such key '", key, "' or consumer group '", group, "'");
}
std::string NoGroupReadErr(std::string_view key, std::string_view group) {
  return core::Concat(NoGroupKeyErr(key, group), " in XREADGROUP with GROUP option");
}
std::string NoGroupForKeyErr(std::string_view group, std::string_view key) {
  return core::Concat("NOGROUP No such consumer group '", group, "' for key name '", key, "'");
}

// ---- XADD / XTRIM argument parsing (Redis' streamParseAddOrTrimArgsOrReply)

struct AddTrimArgs {
  enum Strategy { kNone, kMaxLen, kMinId } strategy = kNone;
  int64_t maxlen = -1;
  StreamID minid;
  bool approx = false;
  int64_t limit = 0;
  bool nomkstream = false;
  bool id_given = false;
  bool seq_given = true;
  StreamID id;
};

// Returns the index of the ID (XADD) or past the options; -1 after replying an error.
int ParseAddTrim(ArgSlice args, core::ReplyBuilder& rb, bool xadd, AddTrimArgs* a) {
  ArgParser p(args, 2);
  bool limit_given = false;
  while (p.HasNext()) {
    if (xadd && p.Peek() == "*") break;
    const bool maxlen = p.Check("MAXLEN", 1);
    if (maxlen || p.Check("MINID", 1)) {
      if (a->strategy != AddTrimArgs::kNone) {
        rb.Error(
            "ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
        return -1;
      }
      // An optional ~ (approximate) or = before the threshold.
      a->approx = p.Remaining() >= 2 && p.Peek() == "~";
      if (p.Remaining() >= 2 && (a->approx || p.Peek() == "=")) p.Next();
      if (maxlen) {
        a->maxlen = p.Next<int64_t>();
        if (p.ReplyError(rb)) return -1;
        if (a->maxlen < 0) {
          rb.Error("ERR The MAXLEN argument must be >= 0.");
          return -1;
        }
        a->strategy = AddTrimArgs::kMaxLen;
      } else {
        if (!ParseStrictID(rb, p.Next(), &a->minid)) return -1;
        a->strategy = AddTrimArgs::kMinId;
      }
    } else if (p.Check("LIMIT", 1)) {
      a->limit = p.Next<int64_t>();
      if (p.ReplyError(rb)) return -1;
      if (a->limit < 0) {
        rb.Error("ERR The LIMIT argument must be >= 0.");
        return -1;
      }
      limit_given = true;
    } else if (xadd && p.Check("NOMKSTREAM")) {
      a->nomkstream = true;
    } else if (xadd) {
      // The entry's ID: where the field-value pairs begin after it.
      if (!core::ParseStreamID(p.Peek(), 0, true, &a->id, &a->seq_given)) {
        rb.Error(kInvalidIdErr);
        return -1;
      }
      a->id_given = true;
      break;
    } else {
      rb.Error(kSyntaxErr);
      return -1;
    }
  }
  const size_t i = p.pos();
  if (a->limit && a->strategy == AddTrimArgs::kNone) {
    rb.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
    return -1;
  }
  if (!xadd && a->strategy == AddTrimArgs::kNone) {
    rb.Error("ERR syntax error, XTRIM must be called with a trimming strategy");
    return -1;
  }
  if (limit_given) {
    if (!a->approx) {
      rb.Error("ERR syntax error, LIMIT cannot be used without the special ~ option");
      return -1;
    }
  } else if (a->approx) {
    int64_t l = 100 * int64_t(core::StreamNodeMaxEntries());
    a->limit = (l <= 0 || l > 10000) ? 10000 : l;
  } else {
    a->limit = 0;
  }
  return int(i);
}

int64_t ApplyTrim(Stream* s, const AddTrimArgs& a) {
  if (a.strategy == AddTrimArgs::kNone) return 0;
  return s->Trim(a.strategy == AddTrimArgs::kMaxLen ? a.maxlen : -1, a.minid, a.approx, a.limit);
}

void ReplyIdNotAfterTop(ShardContext& ctx) {
  ctx.rb.Error("ERR The ID specified in XADD is equal or smaller than the target stream top item");
}

// ---- XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...

void CmdXAdd(ArgSlice args, ShardContext& ctx) {
  AddTrimArgs a;
  int id_pos = ParseAddTrim(args, ctx.rb, true, &a);
  if (id_pos < 0) return;
  size_t field_pos = size_t(id_pos) + 1;
  if (field_pos > args.size() || args.size() - field_pos < 2 ||
      (args.size() - field_pos) % 2 == 1) {
    return ctx.rb.Error(WrongArgsError("xadd"));
  }
  if (a.id_given && a.seq_given && a.id.IsZero()) {
    return ctx.rb.Error("ERR The ID specified in XADD must be greater than 0-0");
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) {
    if (a.nomkstream) return ctx.rb.Null();
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
    it.value().SetObject(core::ValueType::kStream, core::ShardNew<Stream>());
  }
  Stream* s = StreamOf(it);
  if (s->last_id() == StreamID::Max()) {
    return ctx.rb.Error(
        "ERR The stream has exhausted the last possible ID, unable to add more items");
  }
  StreamID id;
  StreamID last = s->last_id();
  if (a.id_given) {
    if (a.seq_given) {
      id = a.id;
    } else if (last.ms == a.id.ms) {
      // No sequence is left after last.seq: Redis 7.2 reports it as an ID that is too small.
      if (last.seq == UINT64_MAX) return ReplyIdNotAfterTop(ctx);
      id = StreamID{last.ms, last.seq + 1};
    } else {
      id = a.id;
    }
    if (id <= last) return ReplyIdNotAfterTop(ctx);
  } else {
    uint64_t ms = uint64_t(ctx.now_ms);
    if (ms > last.ms) {
      id = StreamID{ms, 0};
    } else {
      id = last;
      id.Incr();
    }
  }
  std::vector<std::string_view> fv(args.begin() + field_pos, args.end());
  s->Append(id, fv);
  ReplyID(ctx.rb, id);
  NotifyKeyspaceEvent(ctx, kNotifyStream, "xadd", args[1]);
  if (ApplyTrim(s, a) > 0) NotifyKeyspaceEvent(ctx, kNotifyStream, "xtrim", args[1]);
  if (ctx.journaling() && !(a.id_given && a.seq_given)) {
    // The journal replays the id that was made (from the clock, or the next sequence), not a new
    // one, as Redis propagates XADD.
    std::vector<std::string> form(args.begin(), args.end());
    form[size_t(id_pos)] = id.ToString();
    ctx.journal_effect.Replace(std::move(form));
  }
  ctx.shard.AddDirty();  // one for the entry; Redis does not count what the trim removes
  // Clients blocked on the key are offered it once this command is over (RunShardCommand marks
  // it modified), and serve themselves (StreamWaiter).
}

// ---- XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]

void CmdXTrim(ArgSlice args, ShardContext& ctx) {
  AddTrimArgs a;
  if (ParseAddTrim(args, ctx.rb, false, &a) < 0) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  const int64_t trimmed = ApplyTrim(StreamOf(it), a);
  ctx.shard.AddDirty(trimmed);
  if (trimmed > 0) NotifyKeyspaceEvent(ctx, kNotifyStream, "xtrim", args[1]);
  ctx.rb.Integer(trimmed);
}

// ---- XLEN key

void CmdXLen(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(StreamOf(it)->length()) : 0);
}

// ---- XRANGE key start end [COUNT n] / XREVRANGE key end start [COUNT n]

template <bool kRev>
void CmdXRange(ArgSlice args, ShardContext& ctx) {
  StreamID start, end;
  if (!ParseStartEnd(ctx.rb, kRev ? args[3] : args[2], kRev ? args[2] : args[3], &start, &end)) {
    return;
  }
  int64_t count = -1;
  ArgParser p(args, 4);
  while (p.HasNext()) {
    if (p.Check("count", 1)) {
      count = std::max<int64_t>(p.Next<int64_t>(), 0);
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.ArrayHeader(0);
  if (count == 0) return ctx.rb.NullArray();
  if (count == -1) count = 0;
  ReplyRange(ctx.rb, *StreamOf(it), start, end, size_t(count), kRev);
}

// ---- XDEL key id [id ...]

void CmdXDel(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  std::vector<StreamID> ids(args.size() - 2);
  for (size_t j = 2; j < args.size(); ++j) {
    if (!ParseStrictID(ctx.rb, args[j], &ids[j - 2])) return;
  }
  Stream* s = StreamOf(it);
  int64_t deleted = 0;
  for (StreamID id : ids) {
    if (s->Delete(id)) {
      if (id > s->max_deleted_entry_id()) s->set_max_deleted_entry_id(id);
      ++deleted;
    }
  }
  ctx.shard.AddDirty(deleted);
  if (deleted > 0) NotifyKeyspaceEvent(ctx, kNotifyStream, "xdel", args[1]);
  ctx.rb.Integer(deleted);
}

// ---- XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]

void CmdXSetId(ArgSlice args, ShardContext& ctx) {
  StreamID id, max_xdel;
  if (!ParseStrictID(ctx.rb, args[2], &id)) return;
  int64_t entries_added = -1;
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("entriesadded", 1)) {
      entries_added = p.Next<int64_t>();
      if (p.ok() && entries_added < 0) p.Fail("ERR entries_added must be positive");
    } else if (p.Check("maxdeletedid", 1)) {
      if (!core::ParseStreamID(p.Next(), 0, true, &max_xdel)) {
        p.Fail(kInvalidIdErr);
      } else if (id < max_xdel) {
        p.Fail("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
      }
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Error("ERR no such key");
  Stream* s = StreamOf(it);
  // Redis 7.2: an ID at or below a deleted one could be added again.
  if (id < s->max_deleted_entry_id()) {
    return ctx.rb.Error(
        "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id");
  }
  if (s->length() > 0) {
    if (id < s->last_valid_id()) {
      return ctx.rb.Error(
          "ERR The ID specified in XSETID is smaller than the target stream top item");
    }
    if (entries_added != -1 && int64_t(s->length()) > entries_added) {
      return ctx.rb.Error(
          "ERR The entries_added specified in XSETID is smaller than the target stream length");
    }
  }
  s->set_last_id(id);
  if (entries_added != -1) s->set_entries_added(uint64_t(entries_added));
  if (!max_xdel.IsZero()) s->set_max_deleted_entry_id(max_xdel);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyStream, "xsetid", args[1]);
  ctx.rb.Ok();
}

// ---- XACK key group id [id ...]

void CmdXAck(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  StreamGroup* g = Db::Found(it) ? StreamOf(it)->FindGroup(args[2]) : nullptr;
  if (g == nullptr) return ctx.rb.Integer(0);
  std::vector<StreamID> ids(args.size() - 3);
  for (size_t j = 3; j < args.size(); ++j) {
    if (!ParseStrictID(ctx.rb, args[j], &ids[j - 3])) return;
  }
  int64_t acked = 0;
  for (StreamID id : ids) acked += g->Ack(id) ? 1 : 0;
  ctx.shard.AddDirty(acked);
  ctx.rb.Integer(acked);
}

// ---- XPENDING key group [[IDLE min-idle] start end count [consumer]]

void CmdXPending(ArgSlice args, ShardContext& ctx) {
  const bool summary = args.size() == 3;
  if (args.size() != 3 && (args.size() < 6 || args.size() > 9)) return ctx.rb.Error(kSyntaxErr);
  StreamID start, end;
  int64_t count = 0, minidle = 0;
  std::string_view consumer_name;
  bool has_consumer = false;
  if (args.size() >= 6) {
    // Redis parses these before it looks the key up, the count before the IDs; arguments after
    // the consumer are ignored, as in Redis.
    ArgParser p(args, 3);
    if (p.Check("idle", 1)) {
      minidle = p.Next<int64_t>();
      if (p.ok() && args.size() < 8) p.Fail(kSyntaxErr);
    }
    const std::string_view start_arg = p.Next();
    const std::string_view end_arg = p.Next();
    count = std::max<int64_t>(p.Next<int64_t>(), 0);
    if (p.ReplyError(ctx.rb)) return;
    if (!ParseStartEnd(ctx.rb, start_arg, end_arg, &start, &end)) return;
    has_consumer = p.HasNext();
    consumer_name = p.Peek();
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  StreamGroup* g = Db::Found(it) ? StreamOf(it)->FindGroup(args[2]) : nullptr;
  if (g == nullptr) return ctx.rb.Error(NoGroupKeyErr(args[1], args[2]));
  if (summary) {
    ctx.rb.ArrayHeader(4);
    ctx.rb.Integer(int64_t(g->pel.size()));
    if (g->pel.empty()) {
      ctx.rb.Null();
      ctx.rb.Null();
      ctx.rb.NullArray();
      return;
    }
    ReplyID(ctx.rb, g->pel.begin()->first);
    ReplyID(ctx.rb, g->pel.rbegin()->first);
    size_t n = 0;
    for (const auto& [name, c] : g->consumers) n += c->pel.empty() ? 0 : 1;
    ctx.rb.ArrayHeader(n);
    for (const auto& [name, c] : g->consumers) {
      if (c->pel.empty()) continue;
      ctx.rb.ArrayHeader(2);
      ctx.rb.Bulk(name);
      ctx.rb.Bulk(core::Int64ToString(int64_t(c->pel.size())));
    }
    return;
  }
  const core::ShardMap<StreamID, StreamNack*>* pel = &g->pel;
  if (has_consumer) {
    StreamConsumer* c = g->FindConsumer(consumer_name);
    if (c == nullptr) return ctx.rb.ArrayHeader(0);
    pel = &c->pel;
  }
  SubReply sub(ctx.rb);
  size_t n = 0;
  for (auto p = pel->lower_bound(start); count && p != pel->end() && p->first <= end; ++p) {
    const StreamNack* nack = p->second;
    if (minidle && ctx.now_ms - nack->delivery_time < minidle) continue;
    ++n;
    --count;
    sub.rb.ArrayHeader(4);
    ReplyID(sub.rb, p->first);
    sub.rb.Bulk(nack->consumer->name);
    int64_t elapsed = ctx.now_ms - nack->delivery_time;
    sub.rb.Integer(elapsed < 0 ? 0 : elapsed);
    sub.rb.Integer(int64_t(nack->delivery_count));
  }
  ctx.rb.ArrayHeader(n);
  ctx.rb.output()->append(sub.out);
}

// Writes one entry for XCLAIM/XAUTOCLAIM (the entry, or its ID with JUSTID).
void ReplyClaimed(core::ReplyBuilder& rb, const Stream& s, StreamID id, bool justid) {
  if (justid) return ReplyID(rb, id);
  bool found = false;
  s.Range(id, id, false, [&](StreamID eid, const Stream::FieldValues& fv) {
    ReplyEntry(rb, eid, fv);
    found = true;
    return false;
  });
  if (!found) rb.Null();
}

// ---- The journal's forms of consumer-group changes (Redis' streamPropagate* functions). They
// carry absolute times, so a replay gives the same PEL whatever its clock says.

// Entry `id`'s PEL state as left by a delivery or claim (its consumer, delivery time and count;
// an entry that is gone drops from the PEL on replay) and the group's last ID.
std::vector<std::string> XClaimForm(std::string_view key, std::string_view group,
                                    StreamID last_id, StreamID id, const StreamNack& nack) {
  return {"XCLAIM",
          std::string(key),
          std::string(group),
          std::string(std::string_view(nack.consumer->name)),
          "0",
          id.ToString(),
          "TIME",
          std::to_string(nack.delivery_time),
          "RETRYCOUNT",
          std::to_string(nack.delivery_count),
          "FORCE",
          "JUSTID",
          "LASTID",
          last_id.ToString()};
}

// The group's last ID and read counter, where no XCLAIM carries them (NOACK reads, LASTID).
std::vector<std::string> GroupIdForm(std::string_view key, std::string_view group,
                                     const StreamGroup& g) {
  return {"XGROUP", "SETID", std::string(key), std::string(group), g.last_id.ToString(),
          "ENTRIESREAD", std::to_string(g.entries_read)};
}

// ---- XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT n]
//      [FORCE] [JUSTID] [LASTID id]

std::vector<std::string> CreateConsumerForm(std::string_view key, std::string_view group,
                                            std::string_view consumer) {
  return {"XGROUP", "CREATECONSUMER", std::string(key), std::string(group),
          std::string(consumer)};
}

// XCLAIM and XAUTOCLAIM name their consumer in the group of the stream at args[1]: as in Redis
// 7.2 it is created (a change of its own, with its event) whether or not it claims anything, and
// its seen-time is refreshed. A new consumer that claims nothing goes to the journal by itself
// (the XCLAIMs of what it claims would create it on replay).
StreamConsumer* ClaimingConsumer(ShardContext& ctx, ArgSlice args, StreamGroup* g,
                                 bool* created) {
  StreamConsumer* consumer = g->GetOrCreateConsumer(args[3], ctx.now_ms, created);
  consumer->seen_time = ctx.now_ms;
  if (*created) {
    ctx.shard.AddDirty();
    NotifyKeyspaceEvent(ctx, kNotifyStream, "xgroup-createconsumer", args[1]);
  }
  return consumer;
}

void CmdXClaim(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  Stream* s = Db::Found(it) ? StreamOf(it) : nullptr;
  StreamGroup* g = s ? s->FindGroup(args[2]) : nullptr;
  if (g == nullptr) return ctx.rb.Error(NoGroupKeyErr(args[1], args[2]));
  ArgParser head(args, 4);
  const int64_t minidle =
      std::max<int64_t>(head.NextInt64("ERR Invalid min-idle-time argument for XCLAIM"), 0);
  if (head.ReplyError(ctx.rb)) return;
  std::vector<StreamID> ids;
  size_t j = 5;
  for (; j < args.size(); ++j) {
    StreamID id;
    if (!core::ParseStreamID(args[j], 0, true, &id)) break;
    ids.push_back(id);
  }
  const int64_t now = ctx.now_ms;
  int64_t retrycount = -1, deliverytime = -1;
  bool force = false, justid = false;
  StreamID last_id;
  ArgParser p(args, j);
  while (p.HasNext()) {
    if (p.Check("FORCE")) {
      force = true;
    } else if (p.Check("JUSTID")) {
      justid = true;
    } else if (p.Check("IDLE", 1)) {
      deliverytime = now - p.NextInt64("ERR Invalid IDLE option argument for XCLAIM");
    } else if (p.Check("TIME", 1)) {
      deliverytime = p.NextInt64("ERR Invalid TIME option argument for XCLAIM");
    } else if (p.Check("RETRYCOUNT", 1)) {
      retrycount = p.NextInt64("ERR Invalid RETRYCOUNT option argument for XCLAIM");
    } else if (p.Check("LASTID", 1)) {
      if (!core::ParseStreamID(p.Next(), 0, true, &last_id)) p.Fail(kInvalidIdErr);
    } else {
      p.Fail(core::Concat("ERR Unrecognized XCLAIM option '", p.Peek(), "'"));
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  // Redis counts a raised LASTID as one change, unless some entry was claimed or dropped (each of
  // those counts one and carries the group's last ID along).
  bool raised_last_id = false;
  if (last_id > g->last_id) {
    g->last_id = last_id;
    raised_last_id = true;
  }
  uint64_t changes = 0;
  if (deliverytime != -1) {
    if (deliverytime < 0 || deliverytime > now) deliverytime = now;
  } else {
    deliverytime = now;
  }
  // The journal gets an XCLAIM per entry claimed or dropped, else the raised last ID, never the
  // command as sent (its IDLE and min-idle-time depend on the clock).
  shard::JournalEffect* journal = ctx.journaling() ? &ctx.journal_effect : nullptr;
  if (journal) journal->None();
  bool created;
  StreamConsumer* consumer = ClaimingConsumer(ctx, args, g, &created);
  SubReply sub(ctx.rb);
  size_t n = 0;
  for (StreamID id : ids) {
    auto p = g->pel.find(id);
    StreamNack* nack = p == g->pel.end() ? nullptr : p->second;
    if (!s->Contains(id)) {
      if (nack) {
        if (journal) journal->Add(XClaimForm(args[1], args[2], g->last_id, id, *nack));
        g->Ack(id);  // the entry is gone: drop it from the PEL
        ++changes;
      }
      continue;
    }
    if (force && nack == nullptr) {
      nack = core::ShardNew<StreamNack>();
      nack->delivery_count = 1;
      nack->delivery_time = now;
      g->pel.emplace(id, nack);
    }
    if (nack == nullptr) continue;
    if (nack->consumer && minidle && now - nack->delivery_time < minidle) continue;
    consumer->active_time = now;
    if (nack->consumer != consumer && nack->consumer) nack->consumer->pel.erase(id);
    nack->delivery_time = deliverytime;
    if (retrycount >= 0) {
      nack->delivery_count = uint64_t(retrycount);
    } else if (!justid) {
      ++nack->delivery_count;
    }
    if (nack->consumer != consumer) {
      consumer->pel[id] = nack;
      nack->consumer = consumer;
    }
    ReplyClaimed(sub.rb, *s, id, justid);
    if (journal) journal->Add(XClaimForm(args[1], args[2], g->last_id, id, *nack));
    ++n;
    ++changes;
  }
  if (journal && changes == 0 && raised_last_id) journal->Add(GroupIdForm(args[1], args[2], *g));
  if (journal && n == 0 && created) journal->Add(CreateConsumerForm(args[1], args[2], args[3]));
  ctx.shard.AddDirty(changes > 0 ? changes : (raised_last_id ? 1 : 0));
  ctx.rb.ArrayHeader(n);
  ctx.rb.output()->append(sub.out);
}

// ---- XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]

void CmdXAutoClaim(ArgSlice args, ShardContext& ctx) {
  ArgParser head(args, 4);
  const int64_t minidle =
      std::max<int64_t>(head.NextInt64("ERR Invalid min-idle-time argument for XAUTOCLAIM"), 0);
  if (head.ReplyError(ctx.rb)) return;
  StreamID start;
  bool ex;
  if (!ParseIntervalID(ctx.rb, args[5], &start, &ex, 0)) return;
  if (ex && !start.Incr()) return ctx.rb.Error("ERR invalid start ID for the interval");
  int64_t count = 100;
  bool justid = false;
  constexpr int64_t kAttemptsFactor = 10;
  ArgParser opts(args, 6);
  while (opts.HasNext()) {
    if (opts.Check("count", 1)) {
      // Redis bounds COUNT so that COUNT * attempts factor * sizeof(streamID) cannot overflow.
      count =
          opts.NextInRange(1, std::numeric_limits<int64_t>::max() / 16, "ERR COUNT must be > 0");
    } else if (opts.Check("justid")) {
      justid = true;
    } else {
      opts.Fail(kSyntaxErr);
    }
  }
  if (opts.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kStream, kForRead, &wrong_type);
  if (wrong_type) return;
  Stream* s = Db::Found(it) ? StreamOf(it) : nullptr;
  StreamGroup* g = s ? s->FindGroup(args[2]) : nullptr;
  if (g == nullptr) return ctx.rb.Error(NoGroupKeyErr(args[1], args[2]));

  int64_t attempts = count * kAttemptsFactor;
  const int64_t now = ctx.now_ms;
  // As for XCLAIM: an XCLAIM per entry claimed or dropped.
  shard::JournalEffect* journal = ctx.journaling() ? &ctx.journal_effect : nullptr;
  if (journal) journal->None();
  bool created;
  StreamConsumer* consumer = ClaimingConsumer(ctx, args, g, &created);
  SubReply sub(ctx.rb);
  size_t n = 0;
  std::vector<StreamID> deleted;
  auto p = g->pel.lower_bound(start);
  while (attempts-- && count && p != g->pel.end()) {
    StreamID id = p->first;
    StreamNack* nack = p->second;
    if (!s->Contains(id)) {
      ++p;
      if (journal) journal->Add(XClaimForm(args[1], args[2], g->last_id, id, *nack));
      g->Ack(id);
      deleted.push_back(id);
      ctx.shard.AddDirty();
      --count;
      continue;
    }
    if (minidle && now - nack->delivery_time < minidle) {
      ++p;
      continue;
    }
    consumer->active_time = now;
    if (nack->consumer != consumer) {
      nack->consumer->pel.erase(id);
      consumer->pel[id] = nack;
      nack->consumer = consumer;
    }
    nack->delivery_time = now;
    if (!justid) ++nack->delivery_count;
    ReplyClaimed(sub.rb, *s, id, justid);
    if (journal) journal->Add(XClaimForm(args[1], args[2], g->last_id, id, *nack));
    ctx.shard.AddDirty();
    ++n;
    --count;
    ++p;
  }
  if (journal && n == 0 && created) journal->Add(CreateConsumerForm(args[1], args[2], args[3]));
  ctx.rb.ArrayHeader(3);
  ReplyID(ctx.rb, p == g->pel.end() ? StreamID{} : p->first);
  ctx.rb.ArrayHeader(n);
  ctx.rb.output()->append(sub.out);
  ctx.rb.ArrayHeader(deleted.size());
  for (StreamID id : deleted) ReplyID(ctx.rb, id);
}

// ---- Running a container subcommand on its key's shard

template <typename Fn>
void OnKeyShard(ConnContext& ctx, std::string_view key, bool write, Fn&& fn) {
  std::string_view keys[1] = {key};
  shard::Transaction tx(ctx.conn.db, keys,
                        write ? shard::Transaction::kWrite : shard::Transaction::kRead);
  std::string reply;
  const bool resp3 = ctx.rb.resp3();
  tx.Run(
      [&](shard::TxShard& t) {
        core::ReplyBuilder rb(&reply);
        rb.set_resp3(resp3);
        ShardContext sc{t.shard, t.db, rb, t.now_ms, tx.hash(0)};
        fn(sc);
      },
      /*conclude=*/true);
  ctx.rb.output()->append(reply);
}


// ---- XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER key group ...

void XGroupKeyed(ArgSlice args, ConnContext& ctx) {
  std::string_view opt = args[1];
  const bool create = core::EqualsIgnoreCase(opt, "create");
  const bool setid = core::EqualsIgnoreCase(opt, "setid");
  bool mkstream = false;
  int64_t entries_read = StreamGroup::kInvalidEntriesRead;
  if (create || setid) {
    ArgParser p(args, 5);
    while (p.HasNext()) {
      if (create && p.Check("mkstream")) {
        mkstream = true;
      } else if (p.Check("entriesread", 1)) {
        entries_read = p.Next<int64_t>();
        if (p.ok() && entries_read < 0 && entries_read != StreamGroup::kInvalidEntriesRead) {
          p.Fail("ERR value for ENTRIESREAD must be positive or -1");
        }
      } else {
        p.Fail(SubcommandSyntaxError(args));
      }
    }
    if (p.ReplyError(ctx.rb)) return;
  }
  OnKeyShard(ctx, args[2], true, [&](ShardContext& sc) {
    bool wrong_type;
    Db::Iterator it = FindTyped(sc, args[2], core::ValueType::kStream, kForWrite, &wrong_type);
    if (wrong_type) return;
    Stream* s = Db::Found(it) ? StreamOf(it) : nullptr;
    std::string_view group = args[3];
    StreamGroup* g = nullptr;
    if (!mkstream) {
      if (s == nullptr) {
        return sc.rb.Error(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
            "want to use the MKSTREAM option to create an empty stream automatically.");
      }
      g = s->FindGroup(group);
      if (g == nullptr && !create && !core::EqualsIgnoreCase(opt, "destroy")) {
        return sc.rb.Error(NoGroupForKeyErr(group, args[2]));
      }
    }
    if (create && args.size() <= 8) {
      StreamID id;
      if (args[4] == "$") {
        id = s ? s->last_id() : StreamID{};
      } else if (!ParseStrictID(sc.rb, args[4], &id)) {
        return;
      }
      if (s == nullptr) {
        bool inserted;
        it = sc.db.FindOrInsert(args[2], sc.hash, sc.now_ms, &inserted);
        s = core::ShardNew<Stream>();
        it.value().SetObject(core::ValueType::kStream, s);
        sc.db.NoteModified(args[2]);
      }
      if (s->CreateGroup(group, id, entries_read) == nullptr) {
        return sc.rb.Error("BUSYGROUP Consumer Group name already exists");
      }
      sc.db.NoteModified(args[2]);
      sc.shard.AddDirty();  // the group; a stream made by MKSTREAM is not counted apart
      NotifyKeyspaceEvent(sc, kNotifyStream, "xgroup-create", args[2]);
      return sc.rb.Ok();
    }
    if (setid && (args.size() == 5 || args.size() == 7)) {
      StreamID id;
      if (args[4] == "$") {
        id = s->last_id();
      } else if (!core::ParseStreamID(args[4], 0, false, &id)) {
        return sc.rb.Error(kInvalidIdErr);
      }
      g->last_id = id;
      g->entries_read = entries_read;
      sc.db.NoteModified(args[2]);
      sc.shard.AddDirty();
      NotifyKeyspaceEvent(sc, kNotifyStream, "xgroup-setid", args[2]);
      return sc.rb.Ok();
    }
    if (core::EqualsIgnoreCase(opt, "destroy") && args.size() == 4) {
      if (g == nullptr) return sc.rb.Integer(0);
      s->DestroyGroup(group);
      // Marks the key ready too: XREADGROUP clients blocked on this group fail with NOGROUP
      // when offered it (StreamWaiter).
      sc.db.NoteModified(args[2]);
      sc.shard.AddDirty();
      NotifyKeyspaceEvent(sc, kNotifyStream, "xgroup-destroy", args[2]);
      return sc.rb.Integer(1);
    }
    if (core::EqualsIgnoreCase(opt, "createconsumer") && args.size() == 5) {
      bool created;
      g->GetOrCreateConsumer(args[4], sc.now_ms, &created);
      if (created) {
        sc.db.NoteModified(args[2]);
        sc.shard.AddDirty();
        NotifyKeyspaceEvent(sc, kNotifyStream, "xgroup-createconsumer", args[2]);
      }
      return sc.rb.Integer(created ? 1 : 0);
    }
    if (core::EqualsIgnoreCase(opt, "delconsumer") && args.size() == 5) {
      if (g->FindConsumer(args[4]) != nullptr) {  // only an existing one counts and is announced
        sc.shard.AddDirty();
        NotifyKeyspaceEvent(sc, kNotifyStream, "xgroup-delconsumer", args[2]);
      }
      int64_t pending = int64_t(g->DeleteConsumer(args[4]));
      sc.db.NoteModified(args[2]);
      return sc.rb.Integer(pending);
    }
    sc.rb.Error(SubcommandSyntaxError(args));
  });
}

void XGroupHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "XGROUP",
            {"CREATE <key> <groupname> <id|$> [option]",
             "    Create a new consumer group. Options are:",
             "    * MKSTREAM",
             "      Create the empty stream if it does not exist.",
             "    * ENTRIESREAD entries_read",
             "      Set the group's entries_read counter (internal use).",
             "CREATECONSUMER <key> <groupname> <consumer>",
             "    Create a new consumer in the specified group.",
             "DELCONSUMER <key> <groupname> <consumer>",
             "    Remove the specified consumer.",
             "DESTROY <key> <groupname>",
             "    Remove the specified group.",
             "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
             "    Set the current group ID and entries_read counter."});
}

constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;

const SubCommand kXGroupSubs[] = {
    {.name = "create", .arity = -5, .flags = kW | kD, .keys = kSubKey,
     .acl_categories = "write stream slow", .handler = XGroupKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Adds a consumer group to a stream, optionally creating the stream."}},
    {.name = "createconsumer", .arity = 5, .flags = kW | kD, .keys = kSubKey,
     .acl_categories = "write stream slow", .handler = XGroupKeyed,
     .docs = {.group = "stream", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Adds a consumer to a consumer group."}},
    {.name = "delconsumer", .arity = 5, .flags = kW, .keys = kSubKey,
     .acl_categories = "write stream slow", .handler = XGroupKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Removes a consumer and its pending entries from a consumer group."}},
    {.name = "destroy", .arity = 4, .flags = kW, .keys = kSubKey,
     .acl_categories = "write stream slow", .handler = XGroupKeyed,
     .docs = {.group = "stream", .since = "5.0.0",
              .complexity = "O(N) where N is the number of entries in the group's pending entries "
                            "list (PEL).", .summary = "Removes a consumer group from a stream."}},
    {.name = "setid", .arity = -5, .flags = kW, .keys = kSubKey,
     .acl_categories = "write stream slow", .handler = XGroupKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Sets the ID after which a consumer group delivers entries."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "stream slow",
     .handler = XGroupHelp,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Lists the subcommands and what they do."}},
};
const Container kXGroupContainer{"xgroup", kXGroupSubs};

void CmdXGroup(ArgSlice args, ConnContext& ctx) { DispatchSub(kXGroupContainer, args, ctx); }

// ---- XINFO STREAM|GROUPS|CONSUMERS key ...

void ReplyLag(core::ReplyBuilder& rb, const Stream& s, const StreamGroup& g) {
  if (s.entries_added() == 0) return rb.Integer(0);
  if (g.entries_read != StreamGroup::kInvalidEntriesRead &&
      !s.RangeHasTombstones(g.last_id, StreamID::Max())) {
    return rb.Integer(int64_t(s.entries_added()) - g.entries_read);
  }
  int64_t read = s.EstimateDistanceFromFirstEverEntry(g.last_id);
  if (read != StreamGroup::kInvalidEntriesRead) {
    return rb.Integer(int64_t(s.entries_added()) - read);
  }
  rb.Null();
}

void ReplyEntriesRead(core::ReplyBuilder& rb, const StreamGroup& g) {
  if (g.entries_read != StreamGroup::kInvalidEntriesRead) return rb.Integer(g.entries_read);
  rb.Null();
}

void XInfoStream(ArgSlice args, ShardContext& sc, const Stream& s) {
  // [FULL [COUNT count]], nothing else, in that order (Redis' xinfoReplyWithStreamInfo).
  ArgParser p(args, 3);
  const size_t optc = p.Remaining();
  const bool full = optc != 0;
  int64_t count = 10;
  if (full) {
    if ((optc != 1 && optc != 3) || !p.Check("full") || (optc == 3 && !p.Check("count", 1))) {
      p.Fail(SubcommandSyntaxError(args));
    } else if (optc == 3) {
      count = p.Next<int64_t>();
    }
    if (p.ReplyError(sc.rb)) return;
    if (count < 0) count = 10;
  }
  core::ReplyBuilder& rb = sc.rb;
  rb.MapHeader(full ? 9 : 10);
  rb.Bulk("length");
  rb.Integer(int64_t(s.length()));
  rb.Bulk("radix-tree-keys");
  rb.Integer(int64_t(s.node_count()));
  // Redis reports its rax' inner node count; ours is a balanced tree with one node per key.
  rb.Bulk("radix-tree-nodes");
  rb.Integer(int64_t(s.node_count()) + 1);
  rb.Bulk("last-generated-id");
  ReplyID(rb, s.last_id());
  rb.Bulk("max-deleted-entry-id");
  ReplyID(rb, s.max_deleted_entry_id());
  rb.Bulk("entries-added");
  rb.Integer(int64_t(s.entries_added()));
  rb.Bulk("recorded-first-entry-id");
  ReplyID(rb, s.first_id());
  if (!full) {
    rb.Bulk("groups");
    rb.Integer(int64_t(s.groups().size()));
    for (bool rev : {false, true}) {
      rb.Bulk(rev ? "last-entry" : "first-entry");
      bool found = false;
      s.Range(StreamID::Min(), StreamID::Max(), rev,
              [&](StreamID id, const Stream::FieldValues& fv) {
                ReplyEntry(rb, id, fv);
                found = true;
                return false;
              });
      if (!found) rb.Null();
    }
    return;
  }
  rb.Bulk("entries");
  ReplyRange(rb, s, StreamID::Min(), StreamID::Max(), size_t(count), false);
  rb.Bulk("groups");
  rb.ArrayHeader(s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    rb.MapHeader(7);
    rb.Bulk("name");
    rb.Bulk(name);
    rb.Bulk("last-delivered-id");
    ReplyID(rb, g->last_id);
    rb.Bulk("entries-read");
    ReplyEntriesRead(rb, *g);
    rb.Bulk("lag");
    ReplyLag(rb, s, *g);
    rb.Bulk("pel-count");
    rb.Integer(int64_t(g->pel.size()));
    rb.Bulk("pending");
    size_t n = count ? std::min<size_t>(size_t(count), g->pel.size()) : g->pel.size();
    rb.ArrayHeader(n);
    size_t k = 0;
    for (auto p = g->pel.begin(); k < n; ++p, ++k) {
      rb.ArrayHeader(4);
      ReplyID(rb, p->first);
      rb.Bulk(p->second->consumer->name);
      rb.Integer(p->second->delivery_time);
      rb.Integer(int64_t(p->second->delivery_count));
    }
    rb.Bulk("consumers");
    rb.ArrayHeader(g->consumers.size());
    for (const auto& [cname, c] : g->consumers) {
      rb.MapHeader(5);
      rb.Bulk("name");
      rb.Bulk(cname);
      rb.Bulk("seen-time");
      rb.Integer(c->seen_time);
      rb.Bulk("active-time");
      rb.Integer(c->active_time);
      rb.Bulk("pel-count");
      rb.Integer(int64_t(c->pel.size()));
      rb.Bulk("pending");
      size_t cn = count ? std::min<size_t>(size_t(count), c->pel.size()) : c->pel.size();
      rb.ArrayHeader(cn);
      size_t ck = 0;
      for (auto p = c->pel.begin(); ck < cn; ++p, ++ck) {
        rb.ArrayHeader(3);
        ReplyID(rb, p->first);
        rb.Integer(p->second->delivery_time);
        rb.Integer(int64_t(p->second->delivery_count));
      }
    }
  }
}

void XInfoKeyed(ArgSlice args, ConnContext& ctx) {
  OnKeyShard(ctx, args[2], false, [&](ShardContext& sc) {
    bool wrong_type;
    Db::Iterator it = FindTyped(sc, args[2], core::ValueType::kStream, kForRead, &wrong_type);
    if (wrong_type) return;
    if (!Db::Found(it)) return sc.rb.Error("ERR no such key");
    const Stream& s = *StreamOf(it);
    std::string_view opt = args[1];
    if (core::EqualsIgnoreCase(opt, "consumers") && args.size() == 4) {
      StreamGroup* g = s.FindGroup(args[3]);
      if (g == nullptr) return sc.rb.Error(NoGroupForKeyErr(args[3], args[2]));
      sc.rb.ArrayHeader(g->consumers.size());
      for (const auto& [name, c] : g->consumers) {
        int64_t idle = sc.now_ms - c->seen_time;
        sc.rb.MapHeader(4);
        sc.rb.Bulk("name");
        sc.rb.Bulk(name);
        sc.rb.Bulk("pending");
        sc.rb.Integer(int64_t(c->pel.size()));
        sc.rb.Bulk("idle");
        sc.rb.Integer(idle < 0 ? 0 : idle);
        // Redis 7.2: since the last read or claim that gave it entries, -1 if none ever did.
        sc.rb.Bulk("inactive");
        sc.rb.Integer(c->active_time == -1 ? -1 : sc.now_ms - c->active_time);
      }
    } else if (core::EqualsIgnoreCase(opt, "groups") && args.size() == 3) {
      sc.rb.ArrayHeader(s.groups().size());
      for (const auto& [name, g] : s.groups()) {
        sc.rb.MapHeader(6);
        sc.rb.Bulk("name");
        sc.rb.Bulk(name);
        sc.rb.Bulk("consumers");
        sc.rb.Integer(int64_t(g->consumers.size()));
        sc.rb.Bulk("pending");
        sc.rb.Integer(int64_t(g->pel.size()));
        sc.rb.Bulk("last-delivered-id");
        ReplyID(sc.rb, g->last_id);
        sc.rb.Bulk("entries-read");
        ReplyEntriesRead(sc.rb, *g);
        sc.rb.Bulk("lag");
        ReplyLag(sc.rb, s, *g);
      }
    } else if (core::EqualsIgnoreCase(opt, "stream")) {
      XInfoStream(args, sc, s);
    } else {
      sc.rb.Error(SubcommandSyntaxError(args));
    }
  });
}

void XInfoHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "XINFO",
            {"CONSUMERS <key> <groupname>", "    Show consumers of <groupname>.",
             "GROUPS <key>", "    Show the stream consumer groups.",
             "STREAM <key> [FULL [COUNT <count>]", "    Show information about the stream."});
}

const SubCommand kXInfoSubs[] = {
    {.name = "consumers", .arity = 4, .flags = kR, .keys = kSubKey,
     .acl_categories = "read stream slow", .handler = XInfoKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Describes the consumers of a consumer group.",
              .tips = "nondeterministic_output"}},
    {.name = "groups", .arity = 3, .flags = kR, .keys = kSubKey,
     .acl_categories = "read stream slow", .handler = XInfoKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Describes the consumer groups of a stream."}},
    {.name = "stream", .arity = -3, .flags = kR, .keys = kSubKey,
     .acl_categories = "read stream slow", .handler = XInfoKeyed,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Describes a stream, optionally with its entries, groups and consumers."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "stream slow",
     .handler = XInfoHelp,
     .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Lists the subcommands and what they do."}},
};
const Container kXInfoContainer{"xinfo", kXInfoSubs};

void CmdXInfo(ArgSlice args, ConnContext& ctx) { DispatchSub(kXInfoContainer, args, ctx); }

// ---- XREAD/XREADGROUP BLOCK: the blocked client (Redis' serveClientsBlockedOnStreamKey)
//
// Registered with the shard of each stream; every write to one of them offers it the key. An
// XREAD waiter takes nothing away, so a new entry serves every XREAD blocked on the stream; an
// XREADGROUP waiter moves the group's last ID, so the next waiters of the same group find
// nothing new and keep waiting: each new entry goes to one consumer, in blocking order. The
// reply holds the one stream that woke the client, as in Redis.
class StreamWaiter final : public BlockedClient {
 public:
  // ids: what each key is read after ("$" resolved); last_ids: each stream's last ID when the
  // client blocked.
  StreamWaiter(ConnContext& ctx, std::span<const std::string_view> keys,
               std::span<const StreamID> ids, std::span<const StreamID> last_ids,
               const StreamReadArgs& args)
      : BlockedClient(ctx, keys),
        ids_(ids),
        seen_last_ids_(last_ids.begin(), last_ids.end()),
        args_(args) {
    unblock_on_nokey = args.group_read;
  }

  // The first position of key among the keys (Redis blocks once per key, with its first ID).
  size_t IndexOf(std::string_view key) const {
    return size_t(std::find(keys_.begin(), keys_.end(), key) - keys_.begin());
  }

  Offer TryServe(shard::Shard& owner, Db& db, std::string_view key) override {
    if (state() != kWaiting) return Offer::kGone;
    const size_t i = IndexOf(key);
    if (i == keys_.size()) return Offer::kNotServable;
    Db::Iterator it = db.Find(key, core::HashBytes(key), shard::NowMs());
    const bool is_stream = Db::Found(it) && it.value().type() == core::ValueType::kStream;
    // A group read cannot go on without its stream and group (the key deleted, replaced by
    // another type, the group destroyed): Redis 7.2 runs the command again, which fails as it
    // would have failed at first.
    if (!is_stream) {
      if (!args_.group_read) return Offer::kNotServable;
      return Fail(Db::Found(it) ? kWrongTypeErr : NoGroupReadErr(key, args_.group));
    }
    Stream* s = StreamOf(it);
    StreamID after = ids_[i];
    if (args_.group_read) {
      const StreamGroup* g = s->FindGroup(args_.group);
      if (g == nullptr) return Fail(NoGroupReadErr(key, args_.group));
      // Redis offers the key to its blocked clients after XADD only (and XGROUP DESTROY): a
      // write that moves the group back (XGROUP SETID) does not serve them. XADD is what moves
      // the stream's last ID past where it was when the client last looked at it.
      if (!(s->last_id() > seen_last_ids_[i])) return Offer::kNotServable;
      seen_last_ids_[i] = s->last_id();  // only this key's shard touches this element
      after = g->last_id;
    }
    // Served only with entries to deliver (StreamReadOne changes nothing otherwise).
    if (s->length() == 0 || !(s->last_valid_id() > after)) return Offer::kNotServable;
    if (!Claim()) return Offer::kGone;
    core::ReplyBuilder rb(&reply_);
    rb.set_resp3(resp3_);
    if (resp3_) {
      rb.MapHeader(1);
    } else {
      rb.ArrayHeader(1);
      rb.ArrayHeader(2);
    }
    rb.Bulk(key);
    // The group changes (last ID, PEL, consumer); as for a non-blocking XREADGROUP, Redis does
    // not signal the key modified. The journal gets the changes here, after the write that
    // served the client, as Redis propagates them.
    std::vector<std::vector<std::string>> journal;
    const bool journaling = args_.group_read && owner.journal().on();
    StreamReadOne(owner, db, key, s, ids_[i], args_, shard::NowMs(), rb,
                  journaling ? &journal : nullptr);
    // A group read served counts one change, as when it reads at once (Redis 7.2 runs the
    // command again; 7.0 counted none).
    if (args_.group_read) owner.AddDirty();
    if (journaling) owner.journal().AppendEffect(db.index(), journal);
    Finish();
    return Offer::kServed;
  }

  // Blocks until served (then replies what the shard wrote), or replies the null array of a
  // timeout. The caller registered the client with the shard of every key.
  void Run(int64_t deadline_ms) {
    const bool served = Wait(deadline_ms);
    Unregister();
    if (served) {
      ctx_.rb.output()->append(reply_);
    } else if (!ReplyIfUnblockedWithError(ctx_.rb)) {
      ctx_.rb.NullArray();
    }
  }

 private:
  Offer Fail(std::string_view err) {
    if (!Claim()) return Offer::kGone;
    core::ReplyBuilder rb(&reply_);
    rb.set_resp3(resp3_);
    rb.Error(err);
    Finish();
    return Offer::kServed;
  }

  std::span<const StreamID> ids_;
  std::vector<StreamID> seen_last_ids_;  // XREADGROUP: per key, written on the key's shard
  const StreamReadArgs& args_;
};

// ---- XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...
//      XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...

template <bool kGroup>
void CmdXRead(ArgSlice args, ConnContext& ctx) {
  StreamReadArgs ra;
  ra.group_read = kGroup;
  int64_t timeout = -1;
  size_t streams_arg = 0, streams_count = 0;
  bool group_given = false;
  ArgParser p(args, 1);
  while (p.HasNext()) {
    if (p.Check("BLOCK", 1)) {
      // Redis refuses BLOCK from scripts outright (elsewhere that cannot block, as in MULTI,
      // it acts as an expired timeout), naming the command as the script spelt it.
      if (ctx.conn.in_script) {
        return ctx.rb.Error(core::Concat("ERR ", args[0],
                                         " command is not allowed with BLOCK option from scripts"));
      }
      if (!core::ParseInt64(p.Next(), &timeout)) {
        return ctx.rb.Error("ERR timeout is not an integer or out of range");
      }
      if (timeout < 0) return ctx.rb.Error("ERR timeout is negative");
    } else if (p.Check("COUNT", 1)) {
      const int64_t count = p.Next<int64_t>();
      if (p.ReplyError(ctx.rb)) return;
      ra.count = count < 0 ? 0 : size_t(count);
    } else if (p.Check("STREAMS", 1)) {
      streams_arg = p.pos();
      streams_count = p.Remaining();
      if (streams_count % 2 != 0) {
        // Redis 7.2 names the command and its "newest" ID.
        return ctx.rb.Error(core::Concat("ERR Unbalanced '", kGroup ? "xreadgroup" : "xread",
                                         "' list of streams: for each stream key an ID or '",
                                         kGroup ? ">" : "$", "' must be specified."));
      }
      streams_count /= 2;
      break;
    } else if (p.Check("GROUP", 2)) {
      if (!kGroup) {
        return ctx.rb.Error(
            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
      }
      ra.group = p.Next();
      ra.consumer = p.Next();
      group_given = true;
    } else if (p.Check("NOACK")) {
      if (!kGroup) {
        return ctx.rb.Error(
            "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
      }
      ra.noack = true;
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
  }
  if (streams_arg == 0) return ctx.rb.Error(kSyntaxErr);
  if (kGroup && !group_given) return ctx.rb.Error("ERR Missing GROUP option for XREADGROUP");

  std::span<const std::string_view> keys = args.subspan(streams_arg, streams_count);
  shard::Transaction tx(ctx.conn.db, keys,
                        kGroup ? shard::Transaction::kWrite : shard::Transaction::kRead);
  // Phase 1: what each key holds (0 missing, 1 a stream, 2 another type), whether it has the
  // group, and its last ID (for "$").
  std::vector<uint8_t> state(streams_count, 0), has_group(streams_count, 0);
  std::vector<StreamID> last_ids(streams_count);
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      if (it.value().type() != core::ValueType::kStream) {
        state[i] = 2;
        continue;
      }
      state[i] = 1;
      Stream* s = StreamOf(it);
      last_ids[i] = s->last_id();
      if (kGroup) has_group[i] = s->FindGroup(ra.group) != nullptr;
    }
  });
  std::vector<StreamID> ids(streams_count);
  for (size_t i = 0; i < streams_count; ++i) {
    std::string_view id_arg = args[streams_arg + streams_count + i];
    if (state[i] == 2) return ctx.rb.Error(kWrongTypeErr);
    if (kGroup && (state[i] == 0 || !has_group[i])) {
      return ctx.rb.Error(NoGroupReadErr(keys[i], ra.group));
    }
    if (kGroup && (id_arg == "$" || id_arg == "+")) {
      return ctx.rb.Error(core::Concat(
          "ERR The ", id_arg,
          " ID is meaningless in the context of XREADGROUP: you want to read "
          "the history of this consumer by specifying a proper ID, or use the > ID to get new "
          "messages. The ",
          id_arg, " ID would just return an empty result set."));
    }
    if (id_arg == "$") {
      ids[i] = last_ids[i];
    } else if (id_arg == "+") {  // Redis 7.4: the last entry, i.e. after the ID before it
      ids[i] = last_ids[i];
      if (state[i] == 1 && !ids[i].Decr()) {
        return ctx.rb.Error("ERR the stream last element ID is 0-0");
      }
    } else if (id_arg == ">") {
      if (!kGroup) {
        return ctx.rb.Error(
            "ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
            "<group> <consumer> option.");
      }
      ids[i] = kStreamNewEntries;
    } else if (!ParseStrictID(ctx.rb, id_arg, &ids[i])) {
      return;
    }
  }
  // Deadline fixed before the read, as Redis computes it when parsing the arguments. Redis 7.0
  // has no range check for XREAD's milliseconds: a timeout past the end of time never expires.
  const int64_t now = shard::NowMs();
  const int64_t deadline =
      timeout > 0 && timeout <= std::numeric_limits<int64_t>::max() - now ? now + timeout : 0;
  const size_t served = StreamReadKeys(tx, ids, ra, ctx.rb);
  // Inside MULTI nothing blocks: the reply is that of an expired timeout, as in Redis.
  if (served > 0 || timeout < 0 || !ctx.conn.may_block()) {
    tx.Conclude();
    if (served == 0) ctx.rb.NullArray();
    return;
  }
  // Nothing to read: block. "$" and ">" were resolved above; registering while the transaction
  // still holds the keys lets no write slip in between the empty read and the registration.
  StreamWaiter waiter(ctx, keys, ids, last_ids, ra);
  const int db_index = ctx.conn.db;
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          if (waiter.IndexOf(tx.key(i)) != i) continue;  // a repeated key blocks once
          t.shard.blocking().Add(db_index, tx.key(i), &waiter);
        }
      },
      /*conclude=*/true);
  waiter.Run(deadline);
}

}  // namespace

bool StreamReadOne(shard::Shard& shard, Db& db, std::string_view key, Stream* s, StreamID after,
                   const StreamReadArgs& args, int64_t now_ms, core::ReplyBuilder& rb,
                   std::vector<std::vector<std::string>>* journal) {
  StreamGroup* g = args.group_read ? s->FindGroup(args.group) : nullptr;
  const bool history = args.group_read && after != kStreamNewEntries;
  StreamID gt = after;
  bool nothing_new = false;
  if (args.group_read && !history) {
    nothing_new = s->length() == 0 || !(s->last_valid_id() > g->last_id);
    gt = g->last_id;
  } else if (!args.group_read) {
    if (s->length() == 0 || !(s->last_valid_id() > gt)) return false;
  }
  StreamConsumer* consumer = nullptr;
  if (g != nullptr) {
    // Redis 7.2 creates the consumer (and refreshes its seen-time) whether or not it reads.
    bool created;
    consumer = g->GetOrCreateConsumer(args.consumer, now_ms, &created);
    consumer->seen_time = now_ms;
    if (created) {
      shard.AddDirty();
      shard::NotifyKeyspaceEvent(kNotifyStream, "xgroup-createconsumer", key, db.index());
    }
    // Redis journals a new consumer for NOACK; otherwise the XCLAIMs of what it reads make it,
    // and shardis also journals one that reads nothing, so that the AOF keeps it.
    if (created && (args.noack || nothing_new || history) && journal != nullptr) {
      journal->push_back(CreateConsumerForm(key, args.group, args.consumer));
    }
  }
  if (nothing_new) return false;
  StreamID start = gt;
  start.Incr();
  // A history read updates delivery times and counts that Redis 7.0 does not journal.
  if (history) {
    SubReply sub(rb);
    size_t n = 0;
    for (auto p = consumer->pel.lower_bound(start);
         p != consumer->pel.end() && (!args.count || n < args.count); ++p) {
      bool found = false;
      s->Range(p->first, p->first, false, [&](StreamID id, const Stream::FieldValues& fv) {
        ReplyEntry(sub.rb, id, fv);
        found = true;
        return false;
      });
      if (!found) {
        sub.rb.ArrayHeader(2);
        ReplyID(sub.rb, p->first);
        sub.rb.NullArray();
      } else {
        p->second->delivery_time = now_ms;
        ++p->second->delivery_count;
      }
      ++n;
    }
    rb.ArrayHeader(n);
    rb.output()->append(sub.out);
    return true;
  }
  SubReply sub(rb);
  size_t n = 0;
  std::vector<StreamID> delivered;
  const StreamID last_id_before = g != nullptr ? g->last_id : StreamID{};
  s->Range(start, StreamID::Max(), false, [&](StreamID id, const Stream::FieldValues& fv) {
    if (g != nullptr) {
      if (id > g->last_id) {
        if (g->entries_read != StreamGroup::kInvalidEntriesRead &&
            !s->RangeHasTombstones(id, StreamID::Max())) {
          ++g->entries_read;
        } else if (s->entries_added()) {
          g->entries_read = s->EstimateDistanceFromFirstEverEntry(id);
        }
        g->last_id = id;
      }
      if (!args.noack) delivered.push_back(id);
    }
    ReplyEntry(sub.rb, id, fv);
    ++n;
    return !(args.count && n >= args.count);
  });
  if (!delivered.empty()) consumer->active_time = now_ms;
  for (StreamID id : delivered) {
    StreamNack* nack = g->Assign(id, consumer, now_ms);
    nack->delivery_count = 1;
    // Each entry's XCLAIM carries the group's last ID as it was once the entry was read.
    if (journal) {
      journal->push_back(XClaimForm(key, args.group, std::max(last_id_before, id), id, *nack));
    }
  }
  if (journal && args.noack && g != nullptr && g->last_id != last_id_before) {
    journal->push_back(GroupIdForm(key, args.group, *g));
  }
  rb.ArrayHeader(n);
  rb.output()->append(sub.out);
  return true;
}

size_t StreamReadKeys(shard::Transaction& tx, std::span<const StreamID> ids,
                      const StreamReadArgs& args, core::ReplyBuilder& rb) {
  const size_t n = tx.key_count();
  std::vector<std::string> parts(n);
  std::vector<uint8_t> served(n, 0);
  // Per key, written on its shard: the journal's commands for the key (a group read).
  std::vector<std::vector<std::vector<std::string>>> journal(args.group_read ? n : 0);
  const bool resp3 = rb.resp3();
  tx.Run([&](shard::TxShard& t) {
    // Each shard's own journal decides: an AOF being turned on starts them at its cut.
    const bool journaling = args.group_read && t.shard.journal().on();
    for (uint32_t i : t.keys) {
      Db::Iterator it = t.db.Find(tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it) || it.value().type() != core::ValueType::kStream) continue;
      core::ReplyBuilder part(&parts[i]);
      part.set_resp3(resp3);
      // A group read changes the group, but Redis 7.0 does not signal the key modified: WATCH
      // is not failed by it.
      served[i] = StreamReadOne(t.shard, t.db, tx.key(i), StreamOf(it), ids[i], args, t.now_ms,
                                part, journaling ? &journal[i] : nullptr);
      if (served[i] && args.group_read) t.shard.AddDirty();
    }
  });
  if (shard::JournalCommand* command = shard::CurrentJournalCommand();
      args.group_read && command != nullptr) {
    command->effect.None();
    for (auto& key_commands : journal) {
      for (auto& c : key_commands) command->effect.Add(std::move(c));
    }
  }
  size_t count = 0;
  for (uint8_t s : served) count += s;
  if (count == 0) return 0;
  if (resp3) {
    rb.MapHeader(count);
  } else {
    rb.ArrayHeader(count);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!served[i]) continue;
    if (!resp3) rb.ArrayHeader(2);
    rb.Bulk(tx.key(uint32_t(i)));
    rb.output()->append(parts[i]);
  }
  return count;
}

void RegisterStreamFamily(CommandRegistry* r) {
  r->Register({.name = "xadd", .arity = -5, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXAdd,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(1) when adding a new entry, O(N) when trimming where N "
                                      "being the number of entries evicted.",
                        .summary = "Appends an entry to a stream, optionally trimming the stream.",
                        .key_flags = "RW update", .tips = "nondeterministic_output"}});
  r->Register({.name = "xlen", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read stream fast", .on_shard = CmdXLen,
               .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
                        .summary = "Returns the number of entries of a stream.",
                        .key_flags = "RO"}});
  r->Register({.name = "xrange", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read stream slow", .on_shard = CmdXRange<false>,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(N) with N being the number of elements being returned. If "
                                      "N is constant (e.g. always asking for the first 10 elements "
                                      "with COUNT), you can consider it O(1).",
                        .summary = "Returns the entries of a stream between two IDs.",
                        .key_flags = "RO access"}});
  r->Register({.name = "xrevrange", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read stream slow", .on_shard = CmdXRange<true>,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(N) with N being the number of elements returned. If N is "
                                      "constant (e.g. always asking for the first 10 elements with "
                                      "COUNT), you can consider it O(1).",
                        .summary = "Returns the entries of a stream between two IDs, newest first.",
                        .key_flags = "RO access"}});
  r->Register({.name = "xdel", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXDel,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(1) for each single item to delete in the stream, "
                                      "regardless of the stream size.",
                        .summary = "Deletes entries from a stream.", .key_flags = "RW delete"}});
  r->Register({.name = "xtrim", .arity = -4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write stream slow", .on_shard = CmdXTrim,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(N), with N being the number of evicted entries. Constant "
                                      "times are very small however, since entries are organized "
                                      "in macro nodes containing multiple entries that can be "
                                      "released with a single deallocation.",
                        .summary = "Removes the oldest entries of a stream past a length or below "
                                   "an ID.", .key_flags = "RW delete",
                        .tips = "nondeterministic_output"}});
  r->Register({.name = "xsetid", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXSetId,
               .docs = {.group = "stream", .since = "5.0.0", .complexity = "O(1)",
                        .summary = "Sets the last ID (and counters) of a stream.",
                        .key_flags = "RW update"}});
  r->Register({.name = "xack", .arity = -4, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXAck,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(1) for each message ID processed.",
                        .summary = "Acknowledges entries of a consumer group, removing them from "
                                   "its pending list.", .key_flags = "RW update"}});
  r->Register({.name = "xpending", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read stream slow", .on_shard = CmdXPending,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(N) with N being the number of elements returned, so "
                                      "asking for a small fixed number of entries per call is "
                                      "O(1). O(M), where M is the total number of entries scanned "
                                      "when used with the IDLE filter. When the command returns "
                                      "just the summary and the list of consumers is small, it "
                                      "runs in O(1) time; otherwise, an additional O(N) time for "
                                      "iterating every consumer.",
                        .summary = "Returns a summary or a range of the entries delivered to a "
                                   "consumer group and not acknowledged.", .key_flags = "RO access",
                        .tips = "nondeterministic_output"}});
  r->Register({.name = "xclaim", .arity = -6, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXClaim,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "O(log N) with N being the number of messages in the PEL of "
                                      "the consumer group.",
                        .summary = "Transfers given pending entries idle for long enough to a "
                                   "consumer.", .key_flags = "RW update",
                        .tips = "nondeterministic_output"}});
  r->Register({.name = "xautoclaim", .arity = -6, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write stream fast", .on_shard = CmdXAutoClaim,
               .docs = {.group = "stream", .since = "6.2.0",
                        .complexity = "O(1) if COUNT is small.",
                        .summary = "Transfers the pending entries idle for long enough to a "
                                   "consumer, scanning from an ID.", .key_flags = "RW delete",
                        .tips = "nondeterministic_output"}});
  // Keys follow STREAMS (Redis' movablekeys: legacy range 0 0 0).
  r->Register({.name = "xread", .arity = -4, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read stream slow blocking", .on_conn = CmdXRead<false>,
               .key_finder = StreamsKeys,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "For each stream mentioned: O(N) with N being the number of "
                                      "elements being returned, it means that XREAD-ing with a "
                                      "fixed COUNT is O(1). Note that when the BLOCK option is "
                                      "used, XADD will pay O(M) time in order to serve the M "
                                      "clients blocked on the stream getting new data.",
                        .summary = "Returns the entries of streams after given IDs, optionally "
                                   "waiting for new ones.", .key_flags = "RO access"}});
  r->Register({.name = "xreadgroup", .arity = -7, .flags = kW, .keys = kNoKeys,
               .acl_categories = "write stream slow blocking", .on_conn = CmdXRead<true>,
               .key_finder = StreamsKeys,
               .docs = {.group = "stream", .since = "5.0.0",
                        .complexity = "For each stream mentioned: O(M) with M being the number of "
                                      "elements returned. If M is constant (e.g. always asking for "
                                      "the first 10 elements with COUNT), you can consider it "
                                      "O(1). On the other side when XREADGROUP blocks, XADD will "
                                      "pay the O(N) time in order to serve the N clients blocked "
                                      "on the stream getting new data.",
                        .summary = "Delivers new or pending entries of streams to a consumer of a "
                                   "group, optionally waiting.", .key_flags = "RO access"}});
  // Containers: each subcommand finds its key (args[2]) itself.
  r->Register({.name = "xgroup", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdXGroup,
               .docs = {.group = "stream", .since = "5.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about the consumer groups of a stream."},
               .container = &kXGroupContainer});
  r->Register({.name = "xinfo", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdXInfo,
               .docs = {.group = "stream", .since = "5.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands that describe a stream, its groups and their "
                                   "consumers."},
               .container = &kXInfoContainer});
}

}  // namespace shardis::server

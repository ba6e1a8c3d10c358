#include "server/memcache_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <absl/container/flat_hash_set.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "core/string_util.h"
#include "server/server_state.h"
#include "shard/eviction.h"
#include "shard/journal_durability.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::CompactValue;
using Cmd = core::MemcacheParser::Command;
using Op = core::MemcacheParser::Op;
using shard::Db;

// memcached's keys live in database 0 (RESP clients SELECT 0 to see them).
constexpr int kMemcacheDb = 0;
// memcached's exptime: up to 30 days it is relative seconds, above an absolute Unix time.
constexpr int64_t kMaxRelativeExptime = 60 * 60 * 24 * 30;
constexpr std::string_view kVersion = "1.6.18-shardis-0.1.0";

// Counters of `stats`, per thread (each is summed over all threads when asked). Counted where the
// work runs: on the key's shard for hits and misses, in the connection for commands.
struct McStats {
  uint64_t curr_connections = 0;
  uint64_t total_connections = 0;
  uint64_t cmd_get = 0, cmd_set = 0, cmd_flush = 0, cmd_touch = 0;
  uint64_t get_hits = 0, get_misses = 0;
  uint64_t delete_hits = 0, delete_misses = 0;
  uint64_t incr_hits = 0, incr_misses = 0, decr_hits = 0, decr_misses = 0;
  uint64_t cas_hits = 0, cas_misses = 0, cas_badval = 0;
  uint64_t touch_hits = 0, touch_misses = 0;
  uint64_t store_too_large = 0, total_items = 0;
  io::StreamCounters net;  // bytes_read, bytes_written
};
thread_local McStats tl_stats;
thread_local absl::flat_hash_set<int>* tl_fds = nullptr;  // this thread's memcached clients
thread_local bool tl_stopping = false;

// The deadline of exptime in Unix ms: 0 for none, -1 when the item is expired at once (negative,
// or an absolute time that has passed).
int64_t DeadlineMs(int64_t exptime, int64_t now_ms) {
  if (exptime == 0) return 0;
  if (exptime < 0) return -1;
  if (exptime <= kMaxRelativeExptime) return now_ms + exptime * 1000;
  if (exptime > INT64_MAX / 1000) return INT64_MAX;
  return exptime * 1000 <= now_ms ? -1 : exptime * 1000;
}

// memcached's safe_strtoull on a stored value: leading spaces, digits, then the end or a space
// (so a value padded by decr still counts); no sign, no overflow.
bool ParseCounter(std::string_view s, uint64_t* out) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  if (i < s.size() && s[i] == '+') ++i;
  const size_t digits = i;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, uint64_t(s[i] - '0'), &v))
      return false;
  }
  if (i == digits) return false;
  if (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) return false;
  *out = v;
  return true;
}

bool IsStorage(Op op) {
  return op == Op::kSet || op == Op::kAdd || op == Op::kReplace || op == Op::kCas ||
         op == Op::kAppend || op == Op::kPrepend;
}

// Runs single-key commands on the key's shard: Db holds the value, its TTL and its McMeta.
class KeyExecutor {
 public:
  KeyExecutor(shard::Shard& shard, Db& db, int64_t now_ms, std::string* out)
      : shard_(shard), db_(db), now_ms_(now_ms), out_(out) {}

  void Run(const Cmd& cmd, uint64_t hash) {
    key_ = cmd.keys[0];
    hash_ = hash;
    // maxmemory applies to memcached's storage commands as to RESP's denyoom ones (eviction.h).
    if (shard::MemoryLimit::maxmemory() != 0 && IsStorage(cmd.op) &&
        !shard::MakeRoomForWrite(shard_, now_ms_)) [[unlikely]] {
      return Reply("SERVER_ERROR out of memory storing object");
    }
    switch (cmd.op) {
      case Op::kSet:
      case Op::kAdd:
      case Op::kReplace:
      case Op::kCas:
        return Store(cmd);
      case Op::kAppend:
      case Op::kPrepend:
        return Concat(cmd);
      case Op::kIncr:
      case Op::kDecr:
        return Counter(cmd);
      case Op::kDelete:
        return Delete();
      case Op::kTouch:
        return Touch(cmd);
      default:
        LOG(DFATAL) << "not a key command";
    }
  }

  // One key of get/gets/gat/gats: appends its VALUE block (nothing on a miss).
  void Retrieve(const Cmd& cmd, std::string_view key, uint64_t hash) {
    key_ = key;
    hash_ = hash;
    const bool touch = cmd.op == Op::kGat || cmd.op == Op::kGats;
    if (touch) ++tl_stats.cmd_touch;
    ++tl_stats.cmd_get;
    Db::Iterator it = db_.Find(key, hash, now_ms_);
    if (!Db::Found(it) || !it.value().IsString()) {
      ++tl_stats.get_misses;
      if (touch) ++tl_stats.touch_misses;
      ++shard_.stats().keyspace_misses;
      return;
    }
    ++tl_stats.get_hits;
    if (touch) ++tl_stats.touch_hits;
    ++shard_.stats().keyspace_hits;
    char scratch[CompactValue::kScratchSize];
    std::string_view value = it.value().GetString(scratch);
    const shard::McMeta* meta = db_.FindMcMeta(key, hash);
    const uint32_t flags = meta ? meta->flags : 0;
    core::Append(out_, "VALUE ", key, " ", flags, " ", value.size());
    if (cmd.op == Op::kGets || cmd.op == Op::kGats) {
      // The first read of a CAS gives the key one (and an McMeta entry).
      shard::McMeta& m = db_.MutableMcMeta(key, hash);
      if (m.cas == 0) m.cas = db_.NextCas();
      core::Append(out_, " ", m.cas);
    }
    core::Append(out_, "\r\n", value, "\r\n");
    // gat: the new TTL after the read (an expired one removes the key).
    if (touch) SetTtl(it, DeadlineMs(cmd.exptime, now_ms_));
  }

 private:
  void Reply(std::string_view line) { core::Append(out_, line, "\r\n"); }

  // After a write: WATCH and blocked clients learn of it (NoteModified, which drops the McMeta
  // entry), then the flags come back with a fresh CAS when there are any. Every memcached write
  // counts one change (the dirty counter), as its RESP equivalent (SET, APPEND, INCRBY, ...) does.
  void Written(uint32_t flags) {
    db_.NoteModified(key_);
    shard_.AddDirty();
    Journal();
    if (flags != 0) {
      shard::McMeta& m = db_.MutableMcMeta(key_, hash_);
      m.flags = flags;
      m.cas = db_.NextCas();
    }
    ++tl_stats.total_items;
  }

  void SetTtl(Db::Iterator it, int64_t at_ms) {
    shard_.AddDirty();  // as EXPIRE: a new deadline or a delete
    if (at_ms < 0) {
      db_.Erase(it, key_, hash_);
      db_.NoteModified(key_);
      return Journal();
    }
    db_.SetExpire(it, key_, hash_, at_ms);
    Journal();
  }

  // The journal (AOF) replays a memcached write as the state it left, in Redis commands: SET of
  // the value, with PXAT when it has a deadline, or DEL when it removed the key. Flags and CAS
  // values are the memcached port's own and are not kept, as in snapshots.
  void Journal() {
    shard::ShardJournal& journal = shard_.journal();
    if (!journal.on()) return;
    Db::Iterator it = db_.Find(key_, hash_, now_ms_);
    if (!Db::Found(it)) {
      const std::string_view del[] = {"DEL", key_};
      return journal.AppendCommand(db_.index(), del);
    }
    char scratch[CompactValue::kScratchSize];
    const std::string_view value = it.value().GetString(scratch);
    const int64_t at_ms = db_.ExpireAt(it, key_, hash_);
    if (at_ms == 0) {
      const std::string_view set[] = {"SET", key_, value};
      return journal.AppendCommand(db_.index(), set);
    }
    const std::string deadline = std::to_string(at_ms);
    const std::string_view set[] = {"SET", key_, value, "PXAT", deadline};
    journal.AppendCommand(db_.index(), set);
  }

  void Store(const Cmd& cmd) {
    ++tl_stats.cmd_set;
    Db::Iterator it = db_.Find(key_, hash_, now_ms_);
    const bool found = Db::Found(it);
    if (cmd.op == Op::kAdd && found) return Reply("NOT_STORED");
    if (cmd.op == Op::kReplace && !found) return Reply("NOT_STORED");
    if (cmd.op == Op::kCas) {
      if (!found) {
        ++tl_stats.cas_misses;
        return Reply("NOT_FOUND");
      }
      const shard::McMeta* meta = db_.FindMcMeta(key_, hash_);
      if (meta == nullptr || meta->cas != cmd.cas_unique || !it.value().IsString()) {
        ++tl_stats.cas_badval;
        return Reply("EXISTS");
      }
      ++tl_stats.cas_hits;
    }
    const int64_t at_ms = DeadlineMs(cmd.exptime, now_ms_);
    if (at_ms < 0) {
      // Stored and expired at once, as memcached: the key is gone.
      if (found) {
        db_.Erase(it, key_, hash_);
        db_.NoteModified(key_);
        shard_.AddDirty();
        Journal();
      }
      return Reply("STORED");
    }
    db_.Store(key_, hash_, CompactValue::FromString(cmd.data), at_ms, now_ms_);
    Written(cmd.flags);
    Reply("STORED");
  }

  // append/prepend: the old flags and TTL stay (memcached ignores the command's).
  void Concat(const Cmd& cmd) {
    ++tl_stats.cmd_set;
    Db::Iterator it = db_.Find(key_, hash_, now_ms_);
    if (!Db::Found(it) || !it.value().IsString()) return Reply("NOT_STORED");
    const shard::McMeta* meta = db_.FindMcMeta(key_, hash_);
    const uint32_t flags = meta ? meta->flags : 0;
    CompactValue& cell = it.value();
    if (cell.StringSize() + cmd.data.size() + key_.size() +
            core::MemcacheParser::kItemOverhead + 2 > core::MemcacheParser::kMaxItemSize) {
      ++tl_stats.store_too_large;
      return Reply("SERVER_ERROR out of memory storing object");
    }
    if (cmd.op == Op::kAppend) {
      cell.Append(cmd.data);
    } else {
      char scratch[CompactValue::kScratchSize];
      std::string value = core::Concat(cmd.data, cell.GetString(scratch));
      cell.SetString(value);
    }
    Written(flags);
    Reply("STORED");
  }

  // incr wraps around 2^64, decr stops at 0. Like memcached, a result shorter than the old value
  // is padded with spaces to the old length (memcached rewrites the item in place), while the
  // reply has the bare number.
  void Counter(const Cmd& cmd) {
    const bool incr = cmd.op == Op::kIncr;
    Db::Iterator it = db_.Find(key_, hash_, now_ms_);
    if (!Db::Found(it)) {
      ++(incr ? tl_stats.incr_misses : tl_stats.decr_misses);
      return Reply("NOT_FOUND");
    }
    ++(incr ? tl_stats.incr_hits : tl_stats.decr_hits);
    uint64_t value;
    char scratch[CompactValue::kScratchSize];
    std::string_view old = it.value().IsString() ? it.value().GetString(scratch) : "";
    if (!it.value().IsString() || !ParseCounter(old, &value)) {
      return Reply("CLIENT_ERROR cannot increment or decrement non-numeric value");
    }
    if (incr) {
      value += cmd.delta;
    } else {
      value = cmd.delta > value ? 0 : value - cmd.delta;
    }
    std::string digits = core::Concat(value);
    Reply(digits);
    if (digits.size() < old.size()) digits.resize(old.size(), ' ');
    const shard::McMeta* meta = db_.FindMcMeta(key_, hash_);
    const uint32_t flags = meta ? meta->flags : 0;
    it.value().SetString(digits);
    Written(flags);
    --tl_stats.total_items;  // not a new item
  }

  void Delete() {
    if (!db_.Erase(key_, hash_, now_ms_)) {
      ++tl_stats.delete_misses;
      return Reply("NOT_FOUND");
    }
    ++tl_stats.delete_hits;
    db_.NoteModified(key_);
    shard_.AddDirty();
    Journal();
    Reply("DELETED");
  }

  void Touch(const Cmd& cmd) {
    ++tl_stats.cmd_touch;
    Db::Iterator it = db_.Find(key_, hash_, now_ms_);
    if (!Db::Found(it)) {
      ++tl_stats.touch_misses;
      return Reply("NOT_FOUND");
    }
    ++tl_stats.touch_hits;
    SetTtl(it, DeadlineMs(cmd.exptime, now_ms_));
    Reply("TOUCHED");
  }

  shard::Shard& shard_;
  Db& db_;
  int64_t now_ms_;
  std::string* out_;
  std::string_view key_;
  uint64_t hash_ = 0;
};

}  // namespace

MemcacheConnection::MemcacheConnection(int fd, io::Proactor* proactor,
                                       std::unique_ptr<io::TlsSession> tls)
    : proactor_(proactor),
      stream_(proactor, fd, &tl_stats.net),
      runs_(proactor, this),
      relaxed_order_(RelaxedPipelineOrder()) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (tls != nullptr) stream_.set_tls(std::move(tls));
  if (tl_fds == nullptr) tl_fds = new absl::flat_hash_set<int>();
  tl_fds->insert(fd);
  ++tl_stats.curr_connections;
  ++tl_stats.total_connections;
}

MemcacheConnection::~MemcacheConnection() {
  // The stream (destroyed after this) closes the fd.
  tl_fds->erase(stream_.fd());
  --tl_stats.curr_connections;
}

void MemcacheConnection::Run() {
  while (stream_.Read(parser_.bytes_needed())) {
    if (!ProcessInput()) break;
    stream_.input().ReleaseIfIdle();
  }
}

bool MemcacheConnection::ProcessInput() {
  out_.clear();
  used_cmds_ = 0;
  used_slots_ = 0;
  now_ms_ = shard::NowMs();
  bool keep_open = true;
  io::InputBuffer& in = stream_.input();
  while (in.unparsed_size() > 0) {
    auto r = parser_.Parse(in.unparsed(), in.unparsed_size());
    if (r == core::MemcacheParser::Result::kNeedMore) break;
    if (r == core::MemcacheParser::Result::kClose) {
      keep_open = false;
      break;
    }
    // Kept until the batch has run: its keys and data are views into the input buffer, which
    // stays put until the next read.
    if (used_cmds_ == cmds_.size()) cmds_.emplace_back();
    cmds_[used_cmds_] = parser_.command();
    keep_open = Dispatch(uint32_t(used_cmds_++));
    in.Consume(parser_.consumed());
    parser_.Reset();
    if (!keep_open) break;
  }
  FlushQueued();
  if (batch_writes_) [[unlikely]] {
    batch_writes_ = false;
    shard::AwaitJournal();  // appendfsync always: no reply before the writes are on disk
  }
  // The replies leave without waiting: the next receive goes in the same submit.
  if (!out_.empty() && !stream_.Send(&out_)) return false;
  return keep_open;
}

std::string* MemcacheConnection::NextOutput() {
  if (runs_.empty()) return &out_;
  // Something queued comes before this output: keep the order with a slot.
  if (used_slots_ == slots_.size()) slots_.emplace_back();
  std::string* slot = &slots_[used_slots_++];
  slot->clear();
  return slot;
}

bool MemcacheConnection::Dispatch(uint32_t index) {
  const Cmd& cmd = cmds_[index];
  if (shard::JournalWaitsActive() && cmd.op != Op::kGet && cmd.op != Op::kGets) [[unlikely]] {
    batch_writes_ = true;  // the AOF is on: the replies may wait for the journal (ProcessInput)
  }
  switch (cmd.op) {
    case Op::kSkip:
      return true;
    case Op::kError:
      if (!cmd.noreply) core::Append(NextOutput(), cmd.error, "\r\n");
      return true;
    case Op::kSet:
    case Op::kAdd:
    case Op::kReplace:
    case Op::kAppend:
    case Op::kPrepend:
    case Op::kCas:
      if (cmd.too_large) {
        ++tl_stats.store_too_large;
        if (!cmd.noreply) NextOutput()->append("SERVER_ERROR object too large for cache\r\n");
        // As memcached: a failed set must not leave the old value behind.
        if (cmd.op == Op::kSet) AddKeyItem(index, 0, Op::kDelete, /*silent=*/true);
        return true;
      }
      AddKeyItem(index, 0, cmd.op, cmd.noreply);
      return true;
    case Op::kDelete:
    case Op::kIncr:
    case Op::kDecr:
    case Op::kTouch:
      AddKeyItem(index, 0, cmd.op, cmd.noreply);
      return true;
    case Op::kGet:
    case Op::kGets:
    case Op::kGat:
    case Op::kGats:
      // One item per key, each run on its key's shard in turn (memcached's multi-key get is not
      // atomic either); the blocks come out in key order.
      for (uint32_t k = 0; k < cmd.keys.size(); ++k) AddKeyItem(index, k, cmd.op, false);
      NextOutput()->append("END\r\n");
      return true;
    default:
      break;
  }
  // The rest has no key: what came before runs first.
  FlushQueued();
  const size_t mark = out_.size();
  switch (cmd.op) {
    case Op::kFlushAll:
      FlushAll(cmd.exptime);
      out_.append("OK\r\n");
      break;
    case Op::kVersion:
      core::Append(&out_, "VERSION ", kVersion, "\r\n");
      break;
    case Op::kVerbosity:
      out_.append("OK\r\n");
      break;
    case Op::kStats:
      Stats(cmd);
      break;
    case Op::kQuit:
      return false;
    default:
      LOG(DFATAL) << "unhandled memcached op";
  }
  // noreply: whatever the command writes is dropped (errors included, as memcached does).
  if (cmd.noreply) out_.resize(mark);
  return true;
}

void MemcacheConnection::AddKeyItem(uint32_t cmd_index, uint32_t key_index, Op op, bool silent) {
  const std::string_view key = cmds_[cmd_index].keys[key_index];
  KeyItem item{cmd_index, key_index, op, silent, core::HashBytes(key), 0};
  const unsigned sid = shard::shard_set->ShardOf(key, item.hash);
  // Redis' order, as for RESP (docs/pipelines.md): a key on this thread runs at once only while
  // nothing is queued before it.
  if (sid == proactor_->index() && (runs_.empty() || relaxed_order_)) {
    shard::Shard& s = *shard::Shard::current();
    shard::TxQueue& txq = s.tx_queue();
    if (!txq.any_locks() || !txq.Conflicts(kMemcacheDb, key, IsWrite(op))) {
      std::string* target = NextOutput();
      const size_t mark = target->size();
      RunItem(s, s.db(kMemcacheDb), now_ms_, item, target);
      if (silent) target->resize(mark);
      s.ServeBlocked();
      return;
    }
  }
  if (used_slots_ == slots_.size()) slots_.emplace_back();
  item.slot = uint32_t(used_slots_++);
  slots_[item.slot].clear();
  items_.push_back(item);  // a locked key waits for its transaction in RunLockedItems
  runs_.Add(sid);
}

bool MemcacheConnection::IsWrite(Op op) { return op != Op::kGet && op != Op::kGets; }

void MemcacheConnection::RunItem(shard::Shard& s, Db& db, int64_t now_ms, const KeyItem& item,
                                 std::string* out) {
  const Cmd& cmd = cmds_[item.cmd];
  KeyExecutor ex(s, db, now_ms, out);
  switch (item.op) {
    case Op::kGet:
    case Op::kGets:
    case Op::kGat:
    case Op::kGats:
      return ex.Retrieve(cmd, cmd.keys[item.key], item.hash);
    case Op::kDelete:
      if (cmd.op != Op::kDelete) {
        Cmd del = cmd;  // the delete after a too-large set
        del.op = Op::kDelete;
        return ex.Run(del, item.hash);
      }
      [[fallthrough]];
    default:
      return ex.Run(cmd, item.hash);
  }
}

size_t MemcacheConnection::RunItems(shard::Shard& s, size_t begin, size_t end) {
  shard::TxQueue& txq = s.tx_queue();
  Db& db = s.db(kMemcacheDb);
  size_t i = begin;
  for (; i < end; ++i) {
    const KeyItem& item = items_[i];
    const std::string_view key = cmds_[item.cmd].keys[item.key];
    if (txq.any_locks() && txq.Conflicts(kMemcacheDb, key, IsWrite(item.op))) break;
    RunItem(s, db, now_ms_, item, &slots_[item.slot]);
  }
  s.ServeBlocked();
  return i - begin;
}

void MemcacheConnection::RunLockedItems(unsigned sid, size_t begin, size_t end) {
  std::vector<std::string_view> keys;
  for (size_t i = begin; i < end; ++i) keys.push_back(cmds_[items_[i].cmd].keys[items_[i].key]);
  shard::Transaction tx(kMemcacheDb, keys, shard::Transaction::kWrite);
  DCHECK(tx.shards().size() == 1 && tx.shards()[0] == sid);
  tx.Run(
      [&](shard::TxShard& t) {
        for (size_t i = begin; i < end; ++i) {
          RunItem(t.shard, t.db, t.now_ms, items_[i], &slots_[items_[i].slot]);
        }
        t.shard.ServeBlocked();
      },
      /*conclude=*/true);
}

void MemcacheConnection::FlushQueued() {
  if (runs_.empty()) return;
  runs_.RunAll();
  // Every output piece after the first queued item is in a slot, in order; silent items' replies
  // (noreply) are dropped.
  for (const KeyItem& item : items_) {
    if (item.silent) slots_[item.slot].clear();
  }
  for (size_t i = 0; i < used_slots_; ++i) out_.append(slots_[i]);
  used_slots_ = 0;
  items_.clear();
}

void MemcacheConnection::FlushAll(int64_t delay_s) {
  ++tl_stats.cmd_flush;
  auto flush = [] {
    // As FLUSHDB, and journaled as one: one transaction over every shard.
    const std::string_view as_flushdb[] = {"FLUSHDB"};
    shard::JournalCommand journal{kMemcacheDb, as_flushdb, nullptr};
    shard::JournalCommandScope journal_scope(&journal);
    shard::Transaction tx(kMemcacheDb, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
    tx.Run(
        [](shard::TxShard& t) {
          t.shard.AddDirty(t.db.size());  // one change per key removed
          t.db.Clear();
        },
        /*conclude=*/true);
  };
  const int64_t now_ms = shard::NowMs();
  const int64_t at_ms = DeadlineMs(delay_s, now_ms);
  if (at_ms <= now_ms) return flush();
  // Delayed: a timer fiber on this thread (memcached invalidates then everything stored before
  // the deadline, which is everything there is at the deadline). It gives up if the server stops.
  proactor_->Launch([this_proactor = proactor_, at_ms, flush] {
    while (!tl_stopping) {
      const int64_t left = at_ms - shard::NowMs();
      if (left <= 0) return flush();
      this_proactor->SleepFor(std::chrono::milliseconds(std::min<int64_t>(left, 100)));
    }
  });
}

void MemcacheConnection::Stats(const Cmd& cmd) {
  if (cmd.stats_arg == "reset") {
    shard::shard_set->AwaitAll([](shard::Shard&) {
      McStats fresh;
      fresh.curr_connections = tl_stats.curr_connections;
      fresh.total_connections = tl_stats.total_connections;
      tl_stats = fresh;
    });
    out_.append("RESET\r\n");
    return;
  }
  // Every shard thread is also a connection thread: summing per shard covers every counter.
  McStats sum;
  uint64_t items = 0, bytes = 0;
  std::vector<McStats> per(shard::shard_set->size());
  std::vector<uint64_t> per_items(per.size()), per_bytes(per.size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    per[s.id()] = tl_stats;
    per_items[s.id()] = s.db(kMemcacheDb).size();
    per_bytes[s.id()] = s.used_memory();
  });
  for (size_t i = 0; i < per.size(); ++i) {
    const McStats& t = per[i];
    items += per_items[i];
    bytes += per_bytes[i];
#define SHARDIS_SUM(f) sum.f += t.f
    SHARDIS_SUM(curr_connections); SHARDIS_SUM(total_connections); SHARDIS_SUM(cmd_get);
    SHARDIS_SUM(cmd_set); SHARDIS_SUM(cmd_flush); SHARDIS_SUM(cmd_touch); SHARDIS_SUM(get_hits);
    SHARDIS_SUM(get_misses); SHARDIS_SUM(delete_hits); SHARDIS_SUM(delete_misses);
    SHARDIS_SUM(incr_hits); SHARDIS_SUM(incr_misses); SHARDIS_SUM(decr_hits);
    SHARDIS_SUM(decr_misses); SHARDIS_SUM(cas_hits); SHARDIS_SUM(cas_misses);
    SHARDIS_SUM(cas_badval); SHARDIS_SUM(touch_hits); SHARDIS_SUM(touch_misses);
    SHARDIS_SUM(store_too_large); SHARDIS_SUM(total_items); SHARDIS_SUM(net.bytes_in);
    SHARDIS_SUM(net.bytes_out);
#undef SHARDIS_SUM
  }
  const int64_t now_ms = shard::NowMs();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto stat = [&](std::string_view name, auto value) {
    core::Append(&out_, "STAT ", name, " ", value, "\r\n");
  };
  stat("pid", getpid());
  stat("uptime", (now_ms - Info().start_ms) / 1000);
  stat("time", now_ms / 1000);
  stat("version", kVersion);
  stat("pointer_size", sizeof(void*) * 8);
  auto seconds = [](const timeval& tv) {
    return absl::StrFormat("%ld.%06ld", long(tv.tv_sec), long(tv.tv_usec));
  };
  stat("rusage_user", seconds(ru.ru_utime));
  stat("rusage_system", seconds(ru.ru_stime));
  stat("curr_connections", sum.curr_connections);
  stat("total_connections", sum.total_connections);
  stat("rejected_connections", 0);
  stat("cmd_get", sum.cmd_get);
  stat("cmd_set", sum.cmd_set);
  stat("cmd_flush", sum.cmd_flush);
  stat("cmd_touch", sum.cmd_touch);
  stat("get_hits", sum.get_hits);
  stat("get_misses", sum.get_misses);
  stat("get_expired", 0);
  stat("get_flushed", 0);
  stat("delete_misses", sum.delete_misses);
  stat("delete_hits", sum.delete_hits);
  stat("incr_misses", sum.incr_misses);
  stat("incr_hits", sum.incr_hits);
  stat("decr_misses", sum.decr_misses);
  stat("decr_hits", sum.decr_hits);
  stat("cas_misses", sum.cas_misses);
  stat("cas_hits", sum.cas_hits);
  stat("cas_badval", sum.cas_badval);
  stat("touch_hits", sum.touch_hits);
  stat("touch_misses", sum.touch_misses);
  stat("store_too_large", sum.store_too_large);
  stat("bytes_read", sum.net.bytes_in);
  stat("bytes_written", sum.net.bytes_out);
  stat("limit_maxbytes", 0);
  stat("threads", shard::shard_set->size());
  stat("bytes", bytes);
  stat("curr_items", items);
  stat("total_items", sum.total_items);
  stat("evictions", 0);
  out_.append("END\r\n");
}

void StopMemcacheConnections() {
  tl_stopping = true;
  if (tl_fds == nullptr) return;
  for (int fd : *tl_fds) shutdown(fd, SHUT_RD);
}

}  // namespace shardis::server

#include "shard/transaction.h"

#include <algorithm>
#include <atomic>
#include <boost/fiber/context.hpp>

#include "core/compact_value.h"
#include "io/proactor.h"
#include "shard/fiber_locals.h"
#include "shard/shard_set.h"

namespace shardis::shard {

using boost::fibers::context;

namespace {

// Transaction ids: one process-wide counter. Only multi-shard transactions (and single-key
// commands that found their key locked) take an id; the GET/SET fast path never touches it.
std::atomic<uint64_t> g_next_txid{1};

}  // namespace

// Per fiber, not per thread: other connections' fibers on the same thread run while an EXEC
// waits for its hops.
Transaction* Transaction::CurrentExec() { return CurrentFiberLocals().exec; }
void Transaction::SetCurrentExec(Transaction* tx) { CurrentFiberLocals().exec = tx; }

Transaction::Transaction(int db_index, std::span<const std::string_view> keys, Mode mode,
                         Transaction* outer)
    : db_index_(db_index), mode_(mode), outer_(outer), keys_(keys) {
  ShardSet& ss = *shard_set;
  by_shard_.resize(ss.size());
  hashes_.resize(keys.size());
  shard_of_.resize(keys.size());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const uint64_t h = hashes_[i] = core::HashBytes(keys[i]);
    const unsigned sid = shard_of_[i] = ss.ShardOf(keys[i], h);
    by_shard_[sid].push_back(i);
  }
  Init();
}

Transaction::Transaction(int db_index, AllShards, Mode mode, Transaction* outer)
    : db_index_(db_index), mode_(mode), all_shards_(true), outer_(outer) {
  by_shard_.resize(shard_set->size());
  Init();
}

void Transaction::Init() {
  client_ = CurrentCommandClient();
  if (outer_ == nullptr) outer_ = CurrentExec();
  origin_ = io::Proactor::current()->index();
  if (outer_ == nullptr && mode_ == kWrite) journal_id_ = NewJournalId();
  const unsigned n = shard_set->size();
  parts_.resize(n);
  for (unsigned sid = 0; sid < n; ++sid) {
    Part& part = parts_[sid];
    part.tx = this;
    part.sid = sid;
    part.global = all_shards_;
    part.exclusive = mode_ == kWrite;
    for (uint32_t i : by_shard_[sid]) part.keys.push_back({db_index_, keys_[i]});
  }
  for (unsigned sid = 0; sid < n; ++sid) {
    if (all_shards_ || !by_shard_[sid].empty()) shards_.push_back(sid);
  }
}

void Transaction::AddReadLocks(int db_index, std::span<const std::string_view> keys) {
  DCHECK(!scheduled_);
  if (outer_ != nullptr || all_shards_) return;  // already covered
  for (std::string_view key : keys) {
    const unsigned sid = shard_set->ShardOf(key);
    // A part has one mode: a read lock inside a write transaction is a write lock, which is
    // stricter and just as correct.
    parts_[sid].keys.push_back({db_index, key});
    if (!std::binary_search(shards_.begin(), shards_.end(), sid)) {
      shards_.insert(std::lower_bound(shards_.begin(), shards_.end(), sid), sid);
    }
  }
}

bool Transaction::TryAddKey(int db_index, std::string_view key) {
  DCHECK(outer_ == nullptr && !concluded_);
  if (all_shards_) return true;
  const unsigned sid = shard_set->ShardOf(key);
  const bool involved = std::binary_search(shards_.begin(), shards_.end(), sid);
  if (!scheduled_) {
    parts_[sid].keys.push_back({db_index, key});
    if (!involved) shards_.insert(std::lower_bound(shards_.begin(), shards_.end(), sid), sid);
    return true;
  }
  if (!involved) return false;
  parts_[sid].joining = {db_index, key};
  Dispatch({&sid, 1}, &Transaction::DoAddKey);
  return parts_[sid].joined;
}

void Transaction::PrepareLocks() {
  if (journal_id_ != 0 && shards_.size() > 1 && Shard::current()->journal().on()) {
    for (unsigned sid : shards_) parts_[sid].in_order = true;
  }
  for (unsigned sid : shards_) {
    auto& keys = parts_[sid].keys;
    auto less = [](const TxPart::LockKey& a, const TxPart::LockKey& b) {
      return a.db != b.db ? a.db < b.db : a.key < b.key;
    };
    auto same = [](const TxPart::LockKey& a, const TxPart::LockKey& b) {
      return a.db == b.db && a.key == b.key;
    };
    std::sort(keys.begin(), keys.end(), less);
    keys.erase(std::unique(keys.begin(), keys.end(), same), keys.end());
  }
}

Transaction::~Transaction() { Conclude(); }

// ---- The coordinator (the command's fiber).

void Transaction::Run(absl::FunctionRef<void(TxShard&)> fn, bool conclude) {
  DCHECK(!concluded_);
  if (outer_ != nullptr) return RunNested(shards_, fn);
  phase_fn_ = &fn;
  conclude_in_phase_ = conclude;
  if (!scheduled_) PrepareLocks();
  if (!scheduled_ && conclude && shards_.size() == 1) {
    // One shard, one phase: run at once if no scheduled transaction wants the keys, else queue
    // there. One hop, no scheduling round.
    phase_ran_ = true;
    Dispatch(shards_, &Transaction::DoQuickRun);
    concluded_ = true;
    SendJournalPayload();
    return;
  }
  if (!scheduled_) Schedule();
  phase_ran_ = true;
  Dispatch(shards_, &Transaction::DoPhase);
  if (conclude) {
    concluded_ = true;
    SendJournalPayload();
  }
}

void Transaction::RunOn(unsigned sid, absl::FunctionRef<void(TxShard&)> fn) {
  DCHECK(std::binary_search(shards_.begin(), shards_.end(), sid));
  DCHECK(!concluded_);
  if (outer_ != nullptr) return RunNested({&sid, 1}, fn);
  phase_fn_ = &fn;
  conclude_in_phase_ = false;
  if (!scheduled_) {
    PrepareLocks();
    Schedule();
  }
  phase_ran_ = true;
  Dispatch({&sid, 1}, &Transaction::DoPhase);
}

void Transaction::Conclude() {
  if (outer_ != nullptr || !scheduled_ || concluded_) return;
  concluded_ = true;
  Dispatch(shards_, &Transaction::DoConclude);
  SendJournalPayload();
}

uint64_t Transaction::dirty_count() const {
  uint64_t sum = 0;
  for (unsigned sid : shards_) sum += parts_[sid].dirty;
  return sum;
}

void Transaction::SendJournalPayload() {
  bool marked = false;
  for (unsigned sid : shards_) marked |= parts_[sid].marked;
  if (!marked) return;
  // The commands that replay this transaction: an EXEC's, collected as its commands ran; else
  // the command being run, if the phases changed anything.
  JournalUnit unit;
  JournalCommand* command = CurrentJournalCommand();
  if (command != nullptr && command->exec_unit != nullptr) {
    unit = std::move(*command->exec_unit);
  } else if (command != nullptr && (dirty_count() > 0 || command->force)) {
    if (command->effect.set()) {
      unit.Add(command->db, command->effect.commands());
    } else {
      unit.Add(command->db, command->args);
    }
  }
  unit.rotate = command != nullptr && command->rotate;
  // Every thread owns a shard, whose journal the writer collects.
  Shard::current()->journal().AppendPayload(journal_id_, unit);
}

void Transaction::Schedule() {
  // Scheduling fails on a shard where a transaction with a higher id already ran: take a new id
  // (higher than every id that ran anywhere) and try again.
  for (;;) {
    const uint64_t txid = g_next_txid.fetch_add(1, std::memory_order_relaxed);
    for (unsigned sid : shards_) parts_[sid].txid = txid;
    Dispatch(shards_, &Transaction::DoSchedule);
    size_t accepted = 0;
    for (unsigned sid : shards_) accepted += parts_[sid].ok;
    if (accepted == shards_.size()) break;
    std::vector<unsigned> ok;
    for (unsigned sid : shards_) {
      if (parts_[sid].ok) ok.push_back(sid);
    }
    if (!ok.empty()) Dispatch(ok, &Transaction::DoConclude);
  }
  scheduled_ = true;
}

void Transaction::RunNested(std::span<const unsigned> sids,
                            absl::FunctionRef<void(TxShard&)> fn) {
  // The EXEC holds the keys, but only where it is scheduled *and ready*: it schedules lazily, on
  // its first phase, and a scheduled transaction may still wait behind another one on a shard.
  // So the nested work runs as a phase of the outermost transaction, which waits for readiness
  // like any phase (without that, a multi-key command queued first in MULTI could run while
  // another transaction still works on its keys, and other clients could see half of it).
  Transaction* top = outer_;
  while (top->outer_ != nullptr) top = top->outer_;
  DCHECK(!top->concluded_);
  if (!top->scheduled_) {
    top->PrepareLocks();
    top->Schedule();
  }
  auto nested = [&](TxShard& outer_shard) {
    Shard& s = outer_shard.shard;
    TxShard t{s, s.db(db_index_), outer_shard.now_ms, by_shard_[s.id()]};
    CommandClientScope as_client(client_);
    RememberReadKeys(t);
    fn(t);
  };
  absl::FunctionRef<void(TxShard&)> phase(nested);
  top->phase_fn_ = &phase;
  top->conclude_in_phase_ = false;
  top->phase_ran_ = true;
  for (unsigned sid : sids) {
    DCHECK(std::binary_search(top->shards_.begin(), top->shards_.end(), sid));
  }
  top->Dispatch(sids, &Transaction::DoPhase);
}

void Transaction::RunTask(void* part) {
  Part* p = static_cast<Part*>(part);
  p->task(p);
}

void Transaction::Dispatch(std::span<const unsigned> sids, ShardTask task) {
  outstanding_ = int(sids.size());
  io::Proactor* self = io::Proactor::current();
  bool local = false;
  for (unsigned sid : sids) {
    if (sid == origin_) {
      local = true;
      continue;
    }
    parts_[sid].task = task;
    self->Post(sid, io::Task{&Transaction::RunTask, &parts_[sid]});
  }
  // The local part runs while the other shards work on theirs.
  if (local) task(&parts_[origin_]);
  // The fiber is looked up only when it waits (the local part alone completes inline): the
  // remote parts' answers arrive through this thread's loop, which runs only once it waits.
  if (outstanding_ > 0) fiber_ = context::active();
  while (outstanding_ > 0) {
    suspended_ = true;
    fiber_->suspend();
    suspended_ = false;
  }
}

void Transaction::OneDone() {
  if (--outstanding_ == 0 && suspended_) context::active()->schedule(fiber_);
}

void Transaction::OnDone(void* arg) { static_cast<Transaction*>(arg)->OneDone(); }

// ---- On the shards.

void Transaction::Complete(Part* part) {
  Transaction* tx = part->tx;
  if (part->sid == tx->origin_) {
    tx->OneDone();
  } else {
    io::Proactor::current()->Post(tx->origin_, io::Task{&Transaction::OnDone, tx});
  }
}

void Transaction::DoSchedule(TxPart* p) {
  Part* part = static_cast<Part*>(p);
  part->ok = Shard::current()->tx_queue().Schedule(part);
  Complete(part);
}

void Transaction::DoPhase(TxPart* p) {
  Shard::current()->tx_queue().RunWhenReady(p, &Transaction::ExecPhase);
}

void Transaction::DoQuickRun(TxPart* p) {
  Part* part = static_cast<Part*>(p);
  TxQueue& q = Shard::current()->tx_queue();
  bool free = !q.any_locks();
  if (!free && !part->global) {
    free = true;
    for (const TxPart::LockKey& k : part->keys) {
      if (q.Conflicts(k.db, k.key, part->exclusive)) {
        free = false;
        break;
      }
    }
  }
  if (free) {
    // Like a single-key command on unlocked keys: no id, no queue.
    ExecPhase(part);
    return;
  }
  // A fresh id is higher than any that ran here: scheduling cannot fail.
  part->txid = g_next_txid.fetch_add(1, std::memory_order_relaxed);
  const bool scheduled = q.Schedule(part);
  DCHECK(scheduled);
  q.RunWhenReady(part, &Transaction::ExecPhase);
}

void Transaction::ExecPhase(TxPart* p) {
  Part* part = static_cast<Part*>(p);
  Transaction* tx = part->tx;
  Shard& shard = *Shard::current();
  Db& db = shard.db(tx->db_index_);
  const int64_t now_ms = tx->fixed_now_ms_ != 0 ? tx->fixed_now_ms_ : NowMs();
  TxShard t{shard, db, now_ms, tx->by_shard_[part->sid]};
  const uint64_t dirty = shard.stats().dirty;
  CommandClientScope as_client(tx->client_);
  tx->RememberReadKeys(t);
  (*tx->phase_fn_)(t);
  part->dirty += shard.stats().dirty - dirty;
  if (tx->conclude_in_phase_) MarkJournal(part, shard);
  TxQueue& q = shard.tx_queue();
  if (part->scheduled) {
    q.NoteRan(part);
    // Before Complete: once the coordinator hears from every shard it may destroy the part.
    if (tx->conclude_in_phase_) q.Remove(part);
  }
  // Keys this phase made ready, unless a transaction still holds them. Before Complete too: the
  // moves they hand over must be counted before the client hears back and waits for them.
  shard.ServeBlocked(tx->client_.handed_off);
  Complete(part);
}

void Transaction::RememberReadKeys(TxShard& t) const {
  if (client_.reader == nullptr) [[likely]] return;
  for (uint32_t i : t.keys) t.shard.tracking().Remember(keys_[i], *client_.reader);
}

void Transaction::MarkJournal(Part* part, Shard& shard) {
  const Transaction* tx = part->tx;
  if (tx->journal_id_ == 0 || !tx->journaled_ || !tx->phase_ran_ || !shard.journal().on()) return;
  shard.journal().AppendMarker(tx->journal_id_, uint32_t(tx->shards_.size()));
  part->marked = true;
}

void Transaction::DoAddKey(TxPart* p) {
  Part* part = static_cast<Part*>(p);
  part->joined = Shard::current()->tx_queue().TryAddKey(part, part->joining);
  Complete(part);
}

void Transaction::DoConclude(TxPart* p) {
  Part* part = static_cast<Part*>(p);
  Shard& shard = *Shard::current();
  MarkJournal(part, shard);
  shard.tx_queue().Remove(part);
  // Keys this transaction held and made ready; before Complete, as in ExecPhase.
  CommandClientScope as_client(part->tx->client_);
  shard.ServeBlocked(part->tx->client_.handed_off);
  Complete(part);
}

}  // namespace shardis::shard

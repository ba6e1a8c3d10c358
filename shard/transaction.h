// Transaction: how a command that touches several keys (or every shard) runs on the shards that
// own them, as one atomic step with respect to every other command (see docs/transactions.md).
//
// A command builds one Transaction from its keys, then calls Run one or more times: each Run is a
// phase that executes fn on every shard owning some of the keys, in parallel, and returns when
// all are done (a read phase, then a write phase that uses what the read phase gathered). Between
// the first Run and the end of the Transaction (destructor or Conclude) no other command touches
// those keys, on any shard. fn runs on the shard's thread, inline in its loop: it must not block.
//
//   shard::Transaction tx(db_index, keys, shard::Transaction::kWrite);
//   tx.Run([&](shard::TxShard& t) {
//     for (uint32_t i : t.keys) { ... t.db.Find(tx.key(i), tx.hash(i), t.now_ms) ... }
//   });
//
// Inside MULTI/EXEC the connection already holds every key of the EXEC: a Transaction built there
// (pass the enclosing one as `outer`) takes no locks of its own and only hops.
#pragma once

#include <absl/container/inlined_vector.h>
#include <absl/functional/function_ref.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "shard/shard.h"
#include "shard/tx_queue.h"

namespace boost::fibers {
class context;
}

namespace shardis::shard {

class Transaction;

// What a phase sees on one shard.
struct TxShard {
  Shard& shard;
  Db& db;                          // the transaction's database on this shard
  int64_t now_ms;                  // one clock reading per phase and shard
  std::span<const uint32_t> keys;  // indices (into the transaction's keys) owned by this shard
};

class Transaction {
 public:
  enum Mode : uint8_t { kRead, kWrite };

  // keys: views that must stay valid for the transaction's life (the command's arguments).
  // Duplicates are allowed (each index appears in its shard's list). outer: the EXEC that
  // already holds these keys, or null.
  Transaction(int db_index, std::span<const std::string_view> keys, Mode mode,
              Transaction* outer = nullptr);
  // Every shard (FLUSHDB, DBSIZE, KEYS, SCAN, RANDOMKEY, ...): Run executes fn on all shards,
  // with keys empty.
  struct AllShards {};
  Transaction(int db_index, AllShards, Mode mode, Transaction* outer = nullptr);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // One phase on every shard involved (see the top of the file). With conclude, the keys are
  // released as part of the phase (saves the hops of a separate Conclude); no Run may follow.
  void Run(absl::FunctionRef<void(TxShard&)> fn, bool conclude = false);
  // One phase on one shard only (which must be involved).
  void RunOn(unsigned sid, absl::FunctionRef<void(TxShard&)> fn);
  // Releases the keys early (the destructor does it otherwise).
  void Conclude();

  // The EXEC transaction that the calling fiber is running, if any: a Transaction built with no
  // `outer` inside it uses it as its outer one. Set by EXEC for the duration of its commands.
  static Transaction* CurrentExec();
  static void SetCurrentExec(Transaction* tx);

  int db_index() const { return db_index_; }
  bool is_nested() const { return outer_ != nullptr; }
  size_t key_count() const { return keys_.size(); }
  std::string_view key(uint32_t i) const { return keys_[i]; }
  uint64_t hash(uint32_t i) const { return hashes_[i]; }
  unsigned shard_of(uint32_t i) const { return shard_of_[i]; }
  // The shards involved, in increasing order.
  std::span<const unsigned> shards() const { return shards_; }
  // The key indices a shard owns (empty for a shard that is not involved).
  std::span<const uint32_t> keys_on(unsigned sid) const { return by_shard_[sid]; }

  // The changes (Redis' dirty counter) the phases made so far, on every shard. EXEC compares it
  // around each queued command to know which ones to journal.
  uint64_t dirty_count() const;
  // This transaction is not journaled (CONFIG SET appendonly's own switch).
  void set_journaled(bool on) { journaled_ = on; }
  // The time every phase sees (TxShard::now_ms) instead of a clock reading per phase: a script's
  // commands all see the time its run started, as Redis 7 fixes it for a script's whole run (a
  // key does not expire between two of its commands), and the run reads the clock once.
  void set_now_ms(int64_t now_ms) { fixed_now_ms_ = now_ms; }

  // Extra keys locked (read) without being handed to the phases: EXEC adds the WATCHed keys, so
  // that nothing can modify them between its check and its commands.
  void AddReadLocks(int db_index, std::span<const std::string_view> keys);

  // A key the transaction was not built with, which a script met (docs/transactions.md,
  // "Scripts"): held from now on, like its own keys (but not handed to the phases), when that
  // can be done without breaking atomicity: before the first phase, always; afterwards, when its
  // shard is one the transaction holds and no other transaction wants the key (adding it then is
  // two-phase locking's growing phase, and waiting for it could deadlock, so it never waits).
  // False when it cannot. The key must stay valid for the transaction's life. A top-level
  // transaction only; one over every shard holds every key already.
  bool TryAddKey(int db_index, std::string_view key);

 private:
  // This transaction's part on one shard.
  struct Part : TxPart {
    Transaction* tx = nullptr;
    unsigned sid = 0;
    bool ok = false;      // the last Schedule on this shard succeeded
    uint64_t dirty = 0;   // changes the phases made here (written on the shard)
    bool marked = false;  // a journal marker was recorded here at the conclusion
    TxPart::LockKey joining;  // TryAddKey's key, and whether the shard took it
    bool joined = false;
    // The task Dispatch sent here, which RunTask calls on the shard.
    void (*task)(TxPart*) = nullptr;
  };
  using ShardTask = void (*)(TxPart*);
  // io::Task's function takes a void*: calling a ShardTask through that type would be undefined
  // behaviour (clang's UBSan reports it), so the posted task is this, which calls the part's.
  static void RunTask(void* part);

  void Init();
  // Before the first scheduling: each part's keys sorted and distinct.
  void PrepareLocks();
  // Sends task(part) to each listed shard (the local one runs inline) and waits for all of them
  // to call Complete.
  void Dispatch(std::span<const unsigned> sids, ShardTask task);
  void Schedule();
  void RunNested(std::span<const unsigned> sids, absl::FunctionRef<void(TxShard&)> fn);
  void OneDone();
  // After the conclusion, on the coordinator: the commands for the journal markers, if any.
  void SendJournalPayload();

  // On the shard's thread.
  static void DoSchedule(TxPart* p);
  static void DoPhase(TxPart* p);
  static void DoQuickRun(TxPart* p);
  static void DoConclude(TxPart* p);
  static void DoAddKey(TxPart* p);
  static void ExecPhase(TxPart* p);
  // At the conclusion on a shard: records where the transaction concluded in the shard's journal
  // (a write transaction that ran a phase, with the AOF on).
  static void MarkJournal(Part* part, Shard& shard);
  // CLIENT TRACKING: the phase's keys are read for client_'s reader (every phase: remembering
  // twice changes nothing).
  void RememberReadKeys(TxShard& t) const;
  static void Complete(Part* part);
  static void OnDone(void* arg);  // on the coordinator's thread

  int db_index_;
  Mode mode_;
  bool all_shards_ = false;
  Transaction* outer_;
  std::span<const std::string_view> keys_;
  // Inline for the common shape (a few keys, a few shards), so that a transaction allocates
  // nothing: a script runs one per call, and its five vectors' allocations were ~2% of a
  // pipelined EVALSHA's server CPU.
  static constexpr size_t kInlineKeys = 4;
  static constexpr size_t kInlineShards = 4;
  absl::InlinedVector<uint64_t, kInlineKeys> hashes_;
  absl::InlinedVector<unsigned, kInlineKeys> shard_of_;
  absl::InlinedVector<absl::InlinedVector<uint32_t, kInlineKeys>, kInlineShards> by_shard_;
  absl::InlinedVector<unsigned, kInlineShards> shards_;

  // By shard id. Sized once (Init), before any part is posted: their addresses stay put.
  absl::InlinedVector<Part, kInlineShards> parts_;
  unsigned origin_ = 0;      // the coordinator's thread
  bool scheduled_ = false;
  bool concluded_ = false;
  bool phase_ran_ = false;
  bool journaled_ = true;
  int64_t fixed_now_ms_ = 0;  // set_now_ms; 0: each phase reads the clock
  // The client it runs for, taken from the thread at construction: its shards' phases run as that
  // client (NOLOOP tracking), and remember the keys they hold for its reader, if it has one (a
  // read-only command of a tracking client).
  CommandClient client_;
  uint64_t journal_id_ = 0;  // for the markers (NewJournalId), when a write at the top level
  // The phase in progress.
  const absl::FunctionRef<void(TxShard&)>* phase_fn_ = nullptr;
  bool conclude_in_phase_ = false;
  // Waiting for the shards.
  int outstanding_ = 0;
  bool suspended_ = false;
  boost::fibers::context* fiber_ = nullptr;
};

}  // namespace shardis::shard

// TxQueue: one shard's side of the transaction layer (see docs/transactions.md). Owned and used
// by the shard's thread only, so nothing here is atomic.
//
// It keeps
//   - the queue of the transactions scheduled on this shard, ordered by transaction id;
//   - intent locks: for each (db, key) that a scheduled transaction will touch, how many of them
//     want it shared (read) and how many exclusive (write), plus a count of transactions that
//     lock the whole shard (FLUSHALL, KEYS, EXEC with keyless commands, ...);
//   - the highest id of a transaction that has run a phase here.
//
// A transaction may run a phase on this shard when it is at the head of the queue, or when none
// of its keys is wanted by any other scheduled transaction (it then runs out of order, which no
// one can observe). Scheduling fails when a transaction with a higher id has already run here:
// the coordinator then takes a new id and schedules again, so that on every shard conflicting
// transactions run in the order of their ids.
#pragma once

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/string_util.h"

namespace shardis::shard {

class TxQueue;

// One transaction's part on one shard. The coordinator fills it before scheduling and reads it
// only between hops; the shard's thread uses it while it is scheduled.
struct TxPart {
  struct LockKey {
    int db;
    std::string_view key;  // the command's argument: valid while the part is scheduled
  };

  uint64_t txid = 0;
  bool global = false;        // locks the whole shard
  bool exclusive = false;     // write (else read) intent on every key
  // Runs only at the head of the queue, never out of order: a write transaction over several
  // shards while the AOF is on, so that such transactions conclude in the same order on every
  // shard they share, which the journal's merge relies on (shard/journal.h).
  bool in_order = false;
  // Distinct keys on this shard (empty when global); inline for a few, allocated past that.
  absl::InlinedVector<LockKey, 2> keys;

  // Set by the shard: the phase that waits until the part is ready (null when none).
  void (*pending)(TxPart*) = nullptr;
  bool scheduled = false;
};

class TxQueue {
 public:
  static constexpr int kNumDbs = 16;

  // Adds the part's intent locks and queues it. False (nothing added) when a transaction with a
  // higher or equal id already ran a phase here.
  bool Schedule(TxPart* part);
  // Releases the part's locks and takes it out of the queue, then runs the pending phases that
  // became ready (they may remove their own parts).
  void Remove(TxPart* part);

  // Adds a key to a scheduled part's intent locks, when no other scheduled transaction wants it
  // (a script meeting a key it did not declare, see docs/transactions.md "Scripts"): the part
  // then holds it as if it had been scheduled with it. False, with nothing changed, otherwise.
  bool TryAddKey(TxPart* part, const TxPart::LockKey& key);

  // Whether the part may run a phase now (see the top of the file).
  bool IsReady(const TxPart* part) const;
  // Runs `run(part)` now if the part is ready, else keeps it pending until a Remove makes it so.
  void RunWhenReady(TxPart* part, void (*run)(TxPart*));
  // Records that the part ran a phase (for the scheduling check).
  void NoteRan(const TxPart* part);

  // The single-key fast path: true when a command on (db, key) must wait for the scheduled
  // transactions (a lock conflicts: any intent on the key for a write, exclusive intent for a
  // read, or a whole-shard lock).
  bool any_locks() const { return global_count_ != 0 || !lock_free_; }
  bool Conflicts(int db, std::string_view key, bool write) const;

  size_t queue_length() const { return queue_.size(); }
  uint64_t max_ran_txid() const { return max_ran_; }

 private:
  struct Counts {
    uint32_t shared = 0;
    uint32_t exclusive = 0;
  };
  using LockMap = absl::flat_hash_map<std::string, Counts, core::StringHash, core::StringEq>;

  void RunReadyPending();
  void UpdateLockFree();

  absl::btree_map<uint64_t, TxPart*> queue_;
  std::array<LockMap, kNumDbs> locks_;
  size_t locked_keys_ = 0;  // entries over all of locks_
  bool lock_free_ = true;   // locked_keys_ == 0
  uint32_t global_count_ = 0;
  uint64_t max_ran_ = 0;
};

}  // namespace shardis::shard

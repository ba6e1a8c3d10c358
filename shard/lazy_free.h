// Lazy freeing, per shard (docs/memory.md, "Lazy freeing"): Redis' UNLINK, FLUSHDB/FLUSHALL
// ASYNC and the lazyfree-lazy-* settings, without Redis' bio thread. A key leaves its table at
// once; when its value is costly to free (Redis' free effort above LAZYFREE_THRESHOLD, 64), the
// value goes to its shard's LazyFreeQueue instead of being freed inside the command, and the
// shard's own periodic loop (ShardSet::ExpiryLoop) frees the queue in slices of about 1 ms,
// checking the clock between values (sets and hashes go in pieces, other values whole). A
// database emptied lazily hands its tables to the queue, which erases their keys bucket by
// bucket in the same slices.
//
// No lock: the queue belongs to its shard's thread, like the heap its values came from. A value
// in the queue is no key any more: snapshots serialised its bucket before it left (Db's
// BeforeChange), the journal logged the command that removed it, nothing finds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/compact_value.h"
#include "shard/db.h"

namespace shardis::shard {

// Redis' LAZYFREE_THRESHOLD: values whose free effort (core::FreeEffort) is above this go to the
// queue on a lazy path; the others are freed at once, which is cheaper for them.
inline constexpr size_t kLazyFreeThreshold = 64;

// The paths Redis lets free lazily, one setting each (CONFIG lazyfree-lazy-*, all `no` by default
// in Redis 7.2). UNLINK and FLUSHDB/FLUSHALL ASYNC are lazy whatever the settings.
enum class LazyFreePath : uint8_t {
  kEviction,   // lazyfree-lazy-eviction: keys evicted under maxmemory
  kExpire,     // lazyfree-lazy-expire: keys removed because their deadline passed
  kServerDel,  // lazyfree-lazy-server-del: values a command replaces (SET, RENAME, *STORE, ...)
  kUserDel,    // lazyfree-lazy-user-del: DEL acts as UNLINK
  kUserFlush,  // lazyfree-lazy-user-flush: FLUSHDB/FLUSHALL without SYNC or ASYNC act as ASYNC
};
// Process-wide, any thread (relaxed atomics: each is one independent flag read once per use).
bool LazyFreeOn(LazyFreePath path);
void SetLazyFree(LazyFreePath path, bool on);

class LazyFreeQueue {
 public:
  LazyFreeQueue() = default;
  ~LazyFreeQueue() { Clear(); }
  LazyFreeQueue(const LazyFreeQueue&) = delete;
  LazyFreeQueue& operator=(const LazyFreeQueue&) = delete;

  // Takes the value out of `cell` when its free effort is above kLazyFreeThreshold (Redis'
  // freeObjAsync), leaving the empty string with the cell's flags; returns whether it did. Else
  // the cell is left as it is, for the caller to free as usual.
  bool TakeIfCostly(core::CompactValue& cell);
  // Takes the tables of a database being emptied lazily (Redis' emptyDbAsync): every key counts
  // as one object, pending until its entry is erased.
  void TakeTables(PrimeTable prime, ExpireTable expire, McMetaTable mc_meta);

  // Frees what waits until the queue is empty or CycleClock passes `deadline`, checked between
  // values, between pieces of a set or hash table (core::FreeSomeElements) and between buckets
  // of a database's table; other values are freed whole, however big. Returns whether the queue
  // is empty.
  bool FreeUntil(uint64_t deadline);
  // Frees everything now (the shard going away).
  void Clear();

  bool empty() const { return pending_ == 0; }
  // Objects waiting: values, plus the keys left in tables (INFO's lazyfree_pending_objects).
  size_t pending() const { return pending_; }
  // Objects freed from the queue since start or CONFIG RESETSTAT (INFO's lazyfreed_objects).
  uint64_t freed() const { return freed_; }
  void ResetStats() { freed_ = 0; }
  // Heap bytes of the values waiting (MEMORY USAGE's estimate when each was taken; tables not
  // counted): what maxmemory looks past (Shard::used_memory_for_limit).
  size_t value_bytes() const { return value_bytes_; }

 private:
  // A database's tables, erased bucket by bucket.
  struct Tables {
    PrimeTable prime;
    ExpireTable expire;
    McMetaTable mc_meta;
    uint64_t cursor = 0;  // where the prime table's walk continues
  };
  // Erases the prime entries of t until the deadline; true once none is left.
  bool EraseSome(Tables& t, uint64_t deadline);

  // Each value with its estimated bytes.
  struct Value {
    core::CompactValue cell;
    size_t bytes;
  };
  std::vector<Value> values_;
  size_t value_bytes_ = 0;
  std::vector<Tables> tables_;
  size_t pending_ = 0;
  uint64_t freed_ = 0;
};

}  // namespace shardis::shard

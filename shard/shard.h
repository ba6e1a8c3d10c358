// Shard: everything one pinned thread owns of the keyspace. Only that thread touches it; other
// threads reach it by hopping over the rings (see ShardSet).
#pragma once

#include <array>
#include <cstdint>

#include "core/shard_heap.h"
#include "shard/blocking.h"
#include "shard/db.h"
#include "shard/defrag.h"
#include "shard/journal.h"
#include "shard/lazy_free.h"
#include "shard/tracking_table.h"
#include "shard/tx_queue.h"

namespace shardis::shard {

// Absolute Unix time in milliseconds (expiry deadlines are absolute, as in Redis).
int64_t NowMs();

struct ShardStats {
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  uint64_t evicted_keys = 0;
  // Redis' server.dirty, this shard's part: how many changes the writes run here made, counted
  // as Redis 7.0 counts them for the same command, arguments and state (SET 1, MSET 1 per key,
  // SADD the members added, a failed or no-op write 0, expiry 0). Only this shard's thread adds
  // to it (Shard::AddDirty); the sum over the shards (server::SumShardDirty) minus its value at
  // the last save is INFO's rdb_changes_since_last_save and what the save schedule looks at.
  uint64_t dirty = 0;
};

class Shard {
 public:
  static constexpr int kNumDbs = TxQueue::kNumDbs;

  // Create, use and destroy a Shard on its own thread: its values come from its heap.
  explicit Shard(uint32_t id);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  uint32_t id() const { return id_; }
  Db& db(int index) { return dbs_[index]; }
  ShardStats& stats() { return stats_; }
  // A write made `changes` changes (see ShardStats::dirty). Call on this shard's thread only.
  void AddDirty(uint64_t changes = 1) { stats_.dirty += changes; }
  // This shard's part of the journal (the AOF's record of writes).
  ShardJournal& journal() { return journal_; }
  // This shard's side of the transaction layer (queue and intent locks).
  TxQueue& tx_queue() { return tx_queue_; }
  // The clients blocked on this shard's keys (BLPOP, ...).
  BlockingRegistry& blocking() { return blocking_; }
  // The keys and prefixes clients track here (CLIENT TRACKING).
  TrackingTable& tracking() { return tracking_; }
  // Serves blocked clients whose keys became ready, if any (after every write's command or
  // transaction step on this shard). by: the moves of the client whose command wrote, which
  // waits for them (blocking.h); nullptr when no client's command did.
  void ServeBlocked(HandedOffWork* by = nullptr) {
    if (blocking_.has_ready()) [[unlikely]] blocking_.ServeReady(*this, by);
  }

  // One step of active expiry over every database: looks at up to `budget` keys with a TTL and
  // removes those whose deadline passed. Returns how many it removed; `*examined` gets how many it
  // looked at, so the caller can keep going while a large share of them was expired.
  // (Expired-key counts live in each Db.)
  size_t ExpireStep(int64_t now_ms, size_t budget, size_t* examined);

  // Active defragmentation of this shard (shard/defrag.h).
  ShardDefrag& defrag() { return defrag_; }
  // The values and tables waiting to be freed (shard/lazy_free.h).
  LazyFreeQueue& lazy_free() { return lazy_free_; }
  const LazyFreeQueue& lazy_free() const { return lazy_free_; }
  // One step of shrinking the tables of every database (Db::ShrinkTables), from the periodic
  // loop, as Redis' cron resizes its dicts: bounded work (a few merges of segments), so no pause.
  void ShrinkTables();

  // A version above every bucket version of this shard's tables, for a new snapshot.
  uint64_t NextSnapshotVersion() { return ++snapshot_version_; }
  // The snapshot running on this shard, or nullptr (set by the snapshot code).
  ShardSnapshot* snapshot() const { return snapshot_; }
  void set_snapshot(ShardSnapshot* snapshot) { snapshot_ = snapshot; }

  // Bytes in use by this shard: its values and its tables (exact, from its heap) and itself.
  // One relaxed load: cheap on the command path.
  size_t used_memory() const;
  // used_memory() without the values waiting in the lazy-free queue: what maxmemory holds the
  // shard to, so that evicting lazily (lazyfree-lazy-eviction) does not go on evicting while
  // the evicted values wait for the next tick to be freed (Redis' lazyfree thread frees them
  // meanwhile).
  size_t used_memory_for_limit() const {
    const size_t used = used_memory(), waiting = lazy_free_.value_bytes();
    return used > waiting ? used - waiting : 0;  // the waiting bytes are an estimate
  }
  // used_memory() as the shard was built, with no key (its part of INFO's used_memory_startup).
  size_t startup_memory() const { return startup_memory_; }
  // The blocks of its keys and values, on its heap (its part of INFO's used_memory_dataset): what
  // used_memory() holds beyond the shard itself and its tables, Redis' overhead. A loop over the
  // 16 databases.
  size_t dataset_memory() const;
  // Whether this shard may hold more than its share of maxmemory (eviction.h keeps it): a command
  // that does not write evicts only while it is set, so that it pays one test rather than a
  // comparison of used_memory() with its share.
  bool may_exceed_share() const { return may_exceed_share_; }
  void set_may_exceed_share(bool may) { may_exceed_share_ = may; }

  // The shard of the calling thread; nullptr on threads that own no shard.
  static Shard* current();
  static void set_current(Shard* shard);

 private:
  uint32_t id_;
  core::ShardHeap heap_;  // declared before the dbs: it must outlive the values they hold
  std::array<Db, kNumDbs> dbs_;
  ShardStats stats_;
  ShardJournal journal_;
  TxQueue tx_queue_;
  BlockingRegistry blocking_;
  TrackingTable tracking_;
  ShardDefrag defrag_;
  LazyFreeQueue lazy_free_;
  uint64_t snapshot_version_ = 0;
  ShardSnapshot* snapshot_ = nullptr;
  bool may_exceed_share_ = true;  // not measured yet
  size_t startup_memory_ = 0;
};

}  // namespace shardis::shard

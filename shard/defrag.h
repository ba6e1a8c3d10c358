// Active defragmentation, per shard (docs/memory.md, "Active defragmentation"): Redis'
// activedefrag and active-defrag-* settings, and each shard's defragmenter, run from the shard's
// own expiry loop (ShardSet::ExpiryLoop) in bounded time slices, only while its heap is
// fragmented above the thresholds. It finds the sparse pages of the shard's heap
// (core/sparse_pages.h), walks the shard's databases with a cursor and moves every keyspace-table
// segment (DashTable::DefragSegments) and every key, value and collection block
// (core/value_defrag.h) on such a page to a fresh allocation; after each full walk it gives the
// freed pages back to the OS (mi_heap_collect).
//
// No lock: only the shard's thread touches its heap and its tables. Keys a transaction holds
// (another shard may be reading their values: cross-shard RENAME, COPY) are left for the next
// walk. A running snapshot (BGSAVE, AOF rewrite) copies each bucket's bytes in one go and holds
// no pointer to a value or a segment across yields (its cursor is a hash-space position), so
// moving either changes nothing it writes; the defragmenter never changes a bucket's contents
// or version.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "core/sparse_pages.h"

namespace shardis::shard {

class Shard;

// The settings (CONFIG activedefrag, active-defrag-*), process-wide; any thread (relaxed atomics:
// each is one independent value read once per step).
struct DefragSettings {
  bool enabled = false;
  int64_t ignore_bytes = 100 << 20;  // less fragmentation than this (bytes) is left alone
  int threshold_lower = 10;          // fragmentation percent that starts a walk
  int threshold_upper = 100;         // and the one at which it works hardest
  int cycle_min = 1;                 // CPU percent at threshold_lower
  int cycle_max = 25;                // and at threshold_upper
  int64_t max_scan_fields = 1000;    // bigger collections are moved in steps of this many
};
DefragSettings GetDefragSettings();
void SetDefragEnabled(bool on);
void SetDefragIgnoreBytes(int64_t v);
void SetDefragThresholdLower(int v);
void SetDefragThresholdUpper(int v);
void SetDefragCycleMin(int v);
void SetDefragCycleMax(int v);
void SetDefragMaxScanFields(int64_t v);

// Redis' INFO counters, this shard's part.
struct DefragStats {
  uint64_t hits = 0;        // blocks moved
  uint64_t misses = 0;      // blocks looked at and left
  uint64_t key_hits = 0;    // keys with a block moved
  uint64_t key_misses = 0;  // keys looked at with none moved
  uint64_t total_time_us = 0;    // time with a walk running, ended walks
  uint64_t current_time_us = 0;  // the running walk's, so far
  int running = 0;               // the walk's CPU percent, 0 when none runs
};

// The fragmentation a walk looks at, from the heap's pages: what the pages hold beyond their
// live blocks, in bytes and as a percent of the live blocks (Redis' allocator fragmentation).
struct HeapFragmentation {
  uint64_t bytes = 0;
  double percent = 0;
};
HeapFragmentation FragmentationOf(const core::HeapPageTotals& totals);

// The CPU percent a walk gets at this fragmentation (Redis' computeDefragCycles), 0 when below
// the thresholds. `shards`: the ignore-bytes threshold is shared between them, as maxmemory is.
int DefragCpuPercent(const HeapFragmentation& frag, const DefragSettings& s, unsigned shards);

// After a completed walk that moved `hits` blocks and left fragmentation of `after` bytes: the
// fragmentation a new walk waits for, 0 when it need not wait. A walk that moved nothing met
// only what no move can empty (blocks on pages dense enough to keep, the tables' own segments);
// walking the same heap again would find the same, so the next walk waits until the
// fragmentation grows a tenth beyond what this one left. (A walk that moved something is
// followed by another at once: emptied pages change which pages count as sparse.) Redis walks
// again at once, at cycle-min, for as long as the fragmentation stays above the lower threshold.
uint64_t FragmentationToWalkAgain(uint64_t hits, uint64_t after);

class ShardDefrag {
 public:
  // One step, from the shard's expiry loop (hz times a second): checks the fragmentation once a
  // second, and while a walk runs works for its share of the period (Redis' timelimit), yielding
  // to the connections every kSliceUs.
  // `stopping` is asked after each yield: when true, the shard may be gone and Cron returns at
  // once.
  void Cron(Shard& shard, int hz, bool (*stopping)());
  // The counters as of now (current_time_us computed). On the shard's thread.
  DefragStats stats() const;
  void ResetStats();  // CONFIG RESETSTAT

 private:
  // The share of wall time the thread spent parked (no client work) since the last call, in
  // percent (100 on the first call).
  int IdlePercentSinceLastStep();
  // Walks buckets until the deadline (CycleClock ticks) or the end of the databases; true once
  // the walk is complete.
  bool WalkUntil(Shard& shard, uint64_t deadline, int64_t max_scan_fields);
  // One step of the first big collection waiting (Redis' defrag later): at most
  // max_scan_fields of its elements. Returns whether there was one.
  bool StepBigValue(Shard& shard, core::BlockMover& mover, int64_t max_scan_fields);
  // Ends the walk; `collect`: it completed, and the pages it emptied go back to the OS (the next
  // check, at once, measures what it left).
  void Finish(bool collect);

  // A collection too big for one step, found by the bucket walk and moved in steps between
  // buckets. The key is looked up again at each step (it may be gone or replaced meanwhile:
  // then it is dropped, as Redis does).
  struct BigValue {
    int db;
    std::string key;
    const void* object;  // the value's object when the position was taken
    size_t pos = 0;      // DefragCellStep's position
  };

  DefragStats stats_;
  core::SparsePages pages_;
  // Where the walk is: the database, then in it the tables' segments (Db::DefragTables) until
  // tables_done_, then its buckets (Db::DefragBucket).
  int db_ = 0;
  uint64_t table_cursor_ = 0;
  bool tables_done_ = false;
  uint64_t cursor_ = 0;
  std::deque<BigValue> big_values_;
  int64_t last_check_ms_ = 0;
  uint64_t started_us_ = 0;  // monotonic, when the running walk started
  uint64_t walk_hits_ = 0;         // blocks the running (or just completed) walk moved
  uint64_t walk_ms_ = 0;           // how long the completed walk took
  bool walk_completed_ = false;    // the next check measures what the walk left
  uint64_t walk_again_above_ = 0;  // FragmentationToWalkAgain of the last completed walk
  uint64_t last_step_ns_ = 0;    // monotonic, the last Cron's (for the idle share)
  uint64_t last_parked_ns_ = 0;  // the proactor's parked_ns then
};

}  // namespace shardis::shard

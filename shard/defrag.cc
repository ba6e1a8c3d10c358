#include "shard/defrag.h"

#include <glog/logging.h>
#include <mimalloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "core/cycle_clock.h"
#include "core/shard_heap.h"
#include "core/value_defrag.h"
#include "io/proactor.h"
#include "shard/memory_limit.h"
#include "shard/shard.h"

namespace shardis::shard {

namespace {

// Relaxed: each setting is one independent value, read once per step.
std::atomic<bool> g_enabled{false};
std::atomic<int64_t> g_ignore_bytes{DefragSettings{}.ignore_bytes};
std::atomic<int> g_threshold_lower{DefragSettings{}.threshold_lower};
std::atomic<int> g_threshold_upper{DefragSettings{}.threshold_upper};
std::atomic<int> g_cycle_min{DefragSettings{}.cycle_min};
std::atomic<int> g_cycle_max{DefragSettings{}.cycle_max};
std::atomic<int64_t> g_max_scan_fields{DefragSettings{}.max_scan_fields};

// The longest the walk keeps the thread before yielding to its connections, whatever the CPU
// share: at 25% and hz 10, Redis' timelimit is 25 ms in one go. Half a millisecond keeps a
// command that arrives during a slice under 1 ms (issue 20's bound); the check's page walk and
// the collection at a walk's end (each ~0.1-0.25 ms on a 200 MB heap) get a slice of their own.
constexpr uint64_t kSliceUs = 500;
// Segments looked at per step of the walk over a table (a move copies up to 32 KiB: ~16 of them
// take a few microseconds each, well within a slice).
constexpr size_t kSegmentsPerCall = 16;
// How often a shard measures its fragmentation (Redis: once a second).
constexpr int64_t kCheckPeriodMs = 1000;

uint64_t MonotonicUs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

DefragSettings GetDefragSettings() {
  DefragSettings s;
  s.enabled = g_enabled.load(std::memory_order_relaxed);
  s.ignore_bytes = g_ignore_bytes.load(std::memory_order_relaxed);
  s.threshold_lower = g_threshold_lower.load(std::memory_order_relaxed);
  s.threshold_upper = g_threshold_upper.load(std::memory_order_relaxed);
  s.cycle_min = g_cycle_min.load(std::memory_order_relaxed);
  s.cycle_max = g_cycle_max.load(std::memory_order_relaxed);
  s.max_scan_fields = g_max_scan_fields.load(std::memory_order_relaxed);
  return s;
}
void SetDefragEnabled(bool on) {
  // mimalloc's decommit delay as the process started (its default or MIMALLOC_DECOMMIT_DELAY):
  // the first call is the start-up's, before any change.
  static const long default_decommit_delay_ms = mi_option_get(mi_option_decommit_delay);
  g_enabled.store(on, std::memory_order_relaxed);
  // With defragmentation on, a page that empties gives its memory back at once (page reset:
  // MADV_DONTNEED) and free segment spans are decommitted without mimalloc's delay; measured on
  // the churn workload (500,000 keys), RSS after the walks fell from 120 to 109 MB for 84 MB of
  // used_memory. Off, mimalloc's defaults (pages kept for reuse) come back. mimalloc reads its
  // options on every use, so this applies to every thread from now on.
  mi_option_set_enabled(mi_option_page_reset, on);
  mi_option_set(mi_option_decommit_delay, on ? 0 : default_decommit_delay_ms);
}
void SetDefragIgnoreBytes(int64_t v) { g_ignore_bytes.store(v, std::memory_order_relaxed); }
void SetDefragThresholdLower(int v) { g_threshold_lower.store(v, std::memory_order_relaxed); }
void SetDefragThresholdUpper(int v) { g_threshold_upper.store(v, std::memory_order_relaxed); }
void SetDefragCycleMin(int v) { g_cycle_min.store(v, std::memory_order_relaxed); }
void SetDefragCycleMax(int v) { g_cycle_max.store(v, std::memory_order_relaxed); }
void SetDefragMaxScanFields(int64_t v) { g_max_scan_fields.store(v, std::memory_order_relaxed); }

HeapFragmentation FragmentationOf(const core::HeapPageTotals& totals) {
  HeapFragmentation f;
  if (totals.page_bytes <= totals.used_bytes || totals.used_bytes == 0) return f;
  f.bytes = totals.page_bytes - totals.used_bytes;
  f.percent = 100.0 * double(f.bytes) / double(totals.used_bytes);
  return f;
}

uint64_t FragmentationToWalkAgain(uint64_t hits, uint64_t after) {
  return hits > 0 ? 0 : after + after / 10;
}

int DefragCpuPercent(const HeapFragmentation& frag, const DefragSettings& s, unsigned shards) {
  const uint64_t ignore = uint64_t(s.ignore_bytes) / std::max(1u, shards);
  if (frag.percent < s.threshold_lower || frag.bytes < ignore) return 0;
  // Redis' INTERPOLATE between the thresholds, then LIMIT to [cycle_min, cycle_max].
  double cpu = s.cycle_max;
  if (s.threshold_upper != s.threshold_lower) {
    cpu = s.cycle_min + (frag.percent - s.threshold_lower) * (s.cycle_max - s.cycle_min) /
                            (s.threshold_upper - s.threshold_lower);
  }
  const int lo = std::min(s.cycle_min, s.cycle_max), hi = std::max(s.cycle_min, s.cycle_max);
  return std::clamp(int(cpu), lo, hi);
}

void ShardDefrag::Cron(Shard& shard, int hz, bool (*stopping)()) {
  const DefragSettings s = GetDefragSettings();
  if (!s.enabled || !core::ShardHeap::kUsesMimalloc) {
    // Turned off mid-walk: the next walk starts from the beginning, as in Redis.
    if (stats_.running != 0) Finish(/*collect=*/false);
    walk_again_above_ = 0;
    walk_completed_ = false;
    return;
  }
  const int64_t now_ms = NowMs();
  const bool check = now_ms - last_check_ms_ >= kCheckPeriodMs || now_ms < last_check_ms_;
  if (check) {
    last_check_ms_ = now_ms;
    pages_.Visit(*core::ShardHeap::Current());  // this step's first slice; sorted below if walking
    const HeapFragmentation frag = FragmentationOf(pages_.totals());
    if (walk_completed_) {
      walk_completed_ = false;
      walk_again_above_ = FragmentationToWalkAgain(walk_hits_, frag.bytes);
      // As Redis' "Active defrag done" (verbose there).
      VLOG(1) << "shard " << shard.id() << ": active defrag done in " << walk_ms_ << " ms, "
              << walk_hits_ << " blocks moved, frag_bytes now " << frag.bytes
              << ", next walk above " << walk_again_above_;
    }
    int cpu = DefragCpuPercent(frag, s, MemoryLimit::num_shards());
    if (cpu == 0) walk_again_above_ = 0;  // below the thresholds: the next walk starts afresh
    if (stats_.running == 0 && frag.bytes <= walk_again_above_) {
      // Resting: no walk, but the pages freed since (here and by other threads' frees) and the
      // spans mimalloc decommits only on a later collection still go back to the OS, as they
      // did when walks followed one another.
      io::YieldBetweenSlices();  // the collection is a slice of its own
      if (stopping()) return;
      mi_heap_collect(core::ShardHeap::Current()->mi_heap(), /*force=*/true);
      cpu = 0;
    }
    // A walk may get more aggressive while it runs, never less (Redis).
    if (cpu > stats_.running) {
      if (stats_.running == 0) {
        started_us_ = MonotonicUs();
        walk_hits_ = 0;
        // As Redis' "Starting active defrag" (verbose there).
        VLOG(1) << "shard " << shard.id() << ": starting active defrag, frag=" << int(frag.percent)
                << "%, frag_bytes=" << frag.bytes << ", sparse pages "
                << pages_.totals().sparse_pages << " of " << pages_.totals().pages
                << ", cpu=" << cpu << "%";
      }
      stats_.running = cpu;
    }
  }
  const int idle_percent = IdlePercentSinceLastStep();
  if (stats_.running == 0) return;
  // Redis' timelimit: the CPU share of one period of the cron, worked in slices. The share is
  // Redis' (running), but no more than the thread was idle since the last step, and no less
  // than cycle-min: a busy thread's clients come first (Dragonfly walks in idle time), and the
  // walk still advances under a saturating load. With both at once (a walk at 25% of a thread
  // that clients keep 100% busy) throughput would lose a quarter while the walk lasts.
  const int share = std::max(std::min(stats_.running, idle_percent),
                             std::min(s.cycle_min, stats_.running));
  const uint64_t budget_us = std::max<uint64_t>(1, 1000000ull * share / 100 / hz);
  if (check) {  // the page visit above was this step's first slice, the sort is the second
    io::YieldBetweenSlices();
    if (stopping()) return;
    pages_.Sort();
    io::YieldBetweenSlices();
    if (stopping()) return;
  }
  const uint64_t start = core::CycleClock::Now();
  const uint64_t end = start + core::CycleClock::FromNs(budget_us * 1000);
  const uint64_t slice = core::CycleClock::FromNs(kSliceUs * 1000);
  while (true) {
    const uint64_t now = core::CycleClock::Now();
    if (now >= end) break;
    if (WalkUntil(shard, std::min(end, now + slice), s.max_scan_fields)) {
      io::YieldBetweenSlices();  // the collection is a slice of its own
      if (stopping()) return;
      Finish(/*collect=*/true);
      break;
    }
    io::YieldBetweenSlices();
    if (stopping()) return;
    if (!GetDefragSettings().enabled) break;  // the next Cron stops the walk
  }
}

int ShardDefrag::IdlePercentSinceLastStep() {
  const io::Proactor* proactor = io::Proactor::current();
  if (proactor == nullptr) return 100;  // a unit test's shard: no loop to share
  const uint64_t now_ns = MonotonicUs() * 1000;
  const uint64_t parked_ns = proactor->stats().parked_ns;
  const uint64_t window_ns = now_ns - last_step_ns_;
  const int percent = last_step_ns_ == 0 || window_ns == 0
                          ? 100
                          : int(std::min<uint64_t>(100, 100 * (parked_ns - last_parked_ns_) / window_ns));
  last_step_ns_ = now_ns;
  last_parked_ns_ = parked_ns;
  return percent;
}

bool ShardDefrag::WalkUntil(Shard& shard, uint64_t deadline, int64_t max_scan_fields) {
  core::BlockMover mover(core::ShardHeap::Current(), &pages_);
  const TxQueue& tx = shard.tx_queue();
  char scratch[core::CompactValue::kScratchSize];
  bool done = false;
  while (!done) {
    if (StepBigValue(shard, mover, max_scan_fields)) {
      if (core::CycleClock::Now() >= deadline) break;
      continue;
    }
    if (db_ == Shard::kNumDbs) {  // the buckets are done, and now the big values too
      done = true;
      break;
    }
    Db& db = shard.db(db_);
    if (!tables_done_) {
      // First the tables' segments. Not while a transaction holds keys of this shard: a hop from
      // another shard may be reading a value in place (cross-shard RENAME, COPY) while this
      // thread runs other fibers; this database's segments wait for the next walk.
      if (tx.any_locks()) {
        table_cursor_ = 0;
        tables_done_ = true;
      } else {
        table_cursor_ = db.DefragTables(table_cursor_, kSegmentsPerCall, mover);
        tables_done_ = table_cursor_ == 0;
      }
    } else {
      cursor_ = db.DefragBucket(cursor_, [&](core::CompactValue& key, core::CompactValue& value,
                                             core::CompactValue* expire_key) {
        // A key a transaction holds may be read from another shard meanwhile: left alone.
        const std::string_view name = key.GetString(scratch);
        if (tx.any_locks() && tx.Conflicts(db_, name, /*write=*/true)) return;
        bool moved = core::DefragCell(key, mover, pages_, size_t(max_scan_fields));
        if (expire_key != nullptr) moved |= core::DefragCell(*expire_key, mover, pages_, 0);
        if (core::DefragsInSteps(value, size_t(max_scan_fields))) {
          // The key's name is read again: the key's own block may just have moved.
          big_values_.push_back({db_, std::string(key.GetString(scratch)), value.object()});
        } else {
          moved |= core::DefragCell(value, mover, pages_, size_t(max_scan_fields));
        }
        ++(moved ? stats_.key_hits : stats_.key_misses);
      });
      if (cursor_ == 0) {
        tables_done_ = false;
        ++db_;
      }
    }
    if (core::CycleClock::Now() >= deadline) break;
  }
  stats_.hits += mover.hits();
  walk_hits_ += mover.hits();
  stats_.misses += mover.misses();
  return done;
}

bool ShardDefrag::StepBigValue(Shard& shard, core::BlockMover& mover, int64_t max_scan_fields) {
  if (big_values_.empty()) return false;
  BigValue& big = big_values_.front();
  core::CompactValue* value = shard.db(big.db).FindForDefrag(big.key);
  const TxQueue& tx = shard.tx_queue();
  // Gone, replaced, or held by a transaction (another shard may be reading it): dropped.
  if (value == nullptr || value->IsString() || value->object() != big.object ||
      (tx.any_locks() && tx.Conflicts(big.db, big.key, /*write=*/true))) {
    big_values_.pop_front();
    return true;
  }
  big.pos = core::DefragCellStep(*value, mover, big.pos, size_t(max_scan_fields));
  big.object = value->object();  // the first step may move the object itself
  if (big.pos == 0) big_values_.pop_front();
  return true;
}

void ShardDefrag::Finish(bool collect) {
  const uint64_t walk_us = MonotonicUs() - started_us_;
  stats_.total_time_us += walk_us;
  stats_.running = 0;
  db_ = 0;
  table_cursor_ = 0;
  tables_done_ = false;
  cursor_ = 0;
  big_values_.clear();
  if (collect) {
    // The pages the walk emptied go back to the OS now, not after mimalloc's delay: RSS falls.
    mi_heap_collect(core::ShardHeap::Current()->mi_heap(), /*force=*/true);
    walk_ms_ = walk_us / 1000;
    walk_completed_ = true;
  }
  // Measure again at the next step: another walk may be due at once (Redis).
  last_check_ms_ = 0;
}

DefragStats ShardDefrag::stats() const {
  DefragStats s = stats_;
  s.current_time_us = s.running != 0 ? MonotonicUs() - started_us_ : 0;
  return s;
}

void ShardDefrag::ResetStats() {
  const int running = stats_.running;
  stats_ = DefragStats{};
  stats_.running = running;
  if (running != 0) started_us_ = MonotonicUs();
}

}  // namespace shardis::shard

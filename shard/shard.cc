#include "shard/shard.h"

#include <time.h>

#include <algorithm>

#include "shard/keyspace_events.h"

namespace shardis::shard {

namespace {
thread_local Shard* tl_current = nullptr;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

Shard::Shard(uint32_t id) : id_(id) {
  heap_.Install();
  LoadKeyspaceEventsOnThread();
  tracking_.set_shard(id);
  for (int i = 0; i < kNumDbs; ++i) {
    dbs_[i].Attach(i, &heap_, &blocking_, &journal_, &tracking_, &lazy_free_);
  }
  startup_memory_ = used_memory();
}

Shard::~Shard() {
  // Free every value while the heap they came from is still installed (~ShardHeap uninstalls it).
  for (Db& db : dbs_) db.Clear();
  lazy_free_.Clear();
}

size_t Shard::ExpireStep(int64_t now_ms, size_t budget, size_t* examined) {
  size_t removed = 0, seen = 0;
  for (Db& db : dbs_) {
    if (seen >= budget) break;
    size_t n = 0;
    removed += db.ExpireSome(now_ms, budget - seen, &n);
    seen += n;
  }
  *examined = seen;
  return removed;
}

void Shard::ShrinkTables() {
  // Per step: segments looked at per table, and entries moved per shard (a merge moves at most
  // ~630). Measured (release, 16-byte cells, 4M entries of which 11/12 erased, thread CPU time):
  // steps of 4096 moves took at most 0.71 ms (page faults of the new segments included), 20 us on
  // average; 8192 moves took up to 1.3 ms. Redis spends up to 1 ms per cron on rehashing.
  constexpr size_t kSegmentsPerTable = 128;
  constexpr size_t kMovesPerStep = 4096;
  size_t moved = 0;
  for (Db& db : dbs_) {
    if (moved >= kMovesPerStep) break;
    moved += db.ShrinkTables(kSegmentsPerTable, kMovesPerStep - moved);
  }
}

// The tables' segments and directories are blocks of the heap (Db::Attach), so the heap's count
// holds them, as Redis' used_memory holds its dicts' tables; so does it the values and tables
// waiting in the lazy-free queue: used_memory falls as the queue drains, as Redis' does while its
// lazyfree thread works.
size_t Shard::used_memory() const { return sizeof(Shard) + heap_.used_bytes(); }

size_t Shard::dataset_memory() const {
  size_t tables = 0;
  for (const Db& db : dbs_) tables += db.table_bytes();
  return heap_.used_bytes() - std::min(tables, heap_.used_bytes());
}

Shard* Shard::current() { return tl_current; }
void Shard::set_current(Shard* shard) { tl_current = shard; }

}  // namespace shardis::shard

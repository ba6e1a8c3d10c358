#include "shard/shard.h"

#include <time.h>

namespace shardis::shard {

namespace {
thread_local Shard* tl_current = nullptr;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

size_t Shard::ExpireStep(int64_t now_ms, size_t budget) {
  size_t removed = 0;
  for (Db& db : dbs_) {
    if (removed >= budget) break;
    removed += db.ExpireSome(now_ms, budget - removed);
  }
  return removed;
}

Shard* Shard::current() { return tl_current; }
void Shard::set_current(Shard* shard) { tl_current = shard; }

}  // namespace shardis::shard

// Shard: everything one pinned thread owns of the keyspace. Only that thread touches it; other
// threads reach it by hopping over the rings (see ShardSet).
#pragma once

#include <array>
#include <cstdint>

#include "shard/db.h"

namespace shardis::shard {

// Absolute Unix time in milliseconds (expiry deadlines are absolute, as in Redis).
int64_t NowMs();

struct ShardStats {
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  uint64_t evicted_keys = 0;
};

class Shard {
 public:
  static constexpr int kNumDbs = 16;

  explicit Shard(uint32_t id) : id_(id) {}
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  uint32_t id() const { return id_; }
  Db& db(int index) { return dbs_[index]; }
  ShardStats& stats() { return stats_; }

  // One step of active expiry over every database: removes keys whose deadline passed, at most
  // `budget` of them, so a burst of expiring keys cannot stall the thread. Returns the count.
  // (Expired-key counts live in each Db.)
  size_t ExpireStep(int64_t now_ms, size_t budget);

  // The shard of the calling thread; nullptr on threads that own no shard.
  static Shard* current();
  static void set_current(Shard* shard);

 private:
  uint32_t id_;
  std::array<Db, kNumDbs> dbs_;
  ShardStats stats_;
};

}  // namespace shardis::shard

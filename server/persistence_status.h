// What INFO's persistence section, LASTSAVE and MISCONF read about snapshots and loading. Written
// by the snapshot and load code (server/snapshot*.cc), read from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace shardis::server {

struct PersistenceStatus {
  // Loading dataset at start (or DEBUG RELOAD): commands get -LOADING meanwhile.
  std::atomic<bool> loading{false};
  std::atomic<int64_t> loading_start_ms{0};
  std::atomic<uint64_t> loading_total_bytes{0};
  std::atomic<uint64_t> loading_loaded_bytes{0};
  std::atomic<uint64_t> loading_loaded_keys{0};
  std::atomic<uint64_t> last_load_keys_loaded{0};
  std::atomic<uint64_t> last_load_keys_expired{0};

  std::atomic<bool> bgsave_in_progress{false};
  std::atomic<int64_t> bgsave_start_ms{0};
  std::atomic<int64_t> last_save_time{0};       // Unix seconds of the last successful save
  std::atomic<bool> last_bgsave_ok{true};
  std::atomic<int64_t> last_bgsave_time_sec{-1};
  std::atomic<uint64_t> saves{0};  // INFO rdb_saves: SAVE commands and BGSAVEs started
  // The sum of every shard's dirty counter at the cut of the last successful save: INFO's
  // rdb_changes_since_last_save is the current sum minus this.
  std::atomic<uint64_t> dirty_at_last_save{0};
  // The error of the AOF's last write or fsync, 0 once one succeeds again (server/aof.cc):
  // INFO's aof_last_write_status, and -MISCONF for writes meanwhile.
  std::atomic<int> aof_write_errno{0};
};

extern PersistenceStatus g_persistence_status;
inline PersistenceStatus& Persistence() { return g_persistence_status; }

// True while the dataset loads or after a failed save or AOF write: the command path then looks
// closer (LOADING, MISCONF). Three relaxed loads of flags that rarely change.
inline bool PersistenceGateClosed() {
  const PersistenceStatus& ps = Persistence();
  return ps.loading.load(std::memory_order_relaxed) ||
         !ps.last_bgsave_ok.load(std::memory_order_relaxed) ||
         ps.aof_write_errno.load(std::memory_order_relaxed) != 0;
}

}  // namespace shardis::server

// The figures INFO and /metrics report, gathered by one function: one hop to every thread
// (shard_set->AwaitAll), where each thread copies its own counters into its slot of the snapshot,
// then a sum on the calling fiber. INFO (info.cc) and the Prometheus text (RenderPrometheus) are
// two renderers of the same snapshot, so they never disagree.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "io/proactor.h"
#include "server/command_stats.h"
#include "server/instantaneous_metrics.h"
#include "server/script_stats.h"
#include "server/server_state.h"
#include "shard/shard.h"

namespace shardis::server {

// What one thread (one shard) contributes.
struct ThreadSample {
  ThreadStats stats;
  size_t clients = 0;
  shard::ShardStats shard;
  // Active defragmentation: counts add up; the times and the CPU percent of the total are the
  // largest shard's (the shards defragment side by side, as one Redis process would).
  shard::DefragStats defrag;
  // The lazy-free queue: objects waiting, and freed since start or RESETSTAT (both add up).
  size_t lazyfree_pending = 0;
  uint64_t lazyfreed = 0;
  size_t used_memory = 0;     // the shard's structure, values and tables
  size_t startup_memory = 0;  // used_memory as the shard started, with no key
  size_t dataset_memory = 0;  // its keys' and values' blocks (Shard::dataset_memory)
  uint64_t expired_keys = 0;
  struct DbSample {
    uint64_t keys = 0, expires = 0;
    int64_t ttl_sum_ms = 0;
  };
  std::array<DbSample, shard::Shard::kNumDbs> dbs;
  uint64_t keys = 0;  // in every database
  // Keys clients are blocked on in this shard, and those with an XREADGROUP waiter (INFO's
  // total_blocking_keys, total_blocking_keys_on_nokey; a key lives on one shard, so they add up).
  size_t blocking_keys = 0, blocking_keys_on_nokey = 0;
  size_t migrate_cached_sockets = 0;  // MIGRATE's idle connections (MigrateTarget's cache)
  io::Proactor::Stats io;
  size_t queued_tasks = 0;  // hops waiting in the thread's inboxes (and its full outboxes)
  InstantaneousRates rates;  // INFO's instantaneous_* figures
  size_t client_memory = 0;  // the buffers of the thread's connections (their tot-mem)
  ClientBufferPeaks recent_peaks;  // the largest client buffers of the last seconds (the total: max)
  size_t lua_memory = 0;           // the thread's Lua heap (the total: the sum)
  ScriptCacheStats scripts;        // the thread's script cache (the total: the first thread's,
                                   // as every thread holds the same scripts)
};

struct MetricsSnapshot {
  std::vector<ThreadSample> threads;  // by shard id
  ThreadSample total;                 // the sum (queued_tasks and io summed too)
  CommandStatsSnapshot commands;      // only with kGatherCommands
  uint64_t maxmemory = 0;             // the memory limit in bytes (--maxmemory); 0 = none
  size_t rss = 0;                     // resident set size of the process, bytes
  int64_t uptime_s = 0;
};

enum GatherParts : unsigned {
  kGatherThreads = 1 << 0,   // per-thread samples and their sum
  kGatherTtls = 1 << 1,      // the keyspace's average TTLs (costs a pass over the expiry tables)
  kGatherCommands = 1 << 2,  // command and error statistics
  kGatherLatency = 1 << 3,   // the per-command latency histograms (with kGatherCommands)
};

// Hops to every thread: call from a fiber.
MetricsSnapshot GatherMetrics(unsigned parts);

// used_memory_peak (INFO) and peak.allocated (MEMORY STATS): the largest used_memory either has
// seen, including `used`. Any thread.
size_t UpdatePeakMemory(size_t used);

// The resident set size from /proc/self/statm, or `fallback` if it cannot be read.
size_t ResidentBytes(size_t fallback);

// Where the memory goes, as Redis' getMemoryOverheadData breaks it down for INFO memory and
// MEMORY STATS. used_memory counts the shards (each one's heap of keys and values, its tables and
// itself); connection buffers, script caches and the AOF's backlog live outside the shards'
// heaps, so they are overhead on top of used_memory, where Redis counts them in it.
struct MemoryFigures {
  size_t used = 0;      // used_memory
  size_t peak = 0;      // used_memory_peak, including `used`
  size_t startup = 0;   // used_memory as the shards started (Redis': after its own start-up)
  size_t dataset = 0;   // the keys' and values' blocks: used less the shards' own tables
  size_t overhead = 0;  // the shards' own structures and tables, and the buffers listed here
  size_t clients = 0;   // the connections' buffers (mem_clients_normal)
  size_t aof_buffer = 0;        // journal bytes not yet written to the AOF (mem_aof_buffer)
  size_t lua_caches = 0;        // EVAL scripts' bodies
  size_t functions_caches = 0;  // function libraries' code
  size_t committed = 0;  // the allocator's committed memory (mimalloc's, as jemalloc's "active")
  size_t rss = 0;        // the process' resident set
  double dataset_perc = 0;  // of what the data added since start-up: dataset / (used - startup)
  double peak_perc = 0;     // used / peak
};

// From a snapshot gathered with kGatherThreads; updates the peak (UpdatePeakMemory).
MemoryFigures ComputeMemoryFigures(const MetricsSnapshot& m);

// The snapshot in the Prometheus text exposition format (version 0.0.4), names prefixed
// "shardis_". Wants a snapshot gathered with kGatherThreads | kGatherCommands.
std::string RenderPrometheus(const MetricsSnapshot& m);

}  // namespace shardis::server

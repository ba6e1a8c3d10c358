// INFO [section ...]: the server's figures in Redis' text layout, plus a "shards" section with
// per-shard figures of the thread-per-core runtime. The figures come from GatherMetrics
// (metrics.h), which /metrics renders too.
#include <mimalloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/access_clock.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/admission.h"
#include "server/aof.h"
#include "server/client_tracking.h"
#include "server/command.h"
#include "server/command_stats.h"
#include "server/latency_tracking.h"
#include "server/metrics.h"
#include "server/persistence_status.h"
#include "server/pubsub.h"
#include "server/resp_listeners.h"
#include "server/server_state.h"
#include "server/snapshot.h"
#include "shard/memory_limit.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

constexpr std::string_view kShardisVersion = "0.1.0";

// Redis' bytesToHuman: "123B", "1.21K", "3.50M", ...
std::string BytesToHuman(uint64_t n) {
  static constexpr std::string_view kUnits = "KMGTP";
  if (n < 1024) return core::Concat(n, "B");
  double d = double(n) / 1024;
  size_t unit = 0;
  while (d >= 1024 && unit + 1 < kUnits.size()) {
    d /= 1024;
    ++unit;
  }
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f%c", d, kUnits[unit]);
  return buf;
}

// Redis' "%.2f%%" and "%.2f" figures.
std::string Percent(double value) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.2f%%", value);
  return buf;
}
std::string Ratio(size_t a, size_t b) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.2f", b != 0 ? double(a) / double(b) : 0.0);
  return buf;
}
int64_t Difference(size_t a, size_t b) { return int64_t(a) - int64_t(b); }

std::string TimevalSeconds(const timeval& tv) {
  char buf[48];
  snprintf(buf, sizeof(buf), "%ld.%06ld", long(tv.tv_sec), long(tv.tv_usec));
  return buf;
}

enum InfoSection : unsigned {
  kSecServer = 1 << 0,
  kSecClients = 1 << 1,
  kSecMemory = 1 << 2,
  kSecPersistence = 1 << 3,
  kSecStats = 1 << 4,
  kSecReplication = 1 << 5,
  kSecCpu = 1 << 6,
  kSecModules = 1 << 7,
  kSecCommandStats = 1 << 8,
  kSecErrorStats = 1 << 9,
  kSecLatencyStats = 1 << 10,
  kSecCluster = 1 << 11,
  kSecKeyspace = 1 << 12,
  kSecShards = 1 << 13,  // ours: per-shard figures of the thread-per-core runtime
  kSecDebug = 1 << 14,   // only when asked for by name, as in Redis
};
constexpr unsigned kSecDefault = kSecServer | kSecClients | kSecMemory | kSecPersistence |
                                 kSecStats | kSecReplication | kSecCpu | kSecModules |
                                 kSecErrorStats | kSecCluster | kSecKeyspace;
constexpr unsigned kSecAll = (kSecShards << 1) - 1;

struct SectionName {
  std::string_view name;
  unsigned bit;
};
constexpr SectionName kSectionNames[] = {
    {"server", kSecServer},
    {"clients", kSecClients},
    {"memory", kSecMemory},
    {"persistence", kSecPersistence},
    {"stats", kSecStats},
    {"replication", kSecReplication},
    {"cpu", kSecCpu},
    {"modules", kSecModules},
    {"commandstats", kSecCommandStats},
    {"errorstats", kSecErrorStats},
    {"latencystats", kSecLatencyStats},
    {"cluster", kSecCluster},
    {"keyspace", kSecKeyspace},
    {"shards", kSecShards},
    {"shardis", kSecShards},  // the section's earlier name
    {"debug", kSecDebug},
};

// The text of INFO for the selected sections, with Redis' layout: "# Title" headers, "field:value"
// lines, CRLF line ends and an empty line between sections.
std::string BuildInfo(unsigned sections) {
  unsigned parts = 0;
  if (sections & (kSecClients | kSecMemory | kSecPersistence | kSecStats | kSecKeyspace |
                  kSecShards | kSecDebug)) {
    parts |= kGatherThreads;
  }
  if (sections & kSecKeyspace) parts |= kGatherTtls;
  if (sections & (kSecStats | kSecCommandStats | kSecErrorStats | kSecLatencyStats)) {
    parts |= kGatherCommands;
  }
  if (sections & kSecLatencyStats) parts |= kGatherCommands | kGatherLatency;
  const MetricsSnapshot m = GatherMetrics(parts);
  const ThreadSample& total = m.total;
  const std::vector<ThreadSample>& samples = m.threads;
  const CommandStatsSnapshot& cmds = m.commands;

  const ServerInfo& info = Info();
  const int64_t now_ms = shard::NowMs();
  std::string out;
  int emitted = 0;
  auto header = [&](std::string_view title) {
    if (emitted++ > 0) out += "\r\n";
    core::Append(&out, "# ", title, "\r\n");
  };
  auto field = [&](std::string_view name, const auto& value) {
    core::Append(&out, name, ":", value, "\r\n");
  };

  if (sections & kSecServer) {
    static const std::string os = [] {
      utsname u;
      if (uname(&u) != 0) return std::string("Linux");
      return core::Concat(u.sysname, " ", u.release, " ", u.machine);
    }();
    timeval tv;
    gettimeofday(&tv, nullptr);
    const int64_t uptime_s = (now_ms - info.start_ms) / 1000;
    header("Server");
    field("redis_version", kRedisVersion);
    field("shardis_version", kShardisVersion);
    field("redis_git_sha1", "00000000");
    field("redis_git_dirty", 0);
    field("redis_build_id", "0");
    field("redis_mode", "standalone");
    field("os", os);
    field("arch_bits", int(sizeof(void*) * 8));
    field("monotonic_clock", "POSIX clock_gettime");
    field("multiplexing_api", "io_uring");
    field("atomicvar_api", "c11-builtin");
    field("gcc_version", core::Concat(__GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__));
    field("process_id", int64_t(getpid()));
    field("process_supervised", "no");
    field("run_id", info.run_id);
    // The TLS port when there is no plain one, as Redis shows it.
    field("tcp_port", int64_t(Port() > 0 ? Port() : TlsPort()));
    field("server_time_usec", int64_t(tv.tv_sec) * 1000000 + tv.tv_usec);
    field("uptime_in_seconds", uptime_s);
    field("uptime_in_days", uptime_s / 86400);
    field("hz", int64_t(shard::Hz()));
    field("configured_hz", int64_t(shard::Hz()));
    field("lru_clock", core::LruClock(now_ms));
    field("executable", info.executable);
    field("config_file", info.config_file);
    field("io_threads_active", 0);
  }
  if (sections & kSecClients) {
    header("Clients");
    field("connected_clients", total.clients);
    field("cluster_connections", 0);
    field("maxclients", MaxClients());
    field("client_recent_max_input_buffer", total.recent_peaks.input);
    field("client_recent_max_output_buffer", total.recent_peaks.output);
    field("blocked_clients", total.stats.blocked_clients);
    field("tracking_clients", TrackingClients());
    field("clients_in_timeout_table", total.stats.clients_in_timeout_table);
    field("total_blocking_keys", total.blocking_keys);
    field("total_blocking_keys_on_nokey", total.blocking_keys_on_nokey);
  }
  if (sections & kSecMemory) {
    // used_memory is exact: the bytes of the shards' values (each shard counts its own heap),
    // tables and own structures. The resident size comes from the kernel (mimalloc's own RSS
    // figure is an estimate on Linux, and only the fallback if /proc cannot be read).
    const MemoryFigures mem = ComputeMemoryFigures(m);
    const size_t used = mem.used;
    const uint64_t total_mem = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
    const int v = mi_version();
    header("Memory");
    field("used_memory", used);
    field("used_memory_human", BytesToHuman(used));
    field("used_memory_rss", mem.rss);
    field("used_memory_rss_human", BytesToHuman(mem.rss));
    field("used_memory_peak", mem.peak);
    field("used_memory_peak_human", BytesToHuman(mem.peak));
    field("used_memory_peak_perc", Percent(mem.peak_perc));
    field("used_memory_overhead", mem.overhead);
    field("used_memory_startup", mem.startup);
    field("used_memory_dataset", mem.dataset);
    field("used_memory_dataset_perc", Percent(mem.dataset_perc));
    // mimalloc's committed memory stands for jemalloc's "active" pages.
    field("allocator_allocated", used);
    field("allocator_active", mem.committed);
    field("allocator_resident", mem.rss);
    field("total_system_memory", total_mem);
    field("total_system_memory_human", BytesToHuman(total_mem));
    // One Lua interpreter per thread runs both EVAL's scripts and the functions (Redis has a VM
    // for each): the heaps' sum is reported as the eval VM's. The caches are the same on every
    // thread: one copy is counted.
    const ScriptCacheStats& sc = total.scripts;
    field("used_memory_lua", total.lua_memory);
    field("used_memory_vm_eval", total.lua_memory);
    field("used_memory_lua_human", BytesToHuman(total.lua_memory));
    field("used_memory_scripts_eval", sc.script_bytes);
    field("number_of_cached_scripts", sc.scripts);
    field("number_of_functions", sc.functions);
    field("number_of_libraries", sc.libraries);
    field("used_memory_vm_functions", 0);
    field("used_memory_vm_total", total.lua_memory);
    field("used_memory_vm_total_human", BytesToHuman(total.lua_memory));
    field("used_memory_functions", sc.library_bytes);
    field("used_memory_scripts", sc.script_bytes + sc.library_bytes);
    field("used_memory_scripts_human", BytesToHuman(sc.script_bytes + sc.library_bytes));
    const uint64_t maxmemory = shard::MemoryLimit::maxmemory();
    field("maxmemory", maxmemory);
    field("maxmemory_human", BytesToHuman(maxmemory));
    field("maxmemory_policy", shard::EvictionPolicyName(shard::MemoryLimit::policy()));
    field("allocator_frag_ratio", Ratio(mem.committed, used));
    field("allocator_frag_bytes", Difference(mem.committed, used));
    field("allocator_rss_ratio", Ratio(mem.rss, mem.committed));
    field("allocator_rss_bytes", Difference(mem.rss, mem.committed));
    // The allocator's resident figure is the process' own here: nothing resident beside it.
    field("rss_overhead_ratio", "1.00");
    field("rss_overhead_bytes", 0);
    field("mem_fragmentation_ratio", Ratio(mem.rss, used));
    field("mem_fragmentation_bytes", Difference(mem.rss, used));
    // Redis leaves its AOF and replica buffers out of what eviction counts; here they are not on a
    // shard's heap, so nothing in used_memory is left out.
    field("mem_not_counted_for_evict", 0);
    field("mem_replication_backlog", 0);
    field("mem_total_replication_buffers", 0);
    // Connection buffers are not part of used_memory here (they are not on a shard's heap):
    // mem_clients_normal reports them on their own.
    field("mem_clients_slaves", 0);
    field("mem_clients_normal", mem.clients);
    field("mem_cluster_links", 0);
    field("mem_aof_buffer", mem.aof_buffer);
    field("mem_allocator", core::Concat("mimalloc-", v / 100, ".", (v % 100) / 10, ".", v % 10));
    // The CPU percent of the running walk (Redis' server.active_defrag_running), 0 when none.
    field("active_defrag_running", total.defrag.running);
    field("lazyfree_pending_objects", total.lazyfree_pending);
    field("lazyfreed_objects", total.lazyfreed);
  }
  if (sections & kSecPersistence) {
    header("Persistence");
    const PersistenceStatus& ps = Persistence();
    const bool loading = ps.loading.load();
    field("loading", int(loading));
    field("async_loading", 0);
    // No fork, so no copy-on-write: the snapshot's own memory is its pieces in flight.
    field("current_cow_peak", 0);
    field("current_cow_size", 0);
    field("current_cow_size_age", 0);
    field("current_fork_perc", "0.00");
    field("current_save_keys_processed", 0);
    field("current_save_keys_total", 0);
    // The sum of the shards' counters comes with the snapshot above (no extra hop). A save that
    // ended after our hops recorded a sum that may be larger than ours: then nothing is new.
    const uint64_t saved = ps.dirty_at_last_save.load();
    field("rdb_changes_since_last_save", total.shard.dirty > saved ? total.shard.dirty - saved : 0);
    const bool bgsave = ps.bgsave_in_progress.load();
    field("rdb_bgsave_in_progress", int(bgsave));
    field("rdb_last_save_time", ps.last_save_time.load());
    field("rdb_last_bgsave_status", ps.last_bgsave_ok.load() ? "ok" : "err");
    field("rdb_last_bgsave_time_sec", ps.last_bgsave_time_sec.load());
    field("rdb_current_bgsave_time_sec",
          bgsave ? shard::NowMs() / 1000 - ps.bgsave_start_ms.load() / 1000 : int64_t{-1});
    field("rdb_saves", ps.saves.load());
    field("rdb_last_cow_size", 0);
    field("rdb_last_load_keys_expired", ps.last_load_keys_expired.load());
    field("rdb_last_load_keys_loaded", ps.last_load_keys_loaded.load());
    AppendAofInfo(&out);
    if (loading) {
      const int64_t start_s = ps.loading_start_ms.load() / 1000;
      const uint64_t total_bytes = ps.loading_total_bytes.load();
      const uint64_t loaded_bytes = ps.loading_loaded_bytes.load();
      const int64_t elapsed = shard::NowMs() / 1000 - start_s;
      char perc[32];
      snprintf(perc, sizeof(perc), "%.2f",
               total_bytes ? double(loaded_bytes) * 100 / double(total_bytes) : 0.0);
      field("loading_start_time", start_s);
      field("loading_total_bytes", total_bytes);
      field("loading_rdb_used_mem", 0);
      field("loading_loaded_bytes", loaded_bytes);
      field("loading_loaded_perc", perc);
      field("loading_eta_seconds",
            elapsed == 0 ? int64_t{1}
                         : int64_t(double(elapsed) * double(total_bytes - loaded_bytes) /
                                   double(loaded_bytes + 1)));
    }
  }
  if (sections & kSecStats) {
    header("Stats");
    field("total_connections_received", total.stats.connections_received);
    field("total_commands_processed", total.stats.commands_processed);
    field("instantaneous_ops_per_sec", int64_t(total.rates.ops_per_sec));
    field("total_net_input_bytes", total.stats.net.bytes_in);
    field("total_net_output_bytes", total.stats.net.bytes_out);
    field("total_net_repl_input_bytes", 0);
    field("total_net_repl_output_bytes", 0);
    char in_kbps[32], out_kbps[32];
    snprintf(in_kbps, sizeof(in_kbps), "%.2f", total.rates.input_kbps);
    snprintf(out_kbps, sizeof(out_kbps), "%.2f", total.rates.output_kbps);
    field("instantaneous_input_kbps", in_kbps);
    field("instantaneous_output_kbps", out_kbps);
    field("instantaneous_input_repl_kbps", "0.00");
    field("instantaneous_output_repl_kbps", "0.00");
    field("rejected_connections", total.stats.rejected_connections);
    field("sync_full", 0);
    field("sync_partial_ok", 0);
    field("sync_partial_err", 0);
    field("expired_keys", total.expired_keys);
    field("expired_stale_perc", "0.00");
    field("expired_time_cap_reached_count", 0);
    field("expire_cycle_cpu_milliseconds", 0);
    field("evicted_keys", total.shard.evicted_keys);
    field("evicted_clients", 0);
    field("total_eviction_exceeded_time", 0);
    field("current_eviction_exceeded_time", 0);
    field("keyspace_hits", total.shard.keyspace_hits);
    field("keyspace_misses", total.shard.keyspace_misses);
    const PubSubTotals pubsub = CountPubSub();
    field("pubsub_channels", pubsub.channels);
    field("pubsub_patterns", pubsub.patterns);
    field("pubsubshard_channels", pubsub.shard_channels);
    field("latest_fork_usec", 0);
    field("total_forks", 0);
    field("migrate_cached_sockets", total.migrate_cached_sockets);
    field("slave_expires_tracked_keys", 0);
    const shard::DefragStats& defrag = total.defrag;
    field("active_defrag_hits", defrag.hits);
    field("active_defrag_misses", defrag.misses);
    field("active_defrag_key_hits", defrag.key_hits);
    field("active_defrag_key_misses", defrag.key_misses);
    // Milliseconds, as Redis: the time walks ran (ended ones and the running one).
    field("total_active_defrag_time", (defrag.total_time_us + defrag.current_time_us) / 1000);
    field("current_active_defrag_time", defrag.current_time_us / 1000);
    field("tracking_total_keys", shard::TrackedKeysTotal());
    field("tracking_total_items", shard::TrackedItemsTotal());
    field("tracking_total_prefixes", shard::TrackedPrefixesTotal());
    field("unexpected_error_replies", 0);
    field("total_error_replies", cmds.total_error_replies);
    field("dump_payload_sanitizations", 0);
    // The clients' socket reads and writes, each thread counting its own connections'.
    field("total_reads_processed", total.stats.net.reads);
    field("total_writes_processed", total.stats.net.writes);
    field("io_threaded_reads_processed", 0);
    field("io_threaded_writes_processed", 0);
    field("reply_buffer_shrinks", total.stats.net.send_buffer_releases);
    field("reply_buffer_expands", total.stats.reply_buffer_expands);
    field("client_query_buffer_limit_disconnections",
          total.stats.client_query_buffer_limit_disconnections);
    field("client_output_buffer_limit_disconnections",
          total.stats.client_output_buffer_limit_disconnections);
    // Redis 7.2's loop figures, in microseconds, summed over the threads. A cycle is one pass of
    // a thread's loop between two entries into the kernel: the ready fibers run (connections
    // parse and execute their batches, hops from other threads run) and the submissions of a
    // non-blocking io_uring_enter go out; a blocking wait for completions is in no cycle
    // (io/proactor.h). Redis' cycle is one aeProcessEvents turn, its sleep in epoll_wait aside.
    field("eventloop_cycles", total.io.cycles);
    field("eventloop_duration_sum", total.io.cycle_ns_sum / 1000);
    // The commands' time, as commandstats counts it (a command that hops is timed from its
    // dispatch to its reply being back, so this may exceed the loops' own time).
    uint64_t command_ns = 0;
    for (const CommandCounters& c : cmds.counters) command_ns += c.duration_ns;
    field("eventloop_duration_cmd_sum", command_ns / 1000);
    field("instantaneous_eventloop_cycles_per_sec", uint64_t(total.rates.eventloop_cycles_per_sec));
    // The mean cycle of the last samples, over every thread's cycles.
    field("instantaneous_eventloop_duration_usec",
          total.rates.eventloop_cycles_per_sec > 0
              ? uint64_t(total.rates.eventloop_usec_per_sec / total.rates.eventloop_cycles_per_sec)
              : uint64_t{0});
    field("acl_access_denied_auth", total.stats.acl_denied_auth);
    field("acl_access_denied_cmd", total.stats.acl_denied_cmd);
    field("acl_access_denied_key", total.stats.acl_denied_key);
    field("acl_access_denied_channel", total.stats.acl_denied_channel);
  }
  if (sections & kSecReplication) {
    header("Replication");
    field("role", "master");
    field("connected_slaves", 0);
    field("master_failover_state", "no-failover");
    field("master_replid", info.run_id);
    field("master_replid2", std::string(40, '0'));
    field("master_repl_offset", 0);
    field("second_repl_offset", -1);
    field("repl_backlog_active", 0);
    field("repl_backlog_size", 1048576);
    field("repl_backlog_first_byte_offset", 0);
    field("repl_backlog_histlen", 0);
  }
  if (sections & kSecCpu) {
    rusage self, children, thread;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    getrusage(RUSAGE_THREAD, &thread);
    header("CPU");
    field("used_cpu_sys", TimevalSeconds(self.ru_stime));
    field("used_cpu_user", TimevalSeconds(self.ru_utime));
    field("used_cpu_sys_children", TimevalSeconds(children.ru_stime));
    field("used_cpu_user_children", TimevalSeconds(children.ru_utime));
    field("used_cpu_sys_main_thread", TimevalSeconds(thread.ru_stime));
    field("used_cpu_user_main_thread", TimevalSeconds(thread.ru_utime));
  }
  if (sections & kSecModules) header("Modules");
  if (sections & kSecCommandStats) {
    header("Commandstats");
    // Redis lists the commands that were called, rejected or failed at least once.
    for (size_t i = 0; i < cmds.counters.size(); ++i) {
      const CommandCounters& c = cmds.counters[i];
      if (c.calls == 0 && c.rejected == 0 && c.failed == 0) continue;
      const uint64_t usec = c.duration_ns / 1000;
      char per_call[32];
      snprintf(per_call, sizeof(per_call), "%.2f",
               c.calls ? double(c.duration_ns) / 1000.0 / double(c.calls) : 0.0);
      core::Append(&out, "cmdstat_", CommandStatsName(uint32_t(i)), ":calls=", c.calls,
                   ",usec=", usec, ",usec_per_call=", per_call, ",rejected_calls=", c.rejected,
                   ",failed_calls=", c.failed, "\r\n");
    }
  }
  if (sections & kSecErrorStats) {
    header("Errorstats");
    for (const auto& [prefix, count] : cmds.errors) {
      core::Append(&out, "errorstat_", prefix, ":count=", count, "\r\n");
    }
  }
  if (sections & kSecLatencyStats) {
    header("Latencystats");
    // As Redis: nothing while latency-tracking is off; the configured percentiles, in
    // microseconds.
    const std::vector<double> percentiles = LatencyPercentiles();
    for (size_t i = 0; i < cmds.latency.size() && LatencyTracking(); ++i) {
      const core::LatencyHistogram* h = cmds.latency[i].get();
      if (h == nullptr || h->count() == 0) continue;
      core::Append(&out, "latency_percentiles_usec_", CommandStatsName(uint32_t(i)), ":");
      for (size_t j = 0; j < percentiles.size(); ++j) {
        char value[32];
        snprintf(value, sizeof(value), "%.3f",
                 double(h->ValueAtPercentile(percentiles[j])) / 1000.0);
        core::Append(&out, j == 0 ? "p" : ",p", FormatPercentile(percentiles[j]), "=", value);
      }
      out += "\r\n";
    }
  }
  if (sections & kSecCluster) {
    header("Cluster");
    field("cluster_enabled", 0);
  }
  if (sections & kSecKeyspace) {
    header("Keyspace");
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      const ThreadSample::DbSample& d = total.dbs[i];
      if (d.keys == 0) continue;
      const int64_t avg_ttl = d.expires ? d.ttl_sum_ms / int64_t(d.expires) : 0;
      core::Append(&out, "db", i, ":keys=", d.keys, ",expires=", d.expires, ",avg_ttl=", avg_ttl,
                   "\r\n");
    }
  }
  if (sections & kSecShards) {
    header("Shards");
    field("threads", samples.size());
    field("protocol_errors", total.stats.protocol_errors);
    field("unknown_commands", total.stats.unknown_commands);
    for (size_t i = 0; i < samples.size(); ++i) {
      const ThreadSample& t = samples[i];
      core::Append(&out, "shard", i, ":keys=", t.keys, ",used_memory=", t.used_memory,
                   ",clients=", t.clients, ",commands=", t.stats.commands_processed,
                   ",queue_length=", t.queued_tasks, ",hops_run=", t.io.tasks_run,
                   ",loop_iterations=", t.io.loop_polls, ",uring_enters=", t.io.enters,
                   ",parks=", t.io.parks, ",wakeups_sent=", t.io.wakeups_sent,
                   ",ring_full_waits=", t.io.ring_full_waits, ",spins=", t.io.spins,
                   ",hops_after_input=", t.io.tasks_after_input,
                   ",eventloop_duration_max=", t.io.cycle_ns_max / 1000, "\r\n");
    }
  }
  if (sections & kSecDebug) {
    header("Debug");
    field("eventloop_duration_max", total.io.cycle_ns_max / 1000);  // the longest of any thread
  }
  return out;
}

void CmdInfo(ArgSlice args, ConnContext& ctx) {
  unsigned sections = args.size() == 1 ? kSecDefault : 0;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (core::EqualsIgnoreCase(a, "all") || core::EqualsIgnoreCase(a, "everything")) {
      sections |= kSecAll;
    } else if (core::EqualsIgnoreCase(a, "default")) {
      sections |= kSecDefault;
    } else {
      for (const SectionName& s : kSectionNames) {
        if (core::EqualsIgnoreCase(a, s.name)) sections |= s.bit;
      }
    }
  }
  std::string text = BuildInfo(sections);
  if (ctx.rb.resp3()) {
    ctx.rb.Verbatim(text, "txt");
  } else {
    ctx.rb.Bulk(text);
  }
}

}  // namespace

void RegisterInfoCommand(CommandRegistry* r) {
  r->Register({.name = "info", .arity = -1, .flags = kLoading | kStale, .keys = kNoKeys,
               .acl_categories = "slow dangerous", .on_conn = CmdInfo,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns information and statistics about the server.",
                        .tips = "nondeterministic_output request_policy:all_shards "
                                "response_policy:special"}});
}

}  // namespace shardis::server

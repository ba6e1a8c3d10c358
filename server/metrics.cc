#include "server/metrics.h"

#include <mimalloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "core/string_util.h"
#include "server/migrate_target.h"
#include "shard/db.h"
#include "shard/journal_durability.h"
#include "shard/memory_limit.h"
#include "shard/shard_set.h"

namespace shardis::server {

using shard::Shard;

MetricsSnapshot GatherMetrics(unsigned parts) {
  MetricsSnapshot m;
  m.uptime_s = (shard::NowMs() - Info().start_ms) / 1000;
  m.rss = ResidentBytes(0);
  m.maxmemory = shard::MemoryLimit::maxmemory();
  if (parts & kGatherThreads) {
    const bool with_ttls = parts & kGatherTtls;
    m.threads.resize(shard::shard_set->size());
    shard::shard_set->AwaitAll([&](Shard& s) {
      ThreadSample& out = m.threads[s.id()];
      ServerThreadState& st = ServerThreadState::current();
      out.stats = st.stats();
      out.clients = st.connections().size();
      out.shard = s.stats();
      out.defrag = s.defrag().stats();
      out.lazyfree_pending = s.lazy_free().pending();
      out.lazyfreed = s.lazy_free().freed();
      io::Proactor* p = io::Proactor::current();
      out.io = p->stats();
      out.queued_tasks = p->QueuedTasks();
      out.rates = LocalInstantaneousRates();
      out.recent_peaks = RecentClientBufferPeaks();
      out.lua_memory = ThreadLuaMemory();
      out.scripts = ThreadScriptCacheStats();
      for (const ConnectionState* c : st.connections()) {
        if (c->push != nullptr) out.client_memory += c->push->Buffers().tot_mem;
      }
      // The shard's own structure (its databases' table headers) counts too, as Redis counts its
      // empty dicts: an empty server does not report 0.
      out.used_memory = s.used_memory();
      out.startup_memory = s.startup_memory();
      out.dataset_memory = s.dataset_memory();
      out.blocking_keys = s.blocking().blocking_keys();
      out.blocking_keys_on_nokey = s.blocking().blocking_keys_on_nokey();
      out.migrate_cached_sockets = MigrateTarget::CachedCount();
      const int64_t now = shard::NowMs();
      for (int i = 0; i < Shard::kNumDbs; ++i) {
        shard::Db& db = s.db(i);
        out.expired_keys += db.expired_keys();
        out.dbs[i].keys = db.size();
        out.dbs[i].expires = db.expires_count();
        out.keys += db.size();
        // SumTtlMs is O(1), but only the keyspace section shows it.
        if (with_ttls && db.expires_count() > 0) out.dbs[i].ttl_sum_ms = db.SumTtlMs(now);
      }
    });
    ThreadSample& total = m.total;
    if (!m.threads.empty()) total.scripts = m.threads[0].scripts;
    for (const ThreadSample& t : m.threads) {
      total.stats.connections_received += t.stats.connections_received;
      total.stats.commands_processed += t.stats.commands_processed;
      total.stats.net.bytes_in += t.stats.net.bytes_in;
      total.stats.net.bytes_out += t.stats.net.bytes_out;
      total.stats.net.reads += t.stats.net.reads;
      total.stats.net.writes += t.stats.net.writes;
      total.stats.net.send_buffer_releases += t.stats.net.send_buffer_releases;
      total.stats.reply_buffer_expands += t.stats.reply_buffer_expands;
      total.stats.rejected_connections += t.stats.rejected_connections;
      total.stats.protocol_errors += t.stats.protocol_errors;
      total.stats.unknown_commands += t.stats.unknown_commands;
      total.stats.blocked_clients += t.stats.blocked_clients;
      total.stats.clients_in_timeout_table += t.stats.clients_in_timeout_table;
      total.stats.client_query_buffer_limit_disconnections +=
          t.stats.client_query_buffer_limit_disconnections;
      total.stats.client_output_buffer_limit_disconnections +=
          t.stats.client_output_buffer_limit_disconnections;
      total.stats.acl_denied_auth += t.stats.acl_denied_auth;
      total.stats.acl_denied_cmd += t.stats.acl_denied_cmd;
      total.stats.acl_denied_key += t.stats.acl_denied_key;
      total.stats.acl_denied_channel += t.stats.acl_denied_channel;
      total.client_memory += t.client_memory;
      total.lua_memory += t.lua_memory;
      total.recent_peaks.input = std::max(total.recent_peaks.input, t.recent_peaks.input);
      total.recent_peaks.output = std::max(total.recent_peaks.output, t.recent_peaks.output);
      total.clients += t.clients;
      total.shard.keyspace_hits += t.shard.keyspace_hits;
      total.shard.keyspace_misses += t.shard.keyspace_misses;
      total.shard.evicted_keys += t.shard.evicted_keys;
      total.shard.dirty += t.shard.dirty;
      total.defrag.hits += t.defrag.hits;
      total.defrag.misses += t.defrag.misses;
      total.defrag.key_hits += t.defrag.key_hits;
      total.defrag.key_misses += t.defrag.key_misses;
      total.defrag.total_time_us = std::max(total.defrag.total_time_us, t.defrag.total_time_us);
      total.defrag.current_time_us =
          std::max(total.defrag.current_time_us, t.defrag.current_time_us);
      total.defrag.running = std::max(total.defrag.running, t.defrag.running);
      total.used_memory += t.used_memory;
      total.startup_memory += t.startup_memory;
      total.dataset_memory += t.dataset_memory;
      total.expired_keys += t.expired_keys;
      total.lazyfree_pending += t.lazyfree_pending;
      total.lazyfreed += t.lazyfreed;
      total.keys += t.keys;
      total.blocking_keys += t.blocking_keys;
      total.blocking_keys_on_nokey += t.blocking_keys_on_nokey;
      total.migrate_cached_sockets += t.migrate_cached_sockets;
      total.queued_tasks += t.queued_tasks;
      total.rates.ops_per_sec += t.rates.ops_per_sec;
      total.rates.input_kbps += t.rates.input_kbps;
      total.rates.output_kbps += t.rates.output_kbps;
      total.rates.eventloop_cycles_per_sec += t.rates.eventloop_cycles_per_sec;
      total.rates.eventloop_usec_per_sec += t.rates.eventloop_usec_per_sec;
      total.io.loop_polls += t.io.loop_polls;
      total.io.enters += t.io.enters;
      total.io.parks += t.io.parks;
      total.io.tasks_run += t.io.tasks_run;
      total.io.wakeups_sent += t.io.wakeups_sent;
      total.io.ring_full_waits += t.io.ring_full_waits;
      total.io.spins += t.io.spins;
      total.io.tasks_after_input += t.io.tasks_after_input;
      total.io.cycles += t.io.cycles;
      total.io.cycle_ns_sum += t.io.cycle_ns_sum;
      total.io.cycle_ns_max = std::max(total.io.cycle_ns_max, t.io.cycle_ns_max);
      for (int i = 0; i < Shard::kNumDbs; ++i) {
        total.dbs[i].keys += t.dbs[i].keys;
        total.dbs[i].expires += t.dbs[i].expires;
        total.dbs[i].ttl_sum_ms += t.dbs[i].ttl_sum_ms;
      }
    }
  }
  if (parts & kGatherCommands) m.commands = GatherCommandStats(parts & kGatherLatency);
  return m;
}

// used_memory_peak: the largest used_memory INFO or MEMORY STATS has seen (Redis samples it in its
// cron; we sample it whenever one of them computes used_memory). Returns the peak including `used`.
size_t UpdatePeakMemory(size_t used) {
  // Relaxed is enough: the value is a statistic, and the CAS loop only keeps it monotonic.
  static std::atomic<size_t> peak{0};
  size_t seen = peak.load(std::memory_order_relaxed);
  while (seen < used && !peak.compare_exchange_weak(seen, used, std::memory_order_relaxed)) {
  }
  return seen < used ? used : seen;
}

size_t ResidentBytes(size_t fallback) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == nullptr) return fallback;
  unsigned long size_pages = 0, resident_pages = 0;
  const int n = fscanf(f, "%lu %lu", &size_pages, &resident_pages);
  fclose(f);
  return n == 2 ? size_t(resident_pages) * size_t(sysconf(_SC_PAGESIZE)) : fallback;
}

MemoryFigures ComputeMemoryFigures(const MetricsSnapshot& m) {
  const ThreadSample& t = m.total;
  MemoryFigures f;
  f.used = t.used_memory;
  f.peak = UpdatePeakMemory(f.used);
  f.startup = t.startup_memory;
  f.dataset = std::min(t.dataset_memory, f.used);
  f.clients = t.client_memory;
  f.aof_buffer = shard::JournalBacklogBytes();
  f.lua_caches = t.scripts.script_bytes;
  f.functions_caches = t.scripts.library_bytes;
  f.overhead = (f.used - f.dataset) + f.clients + f.aof_buffer + f.lua_caches + f.functions_caches;
  size_t elapsed, user, sys, rss, peak_rss, peak_committed, faults;
  mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &f.committed, &peak_committed, &faults);
  f.rss = m.rss != 0 ? m.rss : rss;  // mimalloc's RSS is an estimate on Linux: the fallback
  // Redis: the dataset's share of what the server holds beyond its start-up memory.
  const size_t net = f.used > f.startup ? f.used - f.startup : 0;
  f.dataset_perc = net != 0 ? std::min(100.0, 100.0 * double(f.dataset) / double(net)) : 0;
  f.peak_perc = f.peak != 0 ? 100.0 * double(f.used) / double(f.peak) : 0;
  return f;
}

namespace {

// Writes one metric family: HELP and TYPE lines, then its samples.
class PromWriter {
 public:
  explicit PromWriter(std::string* out) : out_(out) {}

  void Family(std::string_view name, std::string_view type, std::string_view help) {
    core::Append(out_, "# HELP shardis_", name, " ", help, "\n# TYPE shardis_", name, " ", type,
                 "\n");
  }
  template <typename T>
  void Sample(std::string_view name, const T& value, std::string_view labels = {}) {
    core::Append(out_, "shardis_", name);
    if (!labels.empty()) core::Append(out_, "{", labels, "}");
    core::Append(out_, " ", value, "\n");
  }
  template <typename T>
  void Gauge(std::string_view name, std::string_view help, const T& value) {
    Family(name, "gauge", help);
    Sample(name, value);
  }
  template <typename T>
  void Counter(std::string_view name, std::string_view help, const T& value) {
    Family(name, "counter", help);
    Sample(name, value);
  }

 private:
  std::string* out_;
};

std::string Seconds(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.6f", double(ns) / 1e9);
  return buf;
}

// Command names are ours ([a-z|-]), but escape as the format asks anyway.
std::string Label(std::string_view key, std::string_view value) {
  std::string out = core::Concat(key, "=\"");
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string RenderPrometheus(const MetricsSnapshot& m) {
  std::string out;
  PromWriter w(&out);
  const ThreadSample& t = m.total;
  w.Gauge("uptime_seconds", "Seconds since the server started.", m.uptime_s);
  w.Gauge("threads", "Shard threads (one shard of the keyspace each).", m.threads.size());
  w.Gauge("connected_clients", "Client connections open now.", t.clients);
  w.Gauge("blocked_clients", "Clients waiting in a blocking command.", t.stats.blocked_clients);
  w.Counter("connections_received_total", "Connections accepted.", t.stats.connections_received);
  w.Counter("rejected_connections_total", "Connections refused.", t.stats.rejected_connections);
  w.Gauge("memory_used_bytes", "Bytes used by the data set and its tables.", t.used_memory);
  w.Gauge("memory_max_bytes", "The memory limit (maxmemory); 0 when there is none.", m.maxmemory);
  w.Gauge("memory_rss_bytes", "Resident set size of the process.", m.rss);
  w.Counter("commands_processed_total", "Commands received (INFO total_commands_processed).",
            t.stats.commands_processed);
  w.Counter("net_input_bytes_total", "Bytes read from clients.", t.stats.net.bytes_in);
  w.Counter("net_output_bytes_total", "Bytes written to clients.", t.stats.net.bytes_out);
  w.Counter("keyspace_hits_total", "Key lookups that found the key.", t.shard.keyspace_hits);
  w.Counter("keyspace_misses_total", "Key lookups that missed.", t.shard.keyspace_misses);
  w.Counter("expired_keys_total", "Keys removed because they expired.", t.expired_keys);
  w.Counter("evicted_keys_total", "Keys evicted under the memory limit.", t.shard.evicted_keys);
  w.Counter("error_replies_total", "Error replies sent (INFO total_error_replies).",
            m.commands.total_error_replies);

  const CommandStatsSnapshot& c = m.commands;
  // One counter family per command figure: a sample for each command where `counts` holds.
  auto per_command = [&](std::string_view name, std::string_view help, auto counts, auto value) {
    w.Family(name, "counter", help);
    for (size_t i = 0; i < c.counters.size(); ++i) {
      if (counts(c.counters[i])) {
        w.Sample(name, value(c.counters[i]), Label("cmd", CommandStatsName(uint32_t(i))));
      }
    }
  };
  const auto ran = [](const CommandCounters& k) { return k.calls != 0; };
  per_command("commands_total", "Calls of a command that ran (INFO commandstats calls).", ran,
              [](const CommandCounters& k) { return k.calls; });
  per_command("commands_duration_seconds_total",
              "Time spent running a command, in seconds (INFO commandstats usec).", ran,
              [](const CommandCounters& k) { return Seconds(k.duration_ns); });
  per_command("commands_rejected_calls_total",
              "Calls of a command refused before it ran (wrong arity, EXECABORT, ...).",
              [](const CommandCounters& k) { return k.rejected != 0; },
              [](const CommandCounters& k) { return k.rejected; });
  per_command("commands_failed_calls_total", "Calls of a command that ran and replied an error.",
              [](const CommandCounters& k) { return k.failed != 0; },
              [](const CommandCounters& k) { return k.failed; });
  w.Family("errors_total", "counter", "Error replies by error code (INFO errorstats).");
  for (const auto& [prefix, count] : c.errors) {
    w.Sample("errors_total", count, Label("err", prefix));
  }

  w.Family("db_keys", "gauge", "Keys in a database.");
  w.Family("db_keys_expiring", "gauge", "Keys with a time to live in a database.");
  for (int i = 0; i < Shard::kNumDbs; ++i) {
    if (t.dbs[i].keys == 0) continue;
    w.Sample("db_keys", t.dbs[i].keys, Label("db", core::Concat(i)));
  }
  for (int i = 0; i < Shard::kNumDbs; ++i) {
    if (t.dbs[i].keys == 0) continue;
    w.Sample("db_keys_expiring", t.dbs[i].expires, Label("db", core::Concat(i)));
  }

  // Per shard: the figures of the thread-per-core runtime.
  struct PerShard {
    std::string_view name, type, help;
    uint64_t (*get)(const ThreadSample&);
  };
  static constexpr PerShard kPerShard[] = {
      {"shard_keys", "gauge", "Keys held by a shard.",
       [](const ThreadSample& s) { return s.keys; }},
      {"shard_memory_used_bytes", "gauge", "Bytes used by a shard's data.",
       [](const ThreadSample& s) { return uint64_t(s.used_memory); }},
      {"shard_connected_clients", "gauge", "Client connections living on a shard's thread.",
       [](const ThreadSample& s) { return uint64_t(s.clients); }},
      {"shard_commands_processed_total", "counter", "Commands dispatched on a shard's thread.",
       [](const ThreadSample& s) { return s.stats.commands_processed; }},
      {"shard_queue_length", "gauge",
       "Cross-shard hops waiting in a shard's inbox rings (and its overflowing outboxes).",
       [](const ThreadSample& s) { return uint64_t(s.queued_tasks); }},
      {"shard_hops_run_total", "counter", "Cross-shard hops a shard's thread ran.",
       [](const ThreadSample& s) { return s.io.tasks_run; }},
      {"shard_loop_iterations_total", "counter", "Iterations of a thread's io_uring loop.",
       [](const ThreadSample& s) { return s.io.loop_polls; }},
      {"shard_uring_enters_total", "counter", "io_uring_enter calls of a thread.",
       [](const ThreadSample& s) { return s.io.enters; }},
      {"shard_parks_total", "counter", "Times a thread blocked waiting for completions.",
       [](const ThreadSample& s) { return s.io.parks; }},
      {"shard_wakeups_sent_total", "counter", "Wake-ups a thread sent to parked threads.",
       [](const ThreadSample& s) { return s.io.wakeups_sent; }},
      {"shard_ring_full_waits_total", "counter", "Times a fiber waited for a full outbox ring.",
       [](const ThreadSample& s) { return s.io.ring_full_waits; }},
      {"shard_spins_total", "counter",
       "Times the loop gave up the CPU briefly instead of blocking, while hops it sent were away.",
       [](const ThreadSample& s) { return s.io.spins; }},
      {"shard_hops_after_input_total", "counter",
       "Hops (pub/sub deliveries and counts) that waited for the input their thread had received.",
       [](const ThreadSample& s) { return s.io.tasks_after_input; }},
      {"shard_eventloop_duration_max_microseconds", "gauge",
       "The longest cycle of a thread's loop (between two entries into the kernel) since start "
       "or CONFIG RESETSTAT.",
       [](const ThreadSample& s) { return s.io.cycle_ns_max / 1000; }},
  };
  for (const PerShard& f : kPerShard) {
    w.Family(f.name, f.type, f.help);
    for (size_t i = 0; i < m.threads.size(); ++i) {
      w.Sample(f.name, f.get(m.threads[i]), Label("shard", core::Concat(i)));
    }
  }
  return out;
}

}  // namespace shardis::server

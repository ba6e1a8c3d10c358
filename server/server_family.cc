// Server commands: DBSIZE, FLUSHDB, FLUSHALL, INFO, CONFIG, COMMAND, CLIENT, DEBUG, WAIT, TIME.
//
// Whatever spans the process (key counts, statistics, the client list) is gathered with one hop to
// every thread (shard_set->AwaitAll): each thread reads its own Shard and ServerThreadState and
// writes its own slot of a vector the calling fiber owns, then the fiber merges the slots.
#include <mimalloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/fiber/operations.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/glob.h"
#include "core/number.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/server_state.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

constexpr std::string_view kShardisVersion = "0.1.0";
constexpr std::string_view kRedisVersion = "7.0.15";  // what clients see: a Redis 7.0 server

// ------------------------------------------------------------------------------------------------
// Subcommands of the container commands (CONFIG, CLIENT, COMMAND): looked up by name, arity checked
// like top-level commands, and reported by COMMAND INFO/DOCS/LIST as "container|sub".

struct SubCommand {
  std::string_view name;  // lower case
  int arity;              // Redis arity, counting the container name and the subcommand
  uint32_t flags;
  std::string_view acl_categories;
  std::string_view tips;  // space separated
  std::string_view since;
  std::string_view summary;
  ConnHandler handler;
};

struct Container {
  std::string_view name;
  std::span<const SubCommand> subs;
};

std::span<const Container> Containers();

const Container* FindContainer(std::string_view name) {
  for (const Container& c : Containers()) {
    if (core::EqualsIgnoreCase(c.name, name)) return &c;
  }
  return nullptr;
}

const SubCommand* FindSub(const Container& c, std::string_view name) {
  for (const SubCommand& s : c.subs) {
    if (core::EqualsIgnoreCase(s.name, name)) return &s;
  }
  return nullptr;
}

bool ArityOk(int arity, size_t argc) {
  return arity >= 0 ? argc == size_t(arity) : argc >= size_t(-arity);
}

// Runs the subcommand named by args[1], with Redis' errors for unknown ones and wrong arity.
void DispatchSub(std::string_view container, ArgSlice args, ConnContext& ctx) {
  const Container* c = FindContainer(container);
  const SubCommand* sub = c == nullptr ? nullptr : FindSub(*c, args[1]);
  if (sub == nullptr) {
    return ctx.rb.Error(core::Concat("ERR unknown subcommand '", args[1].substr(0, 128), "'. Try ",
                                     core::ToUpper(args[0]), " HELP."));
  }
  if (!ArityOk(sub->arity, args.size())) {
    return ctx.rb.Error(core::Concat("ERR wrong number of arguments for '", container, "|",
                                     sub->name, "' command"));
  }
  // CLIENT LIST shows the command a client runs now (or ran last) by its full name.
  ctx.conn.last_command = core::Concat(container, "|", sub->name);
  sub->handler(args, ctx);
}

// Replies a HELP text as Redis does: an array of status lines.
void ReplyHelp(core::ReplyBuilder& rb, std::string_view container,
               std::initializer_list<std::string_view> lines) {
  rb.ArrayHeader(lines.size() + 3);
  rb.SimpleString(
      core::Concat(container, " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"));
  for (std::string_view line : lines) rb.SimpleString(line);
  rb.SimpleString("HELP");
  rb.SimpleString("    Prints this help.");
}

// ------------------------------------------------------------------------------------------------
// DBSIZE, FLUSHDB, FLUSHALL

void CmdDbSize(ArgSlice, ConnContext& ctx) {
  std::vector<int64_t> sizes(shard::shard_set->size(), 0);
  const int db = ctx.conn.db;
  shard::shard_set->AwaitAll([&](Shard& s) { sizes[s.id()] = int64_t(s.db(db).size()); });
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  ctx.rb.Integer(total);
}

// FLUSHDB / FLUSHALL [ASYNC | SYNC]: both modes free synchronously, shard by shard in parallel.
template <bool kAll>
void CmdFlush(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 2 || (args.size() == 2 && !core::EqualsIgnoreCase(args[1], "sync") &&
                          !core::EqualsIgnoreCase(args[1], "async"))) {
    return ctx.rb.Error(kSyntaxErr);
  }
  const int db = ctx.conn.db;
  shard::shard_set->AwaitAll([&](Shard& s) {
    if (kAll) {
      for (int i = 0; i < Shard::kNumDbs; ++i) s.db(i).Clear();
    } else {
      s.db(db).Clear();
    }
  });
  ctx.rb.Ok();
}

// ------------------------------------------------------------------------------------------------
// INFO [section ...]

// What one thread contributes to INFO.
struct ThreadSample {
  ThreadStats stats;
  size_t clients = 0;
  shard::ShardStats shard;
  uint64_t expired_keys = 0;
  struct DbSample {
    uint64_t keys = 0, expires = 0;
    int64_t ttl_sum_ms = 0;
  };
  std::array<DbSample, Shard::kNumDbs> dbs;
  io::Proactor::Stats io;
};

std::vector<ThreadSample> GatherSamples(bool with_ttls) {
  std::vector<ThreadSample> samples(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](Shard& s) {
    ThreadSample& out = samples[s.id()];
    ServerThreadState& st = ServerThreadState::current();
    out.stats = st.stats();
    out.clients = st.connections().size();
    out.shard = s.stats();
    out.io = io::Proactor::current()->stats();
    const int64_t now = shard::NowMs();
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      shard::Db& db = s.db(i);
      out.expired_keys += db.expired_keys();
      out.dbs[i].keys = db.size();
      out.dbs[i].expires = db.expires_count();
      // Summing TTLs walks the expiry index, so only when the keyspace section is asked for.
      if (with_ttls && db.expires_count() > 0) out.dbs[i].ttl_sum_ms = db.SumTtlMs(now);
    }
  });
  return samples;
}

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

// The resident set size from /proc/self/statm, or `fallback` if it cannot be read.
size_t ResidentBytes(size_t fallback) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == nullptr) return fallback;
  unsigned long size_pages = 0, resident_pages = 0;
  const int n = fscanf(f, "%lu %lu", &size_pages, &resident_pages);
  fclose(f);
  return n == 2 ? size_t(resident_pages) * size_t(sysconf(_SC_PAGESIZE)) : fallback;
}

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
  kSecShardis = 1 << 13,  // ours: per-thread figures of the shared-nothing runtime
};
constexpr unsigned kSecDefault = kSecServer | kSecClients | kSecMemory | kSecPersistence |
                                 kSecStats | kSecReplication | kSecCpu | kSecModules |
                                 kSecErrorStats | kSecCluster | kSecKeyspace;
constexpr unsigned kSecAll = (kSecShardis << 1) - 1;

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
    {"shardis", kSecShardis},
};

// The text of INFO for the selected sections, with Redis' layout: "# Title" headers, "field:value"
// lines, CRLF line ends and an empty line between sections.
std::string BuildInfo(unsigned sections) {
  std::vector<ThreadSample> samples;
  if (sections & (kSecClients | kSecStats | kSecKeyspace | kSecShardis)) {
    samples = GatherSamples(sections & kSecKeyspace);
  }
  ThreadSample total;
  for (const ThreadSample& t : samples) {
    total.stats.connections_received += t.stats.connections_received;
    total.stats.commands_processed += t.stats.commands_processed;
    total.stats.net_input_bytes += t.stats.net_input_bytes;
    total.stats.net_output_bytes += t.stats.net_output_bytes;
    total.stats.rejected_connections += t.stats.rejected_connections;
    total.stats.protocol_errors += t.stats.protocol_errors;
    total.stats.unknown_commands += t.stats.unknown_commands;
    total.clients += t.clients;
    total.shard.keyspace_hits += t.shard.keyspace_hits;
    total.shard.keyspace_misses += t.shard.keyspace_misses;
    total.shard.evicted_keys += t.shard.evicted_keys;
    total.expired_keys += t.expired_keys;
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      total.dbs[i].keys += t.dbs[i].keys;
      total.dbs[i].expires += t.dbs[i].expires;
      total.dbs[i].ttl_sum_ms += t.dbs[i].ttl_sum_ms;
    }
  }

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
    field("tcp_port", info.port);
    field("server_time_usec", int64_t(tv.tv_sec) * 1000000 + tv.tv_usec);
    field("uptime_in_seconds", uptime_s);
    field("uptime_in_days", uptime_s / 86400);
    field("hz", 10);
    field("configured_hz", 10);
    field("lru_clock", (now_ms / 1000) & ((1 << 24) - 1));
    field("executable", info.executable);
    field("config_file", info.config_file);
    field("io_threads_active", 0);
  }
  if (sections & kSecClients) {
    header("Clients");
    field("connected_clients", total.clients);
    field("cluster_connections", 0);
    field("maxclients", 10000);
    field("client_recent_max_input_buffer", 0);
    field("client_recent_max_output_buffer", 0);
    field("blocked_clients", 0);
    field("tracking_clients", 0);
    field("clients_in_timeout_table", 0);
  }
  if (sections & kSecMemory) {
    // mimalloc is the process allocator: what it has committed is our used memory. Its RSS
    // figure is only an estimate on Linux, so the resident size comes from the kernel.
    size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
    mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
    rss = ResidentBytes(rss);
    // Builds where mimalloc is not the allocator (sanitizers) report no commit: use the RSS.
    if (commit == 0) commit = rss;
    if (peak_commit < commit) peak_commit = commit;
    const uint64_t total_mem = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
    char perc[32], frag[32];
    snprintf(perc, sizeof(perc), "%.2f%%",
             peak_commit ? 100.0 * double(commit) / double(peak_commit) : 0.0);
    snprintf(frag, sizeof(frag), "%.2f", commit ? double(rss) / double(commit) : 0.0);
    const int v = mi_version();
    header("Memory");
    field("used_memory", commit);
    field("used_memory_human", BytesToHuman(commit));
    field("used_memory_rss", rss);
    field("used_memory_rss_human", BytesToHuman(rss));
    field("used_memory_peak", peak_commit);
    field("used_memory_peak_human", BytesToHuman(peak_commit));
    field("used_memory_peak_perc", perc);
    field("total_system_memory", total_mem);
    field("total_system_memory_human", BytesToHuman(total_mem));
    field("maxmemory", 0);
    field("maxmemory_human", "0B");
    field("maxmemory_policy", "noeviction");
    field("mem_fragmentation_ratio", frag);
    field("mem_allocator", core::Concat("mimalloc-", v / 100, ".", (v % 100) / 10, ".", v % 10));
    field("lazyfree_pending_objects", 0);
  }
  if (sections & kSecPersistence) {
    header("Persistence");
    field("loading", 0);
    field("async_loading", 0);
    field("rdb_changes_since_last_save", 0);
    field("rdb_bgsave_in_progress", 0);
    field("rdb_last_save_time", info.start_ms / 1000);
    field("rdb_last_bgsave_status", "ok");
    field("rdb_last_bgsave_time_sec", -1);
    field("rdb_current_bgsave_time_sec", -1);
    field("aof_enabled", 0);
    field("aof_rewrite_in_progress", 0);
    field("aof_rewrite_scheduled", 0);
    field("aof_last_rewrite_time_sec", -1);
    field("aof_current_rewrite_time_sec", -1);
    field("aof_last_bgrewrite_status", "ok");
    field("aof_last_write_status", "ok");
  }
  if (sections & kSecStats) {
    header("Stats");
    field("total_connections_received", total.stats.connections_received);
    field("total_commands_processed", total.stats.commands_processed);
    field("instantaneous_ops_per_sec", 0);
    field("total_net_input_bytes", total.stats.net_input_bytes);
    field("total_net_output_bytes", total.stats.net_output_bytes);
    field("instantaneous_input_kbps", "0.00");
    field("instantaneous_output_kbps", "0.00");
    field("rejected_connections", total.stats.rejected_connections);
    field("sync_full", 0);
    field("sync_partial_ok", 0);
    field("sync_partial_err", 0);
    field("expired_keys", total.expired_keys);
    field("evicted_keys", total.shard.evicted_keys);
    field("keyspace_hits", total.shard.keyspace_hits);
    field("keyspace_misses", total.shard.keyspace_misses);
    field("pubsub_channels", 0);
    field("pubsub_patterns", 0);
    field("latest_fork_usec", 0);
    field("total_forks", 0);
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
  if (sections & kSecCommandStats) header("Commandstats");
  if (sections & kSecErrorStats) header("Errorstats");
  if (sections & kSecLatencyStats) header("Latencystats");
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
  if (sections & kSecShardis) {
    header("Shardis");
    field("threads", samples.size());
    field("protocol_errors", total.stats.protocol_errors);
    field("unknown_commands", total.stats.unknown_commands);
    for (size_t i = 0; i < samples.size(); ++i) {
      const ThreadSample& t = samples[i];
      uint64_t keys = 0;
      for (const auto& d : t.dbs) keys += d.keys;
      core::Append(&out, "thread", i, ":keys=", keys, ",clients=", t.clients,
                   ",commands=", t.stats.commands_processed, ",tasks_run=", t.io.tasks_run,
                   ",loop_polls=", t.io.loop_polls, ",uring_enters=", t.io.enters,
                   ",parks=", t.io.parks, ",wakeups_sent=", t.io.wakeups_sent,
                   ",ring_full_waits=", t.io.ring_full_waits, "\r\n");
    }
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

// ------------------------------------------------------------------------------------------------
// CONFIG GET / SET / RESETSTAT / REWRITE / HELP

// The parameters CONFIG GET knows, with their (fixed, for now) values.
std::vector<std::pair<std::string_view, std::string>> ConfigTable() {
  const ServerInfo& info = Info();
  char cwd[4096];
  std::string dir = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
  return {
      {"appendfsync", "everysec"},
      {"appendonly", "no"},
      {"bind", info.bind},
      {"client-query-buffer-limit", "1073741824"},
      {"cluster-enabled", "no"},
      {"daemonize", "no"},
      {"databases", core::Concat(Shard::kNumDbs)},
      {"dbfilename", "dump.rdb"},
      {"dir", dir},
      {"enable-debug-command", "yes"},
      {"hz", "10"},
      {"io-threads", "1"},
      {"maxclients", "10000"},
      {"maxmemory", "0"},
      {"maxmemory-clients", "0"},
      {"maxmemory-eviction-tenacity", "10"},
      {"maxmemory-policy", "noeviction"},
      {"maxmemory-samples", "5"},
      {"notify-keyspace-events", ""},
      {"port", core::Concat(info.port)},
      {"protected-mode", "no"},
      {"proto-max-bulk-len", "536870912"},
      {"replica-read-only", "yes"},
      {"requirepass", ""},
      {"save", ""},
      {"slowlog-log-slower-than", "10000"},
      {"slowlog-max-len", "128"},
      {"tcp-keepalive", "300"},
      {"timeout", "0"},
  };
}

void ConfigGet(ArgSlice args, ConnContext& ctx) {
  auto table = ConfigTable();
  std::vector<bool> matched(table.size(), false);
  size_t n = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    for (size_t j = 0; j < table.size(); ++j) {
      if (!matched[j] && core::GlobMatch(args[i], table[j].first, /*nocase=*/true)) {
        matched[j] = true;
        ++n;
      }
    }
  }
  ctx.rb.MapHeader(n);
  for (size_t j = 0; j < table.size(); ++j) {
    if (!matched[j]) continue;
    ctx.rb.Bulk(table[j].first);
    ctx.rb.Bulk(table[j].second);
  }
}

// Nothing is settable yet: setting a known parameter to the value it already has succeeds (clients
// and test suites do that), anything else is refused rather than silently ignored.
void ConfigSet(ArgSlice args, ConnContext& ctx) {
  if (args.size() % 2 != 0) return ctx.rb.Error(WrongArgsError("config|set"));
  auto table = ConfigTable();
  for (size_t i = 2; i < args.size(); i += 2) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const auto& p) { return core::EqualsIgnoreCase(p.first, args[i]); });
    if (it == table.end()) {
      return ctx.rb.Error(core::Concat(
          "ERR Unknown option or number of arguments for CONFIG SET - '", args[i], "'"));
    }
    if (!core::EqualsIgnoreCase(it->second, args[i + 1])) {
      return ctx.rb.Error(core::Concat("ERR Unsupported CONFIG parameter: ", args[i]));
    }
  }
  ctx.rb.Ok();
}

void ConfigResetStat(ArgSlice, ConnContext& ctx) {
  shard::shard_set->AwaitAll([](Shard& s) {
    ServerThreadState::current().stats() = ThreadStats{};
    s.stats() = shard::ShardStats{};
  });
  ctx.rb.Ok();
}

void ConfigRewrite(ArgSlice, ConnContext& ctx) {
  ctx.rb.Error("ERR The server is running without a config file");
}

void ConfigHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CONFIG",
            {"GET <pattern> [<pattern> ...]",
             "    Return the parameters matching the glob-like patterns and their values.",
             "SET <directive> <value> [<directive> <value> ...]",
             "    Set configuration directives (only to their current values, for now).",
             "RESETSTAT", "    Reset the statistics reported by INFO.", "REWRITE",
             "    Rewrite the configuration file (there is none)."});
}

void CmdConfig(ArgSlice args, ConnContext& ctx) { DispatchSub("config", args, ctx); }

// ------------------------------------------------------------------------------------------------
// COMMAND [COUNT | INFO | DOCS | LIST | GETKEYS | GETKEYSANDFLAGS | HELP]

// Documentation and key-spec facts that CommandSpec does not carry, for COMMAND INFO and DOCS.
struct CommandDoc {
  std::string_view name;
  std::string_view group;
  std::string_view since;
  std::string_view complexity;
  std::string_view summary;
  std::string_view key_flags;  // flags of the key spec, space separated
  std::string_view tips;
};

constexpr std::string_view kMultiShardSum = "request_policy:multi_shard response_policy:agg_sum";
constexpr std::string_view kAllShardsOk = "request_policy:all_shards response_policy:all_succeeded";

constexpr CommandDoc kDocs[] = {
    // strings
    {"get", "string", "1.0.0", "O(1)", "Returns the string value of a key.", "RO access", ""},
    {"set", "string", "1.0.0", "O(1)",
     "Sets the string value of a key, optionally with an expiry, a condition or the old value.",
     "RW access update variable_flags", ""},
    {"setnx", "string", "1.0.0", "O(1)", "Sets a key only when it does not exist.", "OW insert",
     ""},
    {"setex", "string", "2.0.0", "O(1)", "Sets a key with an expiry in seconds.", "OW update", ""},
    {"psetex", "string", "2.6.0", "O(1)", "Sets a key with an expiry in milliseconds.", "OW update",
     ""},
    {"getset", "string", "1.0.0", "O(1)", "Sets a key and returns its previous value.",
     "RW access update", ""},
    {"getdel", "string", "6.2.0", "O(1)", "Returns the value of a key and deletes it.",
     "RW access delete", ""},
    {"getex", "string", "6.2.0", "O(1)", "Returns the value of a key and changes its expiry.",
     "RW access update", ""},
    {"mget", "string", "1.0.0", "O(N) where N is the number of keys to retrieve.",
     "Returns the values of several keys.", "RO access", "request_policy:multi_shard"},
    {"mset", "string", "1.0.1", "O(N) where N is the number of keys to set.",
     "Sets several keys at once.", "OW update",
     "request_policy:multi_shard response_policy:all_succeeded"},
    {"incr", "string", "1.0.0", "O(1)", "Adds one to the integer value of a key.",
     "RW access update", ""},
    {"decr", "string", "1.0.0", "O(1)", "Subtracts one from the integer value of a key.",
     "RW access update", ""},
    {"incrby", "string", "1.0.0", "O(1)", "Adds an integer to the integer value of a key.",
     "RW access update", ""},
    {"decrby", "string", "1.0.0", "O(1)", "Subtracts an integer from the integer value of a key.",
     "RW access update", ""},
    {"incrbyfloat", "string", "2.6.0", "O(1)", "Adds a float to the numeric value of a key.",
     "RW access update", ""},
    {"append", "string", "2.0.0", "O(1)", "Appends a string to the value of a key.", "RW insert",
     ""},
    {"strlen", "string", "2.2.0", "O(1)", "Returns the length of a string value.", "RO", ""},
    {"getrange", "string", "2.4.0", "O(N) where N is the length of the returned string.",
     "Returns a substring of a string value.", "RO access", ""},
    {"substr", "string", "1.0.0", "O(N) where N is the length of the returned string.",
     "Returns a substring of a string value (old name of GETRANGE).", "RO access", ""},
    {"setrange", "string", "2.2.0", "O(1), not counting the time to grow the string.",
     "Overwrites part of a string value from an offset.", "RW update", ""},
    // keyspace
    {"del", "generic", "1.0.0", "O(N) where N is the number of keys to remove.", "Deletes keys.",
     "RM delete", kMultiShardSum},
    {"unlink", "generic", "4.0.0", "O(1) for each key removed.", "Deletes keys.", "RM delete",
     kMultiShardSum},
    {"exists", "generic", "3.0.3", "O(N) where N is the number of keys to check.",
     "Counts how many of the given keys exist.", "RO", kMultiShardSum},
    {"touch", "generic", "3.2.1", "O(N) where N is the number of keys to touch.",
     "Counts the given keys that exist, updating their access time.", "RO", kMultiShardSum},
    {"expire", "generic", "1.0.0", "O(1)", "Sets the expiry of a key in seconds.", "RW update", ""},
    {"pexpire", "generic", "2.6.0", "O(1)", "Sets the expiry of a key in milliseconds.",
     "RW update", ""},
    {"expireat", "generic", "1.2.0", "O(1)", "Sets the expiry of a key to a Unix time in seconds.",
     "RW update", ""},
    {"pexpireat", "generic", "2.6.0", "O(1)",
     "Sets the expiry of a key to a Unix time in milliseconds.", "RW update", ""},
    {"ttl", "generic", "1.0.0", "O(1)", "Returns the remaining time to live of a key in seconds.",
     "RO access", "nondeterministic_output"},
    {"pttl", "generic", "2.6.0", "O(1)",
     "Returns the remaining time to live of a key in milliseconds.", "RO access",
     "nondeterministic_output"},
    {"expiretime", "generic", "7.0.0", "O(1)",
     "Returns the expiry of a key as a Unix time in seconds.", "RO access", ""},
    {"pexpiretime", "generic", "7.0.0", "O(1)",
     "Returns the expiry of a key as a Unix time in milliseconds.", "RO access", ""},
    {"persist", "generic", "2.2.0", "O(1)", "Removes the expiry of a key.", "RW update", ""},
    {"type", "generic", "1.0.0", "O(1)", "Returns the type of the value stored at a key.", "RO",
     ""},
    {"keys", "generic", "1.0.0", "O(N) with N the number of keys in the database.",
     "Returns the keys matching a glob-style pattern.", "",
     "request_policy:all_shards nondeterministic_output_order"},
    {"wait", "generic", "3.0.0", "O(1)",
     "Waits for writes to be acknowledged by replicas (there are none).", "",
     "request_policy:all_shards response_policy:agg_min"},
    // server
    {"dbsize", "server", "1.0.0", "O(1)", "Returns the number of keys in the database.", "",
     "request_policy:all_shards response_policy:agg_sum"},
    {"flushdb", "server", "1.0.0", "O(N) where N is the number of keys in the database.",
     "Removes all keys from the current database.", "", kAllShardsOk},
    {"flushall", "server", "1.0.0", "O(N) where N is the total number of keys.",
     "Removes all keys from all databases.", "", kAllShardsOk},
    {"info", "server", "1.0.0", "O(1)", "Returns information and statistics about the server.", "",
     "nondeterministic_output request_policy:all_shards response_policy:special"},
    {"config", "server", "2.0.0", "Depends on subcommand.", "Commands about configuration.", "",
     ""},
    {"command", "server", "2.8.13", "O(N) where N is the total number of commands.",
     "Returns details about all commands.", "", "nondeterministic_output_order"},
    {"debug", "server", "1.0.0", "Depends on subcommand.", "Commands for debugging and testing.",
     "", ""},
    {"time", "server", "2.6.0", "O(1)", "Returns the server time.", "", "nondeterministic_output"},
    // connection
    {"client", "connection", "2.4.0", "Depends on subcommand.",
     "Commands about client connections.", "", ""},
    {"ping", "connection", "1.0.0", "O(1)", "Returns the server's liveliness response.", "", ""},
    {"echo", "connection", "1.0.0", "O(1)", "Returns the given string.", "", ""},
    {"quit", "connection", "1.0.0", "O(1)", "Closes the connection.", "", ""},
    {"select", "connection", "1.0.0", "O(1)", "Changes the selected database.", "", ""},
    {"hello", "connection", "6.0.0", "O(1)", "Handshakes with the server (protocol version).", "",
     ""},
};

const CommandDoc* FindDoc(std::string_view name) {
  for (const CommandDoc& d : kDocs) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// Splits a space-separated list (no allocation beyond the vector).
std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void ReplyFlags(core::ReplyBuilder& rb, uint32_t flags) {
  static constexpr std::pair<uint32_t, std::string_view> kNames[] = {
      {kWrite, "write"},   {kReadOnly, "readonly"}, {kDenyOom, "denyoom"}, {kAdmin, "admin"},
      {kPubSub, "pubsub"}, {kNoScript, "noscript"}, {kLoading, "loading"}, {kStale, "stale"},
      {kFast, "fast"},     {kNoAuth, "no_auth"},
  };
  size_t n = 0;
  for (const auto& [bit, name] : kNames) n += (flags & bit) ? 1 : 0;
  rb.SetHeader(n);
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) rb.SimpleString(name);
  }
}

void ReplyCategories(core::ReplyBuilder& rb, std::string_view acl) {
  std::vector<std::string_view> cats = Words(acl);
  rb.SetHeader(cats.size());
  for (std::string_view c : cats) rb.SimpleString(core::Concat("@", c));
}

void ReplyTips(core::ReplyBuilder& rb, std::string_view tips) {
  std::vector<std::string_view> words = Words(tips);
  rb.SetHeader(words.size());
  for (std::string_view t : words) rb.Bulk(t);
}

// One COMMAND INFO entry of a subcommand.
void ReplySubInfo(core::ReplyBuilder& rb, std::string_view container, const SubCommand& sub) {
  rb.ArrayHeader(10);
  rb.Bulk(core::Concat(container, "|", sub.name));
  rb.Integer(sub.arity);
  ReplyFlags(rb, sub.flags);
  rb.Integer(0);
  rb.Integer(0);
  rb.Integer(0);
  ReplyCategories(rb, sub.acl_categories);
  ReplyTips(rb, sub.tips);
  rb.SetHeader(0);  // key specs
  rb.SetHeader(0);  // subcommands
}

// One COMMAND INFO entry: [name, arity, flags, first key, last key, step, categories, tips,
// key specs, subcommands], as Redis 7.
void ReplyCommandInfo(core::ReplyBuilder& rb, const CommandSpec& spec) {
  const CommandDoc* doc = FindDoc(spec.name);
  rb.ArrayHeader(10);
  rb.Bulk(spec.name);
  rb.Integer(spec.arity);
  ReplyFlags(rb, spec.flags);
  rb.Integer(spec.first_key);
  rb.Integer(spec.last_key);
  rb.Integer(spec.key_step);
  ReplyCategories(rb, spec.acl_categories);
  ReplyTips(rb, doc != nullptr ? doc->tips : "");
  if (spec.first_key > 0) {
    // The legacy key range as one key spec: begin at first_key, range to last_key.
    std::string_view key_flags = doc != nullptr && !doc->key_flags.empty() ? doc->key_flags
                                 : (spec.flags & kWrite)                   ? "RW update"
                                                                           : "RO access";
    std::vector<std::string_view> kf = Words(key_flags);
    rb.SetHeader(1);
    rb.MapHeader(3);
    rb.Bulk("flags");
    rb.SetHeader(kf.size());
    for (std::string_view f : kf) rb.SimpleString(f);
    rb.Bulk("begin_search");
    rb.MapHeader(2);
    rb.Bulk("type");
    rb.Bulk("index");
    rb.Bulk("spec");
    rb.MapHeader(1);
    rb.Bulk("index");
    rb.Integer(spec.first_key);
    rb.Bulk("find_keys");
    rb.MapHeader(2);
    rb.Bulk("type");
    rb.Bulk("range");
    rb.Bulk("spec");
    rb.MapHeader(3);
    rb.Bulk("lastkey");
    rb.Integer(spec.last_key < 0 ? spec.last_key : spec.last_key - spec.first_key);
    rb.Bulk("keystep");
    rb.Integer(spec.key_step);
    rb.Bulk("limit");
    rb.Integer(0);
  } else {
    rb.SetHeader(0);
  }
  const Container* c = FindContainer(spec.name);
  if (c == nullptr) {
    rb.SetHeader(0);
    return;
  }
  rb.SetHeader(c->subs.size());
  for (const SubCommand& sub : c->subs) ReplySubInfo(rb, c->name, sub);
}

// Looks up "name" or "container|sub" for COMMAND INFO/DOCS. Returns false if unknown.
bool ReplyInfoByName(core::ReplyBuilder& rb, std::string_view name) {
  size_t bar = name.find('|');
  if (bar == std::string_view::npos) {
    const CommandSpec* spec = Registry().Find(name);
    if (spec == nullptr) return false;
    ReplyCommandInfo(rb, *spec);
    return true;
  }
  const Container* c = FindContainer(name.substr(0, bar));
  const SubCommand* sub = c == nullptr ? nullptr : FindSub(*c, name.substr(bar + 1));
  if (sub == nullptr) return false;
  ReplySubInfo(rb, c->name, *sub);
  return true;
}

// The names of every command, sorted (the registry is a hash map).
std::vector<const CommandSpec*> AllSpecs() {
  std::vector<const CommandSpec*> specs;
  for (const auto& [name, spec] : Registry().all()) specs.push_back(&spec);
  std::sort(specs.begin(), specs.end(),
            [](const CommandSpec* a, const CommandSpec* b) { return a->name < b->name; });
  return specs;
}

void CommandNoArgs(ArgSlice, ConnContext& ctx) {
  std::vector<const CommandSpec*> specs = AllSpecs();
  ctx.rb.ArrayHeader(specs.size());
  for (const CommandSpec* spec : specs) ReplyCommandInfo(ctx.rb, *spec);
}

void CommandCount(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(int64_t(Registry().all().size())); }

void CommandInfo(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 2) return CommandNoArgs(args, ctx);
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) {
    if (!ReplyInfoByName(ctx.rb, core::ToLower(args[i]))) ctx.rb.Null();
  }
}

void ReplyDoc(core::ReplyBuilder& rb, std::string_view name) {
  const CommandDoc* doc = FindDoc(name);
  const Container* c = FindContainer(name);
  rb.MapHeader(4 + (c != nullptr ? 1 : 0));
  rb.Bulk("summary");
  rb.Bulk(doc != nullptr ? doc->summary : "");
  rb.Bulk("since");
  rb.Bulk(doc != nullptr ? doc->since : "0.1.0");
  rb.Bulk("group");
  rb.Bulk(doc != nullptr ? doc->group : "generic");
  rb.Bulk("complexity");
  rb.Bulk(doc != nullptr ? doc->complexity : "");
  if (c == nullptr) return;
  rb.Bulk("subcommands");
  rb.MapHeader(c->subs.size());
  for (const SubCommand& sub : c->subs) {
    rb.Bulk(core::Concat(c->name, "|", sub.name));
    rb.MapHeader(3);
    rb.Bulk("summary");
    rb.Bulk(sub.summary);
    rb.Bulk("since");
    rb.Bulk(sub.since);
    rb.Bulk("group");
    rb.Bulk(doc != nullptr ? doc->group : "server");
  }
}

void CommandDocs(ArgSlice args, ConnContext& ctx) {
  std::vector<std::string> names;
  if (args.size() == 2) {
    for (const CommandSpec* spec : AllSpecs()) names.emplace_back(spec->name);
  } else {
    for (size_t i = 2; i < args.size(); ++i) {
      std::string name = core::ToLower(args[i]);
      if (Registry().Find(name) != nullptr) names.push_back(std::move(name));
    }
  }
  ctx.rb.MapHeader(names.size());
  for (const std::string& name : names) {
    ctx.rb.Bulk(name);
    ReplyDoc(ctx.rb, name);
  }
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
void CommandList(ArgSlice args, ConnContext& ctx) {
  enum class Filter { kNone, kModule, kAclCat, kPattern } filter = Filter::kNone;
  std::string_view arg;
  if (args.size() == 5 && core::EqualsIgnoreCase(args[2], "filterby")) {
    arg = args[4];
    if (core::EqualsIgnoreCase(args[3], "module")) {
      filter = Filter::kModule;
    } else if (core::EqualsIgnoreCase(args[3], "aclcat")) {
      filter = Filter::kAclCat;
    } else if (core::EqualsIgnoreCase(args[3], "pattern")) {
      filter = Filter::kPattern;
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
  } else if (args.size() != 2) {
    return ctx.rb.Error(kSyntaxErr);
  }
  auto keep = [&](std::string_view name, std::string_view acl) {
    switch (filter) {
      case Filter::kNone:
        return true;
      case Filter::kModule:
        return false;  // no modules
      case Filter::kAclCat:
        for (std::string_view c : Words(acl)) {
          if (core::EqualsIgnoreCase(c, arg)) return true;
        }
        return false;
      case Filter::kPattern:
        return core::GlobMatch(arg, name, /*nocase=*/true);
    }
    return false;
  };
  std::vector<std::string> names;
  for (const CommandSpec* spec : AllSpecs()) {
    if (keep(spec->name, spec->acl_categories)) names.emplace_back(spec->name);
    if (const Container* c = FindContainer(spec->name)) {
      for (const SubCommand& sub : c->subs) {
        std::string full = core::Concat(c->name, "|", sub.name);
        if (keep(full, sub.acl_categories)) names.push_back(std::move(full));
      }
    }
  }
  ctx.rb.ArrayHeader(names.size());
  for (const std::string& n : names) ctx.rb.Bulk(n);
}

// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg ...]: the keys of a command line, from the
// command's key range.
template <bool kWithFlags>
void CommandGetKeys(ArgSlice args, ConnContext& ctx) {
  ArgSlice cmd = args.subspan(2);
  const CommandSpec* spec = Registry().Find(cmd[0]);
  if (spec == nullptr) return ctx.rb.Error("ERR Invalid command specified");
  if (!ArityOk(spec->arity, cmd.size())) {
    return ctx.rb.Error("ERR Invalid number of arguments specified for command");
  }
  if (spec->first_key <= 0) return ctx.rb.Error("ERR The command has no key arguments");
  const int argc = int(cmd.size());
  const int last = spec->last_key < 0 ? argc + spec->last_key : spec->last_key;
  std::vector<std::string_view> keys;
  for (int i = spec->first_key; i <= last && i < argc; i += std::max(spec->key_step, 1)) {
    keys.push_back(cmd[i]);
  }
  if (!kWithFlags) return ctx.rb.BulkArray(keys);
  const CommandDoc* doc = FindDoc(spec->name);
  std::vector<std::string_view> kf =
      Words(doc != nullptr && !doc->key_flags.empty() ? doc->key_flags
            : (spec->flags & kWrite)                  ? "RW update"
                                                      : "RO access");
  ctx.rb.ArrayHeader(keys.size());
  for (std::string_view key : keys) {
    ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk(key);
    ctx.rb.SetHeader(kf.size());
    for (std::string_view f : kf) ctx.rb.SimpleString(f);
  }
}

void CommandHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "COMMAND",
            {"(no subcommand)", "    Return details about all commands.", "COUNT",
             "    Return the number of commands.", "LIST [FILTERBY (MODULE|ACLCAT|PATTERN) <arg>]",
             "    Return the names of all commands, or of those matching a filter.",
             "INFO [<command-name> ...]", "    Return details about the given commands, or all.",
             "DOCS [<command-name> ...]",
             "    Return documentation about the given commands, or all.", "GETKEYS <full-command>",
             "    Return the keys of a full command line.", "GETKEYSANDFLAGS <full-command>",
             "    Return the keys of a full command line and their access flags."});
}

void CmdCommand(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 1) {
    ctx.conn.last_command = "command";
    return CommandNoArgs(args, ctx);
  }
  DispatchSub("command", args, ctx);
}

// ------------------------------------------------------------------------------------------------
// CLIENT ID / GETNAME / SETNAME / INFO / LIST / SETINFO / NO-EVICT / NO-TOUCH / GETREDIR / HELP

// A name or library attribute may only hold printable ASCII without spaces, as in Redis.
bool ValidClientAttr(std::string_view s) {
  for (char c : s) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// One CLIENT LIST / CLIENT INFO line, with Redis 7's fields (the buffer figures are not tracked).
// Call on the client's own thread.
void AppendClientLine(std::string* out, const ConnectionState& c, int64_t now_ms) {
  core::Append(out, "id=", c.id, " addr=", c.addr, " laddr=", c.laddr, " fd=", c.fd,
               " name=", c.name, " age=", (now_ms - c.created_ms) / 1000,
               " idle=", (now_ms - c.last_interaction_ms) / 1000, " flags=N db=", c.db,
               " sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0");
  core::Append(out, " rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=",
               c.last_command.empty() ? std::string_view("NULL") : c.last_command,
               " user=default redir=-1 resp=", c.resp3 ? 3 : 2, " lib-name=", c.lib_name,
               " lib-ver=", c.lib_ver, "\n");
}

void ReplyText(core::ReplyBuilder& rb, std::string_view text) {
  if (rb.resp3()) {
    rb.Verbatim(text, "txt");
  } else {
    rb.Bulk(text);
  }
}

void ClientId(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(int64_t(ctx.conn.id)); }

void ClientGetName(ArgSlice, ConnContext& ctx) {
  if (ctx.conn.name.empty()) return ctx.rb.Null();
  ctx.rb.Bulk(ctx.conn.name);
}

void ClientSetName(ArgSlice args, ConnContext& ctx) {
  if (!ValidClientAttr(args[2])) {
    return ctx.rb.Error("ERR Client names cannot contain spaces, newlines or special characters.");
  }
  ctx.conn.name.assign(args[2].data(), args[2].size());
  ctx.rb.Ok();
}

void ClientInfo(ArgSlice, ConnContext& ctx) {
  std::string line;
  AppendClientLine(&line, ctx.conn, shard::NowMs());
  ReplyText(ctx.rb, line);
}

// CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id [id ...]]
void ClientList(ArgSlice args, ConnContext& ctx) {
  // As Redis 7.0: either one TYPE filter or one ID list, not both.
  bool none = false;  // a type no client has here (master, replica, pubsub)
  std::vector<int64_t> ids;
  if (args.size() == 4 && core::EqualsIgnoreCase(args[2], "type")) {
    std::string_view type = args[3];
    if (core::EqualsIgnoreCase(type, "master") || core::EqualsIgnoreCase(type, "replica") ||
        core::EqualsIgnoreCase(type, "slave") || core::EqualsIgnoreCase(type, "pubsub")) {
      none = true;
    } else if (!core::EqualsIgnoreCase(type, "normal")) {
      return ctx.rb.Error(core::Concat("ERR Unknown client type '", type, "'"));
    }
  } else if (args.size() >= 4 && core::EqualsIgnoreCase(args[2], "id")) {
    for (size_t i = 3; i < args.size(); ++i) {
      int64_t id;
      if (!core::ParseInt64(args[i], &id)) return ctx.rb.Error("ERR Invalid client ID");
      ids.push_back(id);
    }
  } else if (args.size() != 2) {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (none) return ReplyText(ctx.rb, "");

  // Every thread formats its own clients; the lines are then ordered by id, like Redis' list.
  std::vector<std::vector<std::pair<uint64_t, std::string>>> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](Shard& s) {
    auto& out = per_thread[s.id()];
    const int64_t now = shard::NowMs();
    for (const ConnectionState* c : ServerThreadState::current().connections()) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), int64_t(c->id)) == ids.end()) continue;
      std::string line;
      AppendClientLine(&line, *c, now);
      out.emplace_back(c->id, std::move(line));
    }
  });
  std::vector<std::pair<uint64_t, std::string>> lines;
  for (auto& v : per_thread) {
    for (auto& l : v) lines.push_back(std::move(l));
  }
  std::sort(lines.begin(), lines.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string text;
  for (const auto& l : lines) text += l.second;
  ReplyText(ctx.rb, text);
}

// CLIENT SETINFO LIB-NAME name | LIB-VER version (Redis 7.2; clients send it on connect).
void ClientSetInfo(ArgSlice args, ConnContext& ctx) {
  std::string_view attr = args[2], value = args[3];
  std::string* target;
  if (core::EqualsIgnoreCase(attr, "lib-name")) {
    target = &ctx.conn.lib_name;
  } else if (core::EqualsIgnoreCase(attr, "lib-ver")) {
    target = &ctx.conn.lib_ver;
  } else {
    return ctx.rb.Error(core::Concat("ERR Unrecognized option '", attr, "'"));
  }
  if (!ValidClientAttr(value)) {
    return ctx.rb.Error(core::Concat("ERR ", core::ToLower(attr),
                                     " cannot contain spaces, newlines or special characters."));
  }
  target->assign(value.data(), value.size());
  ctx.rb.Ok();
}

// CLIENT NO-EVICT / NO-TOUCH ON|OFF: accepted; nothing is evicted and LRU is not tracked yet.
void ClientOnOff(ArgSlice args, ConnContext& ctx) {
  if (!core::EqualsIgnoreCase(args[2], "on") && !core::EqualsIgnoreCase(args[2], "off")) {
    return ctx.rb.Error(kSyntaxErr);
  }
  ctx.rb.Ok();
}

void ClientGetRedir(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(-1); }

void ClientHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CLIENT",
            {"GETNAME", "    Return the name of the current connection.", "GETREDIR",
             "    Return the client ID tracking redirects to (-1: none).", "ID",
             "    Return the ID of the current connection.", "INFO",
             "    Return information about the current connection.",
             "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
             "    Return information about client connections.", "SETNAME <name>",
             "    Assign a name to the current connection.", "SETINFO (LIB-NAME|LIB-VER) <value>",
             "    Record the client library's name or version.", "NO-EVICT (ON|OFF)",
             "    Protect the current connection from eviction.", "NO-TOUCH (ON|OFF)",
             "    Do not alter the last access time of keys this connection reads."});
}

void CmdClient(ArgSlice args, ConnContext& ctx) { DispatchSub("client", args, ctx); }

// ------------------------------------------------------------------------------------------------
// DEBUG POPULATE / SLEEP / HELP

// Redis' getPositiveLongFromObjectOrReply as DEBUG POPULATE uses it.
bool ParseNonNegative(std::string_view s, int64_t* out) {
  return core::ParseInt64(s, out) && *out >= 0;
}

// DEBUG POPULATE count [prefix] [size]: creates "<prefix>:<i>" = "value:<i>" for i in [0, count),
// skipping keys that exist. Every shard walks the whole range in its own fiber, in parallel, and
// keeps the keys it owns; it yields now and then so that its clients are still served.
void DebugPopulate(ArgSlice args, ConnContext& ctx) {
  int64_t count, size = 0;
  if (!ParseNonNegative(args[2], &count) ||
      (args.size() == 5 && !ParseNonNegative(args[4], &size))) {
    return ctx.rb.Error("ERR value is out of range, must be positive");
  }
  const std::string prefix(args.size() >= 4 ? args[3] : std::string_view("key"));
  const int db_index = ctx.conn.db;
  constexpr int64_t kYieldEvery = 4096;
  constexpr size_t kMaxKeyLen = 127;  // Redis formats into a 128-byte buffer
  shard::shard_set->AwaitAllInFibers([&](Shard& s) {
    shard::Db& db = s.db(db_index);
    const unsigned sid = s.id();
    std::string key = prefix + ":";
    const size_t base = key.size();
    std::string value = "value:";
    char num[core::kInt64BufSize];
    int64_t now = shard::NowMs();
    for (int64_t j = 0; j < count; ++j) {
      if (j % kYieldEvery == kYieldEvery - 1) {
        boost::this_fiber::yield();
        now = shard::NowMs();
      }
      std::string_view digits(num, core::FormatInt64(j, num));
      key.resize(base);
      key.append(digits);
      if (key.size() > kMaxKeyLen) key.resize(kMaxKeyLen);
      if (shard::shard_set->ShardOf(key) != sid) continue;
      if (db.Find(key, now) != nullptr) continue;
      value.resize(6);
      value.append(digits);
      // With a size, the value is cut to it or padded with zero bytes.
      if (size > 0) value.resize(size_t(size), '\0');
      bool inserted;
      shard::Entry* e = db.FindOrInsert(key, now, &inserted);
      e->type = shard::ObjType::kString;
      e->value = value;
    }
  });
  ctx.rb.Ok();
}

// DEBUG SLEEP seconds: sleeps this client only (the threads keep serving everyone else).
void DebugSleep(ArgSlice args, ConnContext& ctx) {
  const double seconds = strtod(std::string(args[2]).c_str(), nullptr);
  if (seconds > 0) {
    io::Proactor::current()->SleepFor(std::chrono::nanoseconds(int64_t(seconds * 1e9)));
  }
  ctx.rb.Ok();
}

void DebugHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "DEBUG",
            {"POPULATE <count> [<prefix>] [<size>]",
             "    Create <count> string keys named <prefix>:<num> ('key' by default) holding",
             "    value:<num>, cut or zero-padded to <size> bytes when given.", "SLEEP <seconds>",
             "    Sleep this connection for <seconds>. Decimals allowed."});
}

void CmdDebug(ArgSlice args, ConnContext& ctx) {
  std::string_view sub = args[1];
  if (core::EqualsIgnoreCase(sub, "populate") && args.size() >= 3 && args.size() <= 5) {
    return DebugPopulate(args, ctx);
  }
  if (core::EqualsIgnoreCase(sub, "sleep") && args.size() == 3) return DebugSleep(args, ctx);
  if (core::EqualsIgnoreCase(sub, "help") && args.size() == 2) return DebugHelp(args, ctx);
  ctx.rb.Error(core::Concat("ERR unknown subcommand or wrong number of arguments for '",
                            sub.substr(0, 128), "'. Try DEBUG HELP."));
}

// ------------------------------------------------------------------------------------------------
// WAIT, TIME

// WAIT numreplicas timeout: there are no replicas, so the answer is 0 - after the timeout when
// replicas were asked for, as Redis does (a timeout of 0, "forever", answers at once).
void CmdWait(ArgSlice args, ConnContext& ctx) {
  int64_t replicas, timeout_ms;
  if (!core::ParseInt64(args[1], &replicas)) return ctx.rb.Error(kNotIntegerErr);
  if (!core::ParseInt64(args[2], &timeout_ms)) {
    return ctx.rb.Error("ERR timeout is not an integer or out of range");
  }
  if (timeout_ms < 0) return ctx.rb.Error("ERR timeout is negative");
  if (replicas > 0 && timeout_ms > 0) {
    io::Proactor::current()->SleepFor(std::chrono::milliseconds(timeout_ms));
  }
  ctx.rb.Integer(0);
}

void CmdTime(ArgSlice, ConnContext& ctx) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  char sec[core::kInt64BufSize], usec[core::kInt64BufSize];
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(std::string_view(sec, core::FormatInt64(tv.tv_sec, sec)));
  ctx.rb.Bulk(std::string_view(usec, core::FormatInt64(tv.tv_usec, usec)));
}

// ------------------------------------------------------------------------------------------------
// Subcommand tables.

constexpr uint32_t kAdminSub = kAdmin | kNoScript | kLoading | kStale;
constexpr uint32_t kConnSub = kNoScript | kLoading | kStale;
constexpr std::string_view kAdminAcl = "admin slow dangerous";
constexpr std::string_view kAdminConnAcl = "admin slow dangerous connection";

constexpr SubCommand kConfigSubs[] = {
    {"get", -3, kAdminSub, kAdminAcl, "", "2.0.0", "Returns the values of parameters.", ConfigGet},
    {"set", -4, kAdminSub, kAdminAcl, "request_policy:all_nodes response_policy:all_succeeded",
     "2.0.0", "Sets parameters.", ConfigSet},
    {"resetstat", 2, kAdminSub, kAdminAcl, "", "2.0.0", "Resets the server's statistics.",
     ConfigResetStat},
    {"rewrite", 2, kAdminSub, kAdminAcl, "", "2.8.0", "Rewrites the configuration file.",
     ConfigRewrite},
    {"help", 2, kLoading | kStale, "slow", "", "5.0.0", "Returns helpful text about subcommands.",
     ConfigHelp},
};

constexpr SubCommand kClientSubs[] = {
    {"id", 2, kConnSub, "slow connection", "", "5.0.0", "Returns the connection's unique ID.",
     ClientId},
    {"getname", 2, kConnSub, "slow connection", "", "2.6.9", "Returns the connection's name.",
     ClientGetName},
    {"setname", 3, kConnSub, "slow connection", "", "2.6.9", "Sets the connection's name.",
     ClientSetName},
    {"setinfo", 4, kConnSub, "slow connection", "", "7.2.0",
     "Sets information about the client library.", ClientSetInfo},
    {"info", 2, kConnSub, "slow connection", "nondeterministic_output", "6.2.0",
     "Returns information about the connection.", ClientInfo},
    {"list", -2, kAdminSub, kAdminConnAcl, "nondeterministic_output", "2.4.0",
     "Lists open connections.", ClientList},
    {"no-evict", 3, kAdminSub, kAdminConnAcl, "", "7.0.0",
     "Sets the client eviction mode of the connection.", ClientOnOff},
    {"no-touch", 3, kConnSub, "slow connection", "", "7.2.0",
     "Controls whether the connection's commands alter the last access time of keys.", ClientOnOff},
    {"getredir", 2, kConnSub, "slow connection", "", "6.0.0",
     "Returns the client ID tracking notifications are redirected to.", ClientGetRedir},
    {"help", 2, kLoading | kStale, "slow connection", "", "5.0.0",
     "Returns helpful text about subcommands.", ClientHelp},
};

constexpr SubCommand kCommandSubs[] = {
    {"count", 2, kLoading | kStale, "slow connection", "", "2.8.13",
     "Returns the number of commands.", CommandCount},
    {"info", -2, kLoading | kStale, "slow connection", "nondeterministic_output_order", "2.8.13",
     "Returns information about commands.", CommandInfo},
    {"docs", -2, kLoading | kStale, "slow connection", "nondeterministic_output_order", "7.0.0",
     "Returns documentary information about commands.", CommandDocs},
    {"list", -2, kLoading | kStale, "slow connection", "nondeterministic_output_order", "7.0.0",
     "Returns a list of command names.", CommandList},
    {"getkeys", -4, kLoading | kStale, "slow connection", "", "2.8.13",
     "Extracts the key names from an arbitrary command.", CommandGetKeys<false>},
    {"getkeysandflags", -4, kLoading | kStale, "slow connection", "", "7.0.0",
     "Extracts the key names and access flags from an arbitrary command.", CommandGetKeys<true>},
    {"help", 2, kLoading | kStale, "slow connection", "", "5.0.0",
     "Returns helpful text about subcommands.", CommandHelp},
};

constexpr Container kContainers[] = {
    {"config", kConfigSubs},
    {"client", kClientSubs},
    {"command", kCommandSubs},
};

std::span<const Container> Containers() { return kContainers; }

}  // namespace

void RegisterServerFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kF = kFast;
  auto conn_cmd = [&](std::string_view name, int arity, uint32_t flags, std::string_view acl,
                      ConnHandler h) {
    r->Register({.name = name,
                 .arity = arity,
                 .flags = flags,
                 .first_key = 0,
                 .last_key = 0,
                 .key_step = 0,
                 .acl_categories = acl,
                 .on_conn = h});
  };
  conn_cmd("dbsize", 1, kR | kF, "keyspace read fast", CmdDbSize);
  conn_cmd("flushdb", -1, kW, "keyspace write slow dangerous", CmdFlush<false>);
  conn_cmd("flushall", -1, kW, "keyspace write slow dangerous", CmdFlush<true>);
  conn_cmd("info", -1, kLoading | kStale, "slow dangerous", CmdInfo);
  conn_cmd("config", -2, 0, "slow", CmdConfig);
  conn_cmd("command", -1, kLoading | kStale, "slow connection", CmdCommand);
  conn_cmd("client", -2, 0, "slow", CmdClient);
  conn_cmd("debug", -2, kAdmin | kNoScript | kLoading | kStale, "admin slow dangerous", CmdDebug);
  conn_cmd("wait", 3, kNoScript, "slow connection", CmdWait);
  conn_cmd("time", 1, kLoading | kStale | kF, "fast", CmdTime);
}

}  // namespace shardis::server

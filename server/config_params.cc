// Every CONFIG parameter, one line each (see config_registry.h). Mutable ones read and write
// runtime state that is safe across threads; read-only ones show a fixed value or a start-up flag.
#include <gflags/gflags.h>
#include <unistd.h>

#include <string>

#include "core/string_util.h"
#include "server/admission.h"
#include "server/auth.h"
#include "server/client_buffers.h"
#include "server/config_registry.h"
#include "server/fd_limit.h"
#include "server/idle_timeout.h"
#include "server/latency_monitor.h"
#include "server/slowlog.h"
#include "server/tcp_keepalive.h"
#include "shard/memory_limit.h"
#include "shard/shard.h"

DEFINE_string(maxmemory, "",
              "memory limit for data, in bytes or with Redis units (100mb, 1gb); 0 = none; "
              "unset = 80% of the cgroup memory limit, if any");
DEFINE_string(maxmemory_policy, "noeviction",
              "what a write does over maxmemory: noeviction, allkeys-random, volatile-random, "
              "volatile-ttl, allkeys-lru/lfu, volatile-lru/lfu (see README)");

namespace shardis::server {

namespace {

using shard::MemoryLimit;

std::string Cwd() {
  char cwd[4096];
  return getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
}

}  // namespace

void RegisterConfigParams(ConfigRegistry& r) {
  // --- Runtime-settable.
  r.Add(MutableMemory(
      "maxmemory", "maxmemory", [] { return int64_t(MemoryLimit::maxmemory()); },
      [](int64_t v) { MemoryLimit::set_maxmemory(uint64_t(v)); }));
  r.Add(MutableEnum(
      "maxmemory-policy", "maxmemory_policy", shard::kEvictionPolicyNames,
      [] { return std::string(shard::EvictionPolicyName(MemoryLimit::policy())); },
      [](std::string_view v) { MemoryLimit::set_policy(*shard::ParseEvictionPolicy(v)); }));
  r.Add(MutableInt(
      "maxmemory-samples", "", 1, INT32_MAX, [] { return int64_t(MemoryLimit::samples()); },
      [](int64_t v) { MemoryLimit::set_samples(unsigned(v)); }));

  r.Add(MutableInt(
      "slowlog-log-slower-than", "slowlog_log_slower_than", -1, INT64_MAX,
      [] { return SlowlogLogSlowerThan(); }, [](int64_t v) { SetSlowlogLogSlowerThan(v); }));
  r.Add(MutableInt(
      "slowlog-max-len", "slowlog_max_len", 0, INT64_MAX, [] { return int64_t(SlowlogMaxLen()); },
      [](int64_t v) { SetSlowlogMaxLen(uint64_t(v)); }));
  r.Add(MutableInt(
      "latency-monitor-threshold", "latency_monitor_threshold", 0, INT64_MAX,
      [] { return LatencyMonitorThreshold(); }, [](int64_t v) { SetLatencyMonitorThreshold(v); }));

  r.Add(MutableString(
      "requirepass", "requirepass", [] { return RequirePass(); },
      [](std::string_view v) { SetRequirePass(v); }));
  ConfigParam maxclients = MutableInt(
      "maxclients", "maxclients", 1, INT64_MAX, [] { return int64_t(MaxClients()); },
      [](int64_t v) { SetMaxClients(size_t(v)); });
  maxclients.check = [](const ConfigValue& v) { return CheckMaxClients(size_t(v.number)); };
  r.Add(std::move(maxclients));
  r.Add(MutableInt(
      "tcp-keepalive", "tcp_keepalive", 0, INT32_MAX, [] { return TcpKeepAlive(); },
      [](int64_t v) { SetTcpKeepAlive(v); }));
  r.Add(MutableInt(
      "timeout", "timeout", 0, INT32_MAX, [] { return IdleTimeout(); },
      [](int64_t v) { SetIdleTimeout(v); }));
  r.Add(MutableBool(
      "protected-mode", "protected_mode", [] { return ProtectedMode(); },
      [](bool v) { SetProtectedMode(v); }));

  // Client buffers (client_buffers.h); Redis' minimum for both sizes is 1mb.
  r.Add(MutableMemoryAtLeast(
      "client-query-buffer-limit", "client_query_buffer_limit", 1 << 20,
      [] { return int64_t(QueryBufferLimit()); }, [](int64_t v) { SetQueryBufferLimit(size_t(v)); }));
  r.Add(MutableMemoryAtLeast(
      "proto-max-bulk-len", "proto_max_bulk_len", 1 << 20, [] { return ProtoMaxBulkLen(); },
      [](int64_t v) { SetProtoMaxBulkLen(v); }));
  {
    ConfigParam p = MutableString(
        "client-output-buffer-limit", "client_output_buffer_limit", FormatOutputBufferLimits,
        [](std::string_view v) { SetOutputBufferLimits(v); });
    p.validate = ParseOutputBufferLimits;
    r.Add(std::move(p));
  }

  // --- Start-up flags, read-only at runtime.
  r.Add(ReadOnlyFlag("port", "port", ConfigType::kInt));
  r.Add(ReadOnlyFlag("bind", "bind", ConfigType::kString));

  // --- Redis parameters with a fixed value in shardis (clients and tools read them).
  r.Add(ReadOnly("appendfsync", "everysec"));
  r.Add(ReadOnly("appendonly", "no"));
  r.Add(ReadOnly("cluster-enabled", "no"));
  r.Add(ReadOnly("daemonize", "no"));
  r.Add(ReadOnly("databases", core::Concat(shard::Shard::kNumDbs)));
  r.Add(ReadOnly("dbfilename", "dump.rdb"));
  r.Add(ReadOnlyFn("dir", Cwd));
  r.Add(ReadOnly("enable-debug-command", "yes"));
  r.Add(ReadOnly("hz", "10"));
  r.Add(ReadOnly("io-threads", "1"));
  r.Add(ReadOnly("maxmemory-clients", "0"));
  r.Add(ReadOnly("maxmemory-eviction-tenacity", "10"));
  r.Add(ReadOnly("notify-keyspace-events", ""));
  r.Add(ReadOnly("replica-read-only", "yes"));
  r.Add(ReadOnly("save", ""));
}

}  // namespace shardis::server

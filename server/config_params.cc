// Every CONFIG parameter, one line each (see config_registry.h). Mutable ones read and write
// runtime state that is safe across threads; read-only ones show a fixed value or a start-up flag.
#include <gflags/gflags.h>

#include <string>

#include "core/hash_object.h"
#include "core/hyperloglog.h"
#include "core/list.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/string_util.h"
#include "core/zset.h"
#include "server/acl_user.h"
#include "server/acl_users.h"
#include "server/admission.h"
#include "server/aof.h"
#include "server/auth.h"
#include "server/client_buffers.h"
#include "server/config_registry.h"
#include "server/fd_limit.h"
#include "server/idle_timeout.h"
#include "server/latency_monitor.h"
#include "server/latency_tracking.h"
#include "server/persistence_config.h"
#include "server/resp_listeners.h"
#include "server/script_run.h"
#include "server/slowlog.h"
#include "server/tcp_keepalive.h"
#include "server/tls.h"
#include "shard/defrag.h"
#include "shard/lazy_free.h"
#include "shard/memory_limit.h"
#include "shard/shard.h"
#include "shard/shard_set.h"

DEFINE_string(maxmemory, "",
              "memory limit for data, in bytes or with Redis units (100mb, 1gb); 0 = none; "
              "unset = 80% of the cgroup memory limit, if any");
DEFINE_string(enable_protected_configs, "no",
              "whether CONFIG SET may change dir and dbfilename: no, yes, or local (only from a "
              "loopback client), as Redis' enable-protected-configs");
DEFINE_string(maxmemory_policy, "noeviction",
              "what a write does over maxmemory: noeviction, allkeys-random, volatile-random, "
              "volatile-ttl, allkeys-lru/lfu, volatile-lru/lfu (see README)");

namespace {

bool ValidProtectedConfigs(const char*, const std::string& value) {
  return value == "no" || value == "yes" || value == "local";
}

}  // namespace

DEFINE_validator(enable_protected_configs, ValidProtectedConfigs);

namespace shardis::server {

bool ProtectedConfigAllowed(std::string_view peer_addr) {
  if (FLAGS_enable_protected_configs == "yes") return true;
  if (FLAGS_enable_protected_configs != "local") return false;
  // Redis' islocalClient: the peer's address is exactly 127.0.0.1 or ::1 (addr is "ip:port").
  const std::string_view ip = peer_addr.substr(0, peer_addr.rfind(':'));
  return ip == "127.0.0.1" || ip == "::1";
}

namespace {

using shard::MemoryLimit;

constexpr std::string_view kProtectedConfigChoices[] = {"no", "yes", "local"};
// In AppendFsync's order.
constexpr std::string_view kAppendFsyncChoices[] = {"always", "everysec", "no"};
// In the order of Redis' acl_pubsub_default_enum (its error text lists them so).
constexpr std::string_view kAclPubsubDefaultChoices[] = {"allchannels", "resetchannels"};

// A string parameter whose values `validate` checks.
ConfigParam ValidatedString(std::string_view name, std::string_view flag,
                            std::function<absl::Status(std::string_view)> validate,
                            std::function<std::string()> get,
                            std::function<void(std::string_view)> set) {
  ConfigParam p = MutableString(name, flag, std::move(get), std::move(set));
  p.validate = std::move(validate);
  return p;
}

// The snapshot parameters (persistence_config.h), with Redis 7.0's names, defaults and checks.
void RegisterPersistenceParams(ConfigRegistry& r) {
  ConfigParam dir = ValidatedString("dir", "dir", ValidateDir, Dir, SetDir);
  dir.is_protected = true;
  dir.deny_loading = true;
  r.Add(std::move(dir));
  ConfigParam dbfilename = ValidatedString("dbfilename", "dbfilename", ValidateDbFilename,
                                           RdbFilename, SetRdbFilename);
  dbfilename.is_protected = true;
  r.Add(std::move(dbfilename));
  ConfigParam save = ValidatedString(
      "save", "save", [](std::string_view v) { return ParseSaveRules(v).status(); },
      [] { return FormatSaveRules(SaveRules()); },
      [](std::string_view v) { SetSaveRules(*ParseSaveRules(v)); });
  save.accumulates = true;
  r.Add(std::move(save));

  r.Add(MutableBool("rdbcompression", "rdbcompression", RdbCompression, SetRdbCompression));
  r.Add(ReadOnlyFlag("rdbchecksum", "rdbchecksum", ConfigType::kBool));
  r.Add(MutableBool("stop-writes-on-bgsave-error", "stop_writes_on_bgsave_error",
                    StopWritesOnBgsaveError, SetStopWritesOnBgsaveError));
  r.Add(MutableBool("rdb-save-incremental-fsync", "rdb_save_incremental_fsync",
                    RdbSaveIncrementalFsync, SetRdbSaveIncrementalFsync));
  r.Add(MutableBool("rdb-del-sync-files", "rdb_del_sync_files", RdbDelSyncFiles,
                    SetRdbDelSyncFiles));
  // Redis' hidden test knobs, with its bounds (an int).
  for (ConfigParam knob :
       {MutableInt("rdb-key-save-delay", "rdb_key_save_delay", INT32_MIN, INT32_MAX,
                   RdbKeySaveDelayUs, SetRdbKeySaveDelayUs),
        MutableInt("key-load-delay", "key_load_delay", INT32_MIN, INT32_MAX, KeyLoadDelayUs,
                   SetKeyLoadDelayUs)}) {
    knob.hidden = true;
    r.Add(std::move(knob));
  }

  ConfigParam protected_configs =
      ReadOnlyFlag("enable-protected-configs", "enable_protected_configs", ConfigType::kEnum);
  protected_configs.choices = kProtectedConfigChoices;
  r.Add(std::move(protected_configs));

  // The append-only file (aof.h). The names are immutable, as in Redis; the base is always an
  // RDB snapshot (Redis can write an AOF-format base with aof-use-rdb-preamble no).
  r.Add(MutableBool("appendonly", "appendonly", AppendOnlyConfigured, SetAppendOnly));
  r.Add(MutableEnum(
      "appendfsync", "appendfsync", kAppendFsyncChoices,
      [] { return std::string(kAppendFsyncChoices[int(AppendFsyncPolicy())]); },
      [](std::string_view v) {
        for (int i = 0; i < 3; ++i) {
          if (core::EqualsIgnoreCase(v, kAppendFsyncChoices[i])) SetAppendFsync(AppendFsync(i));
        }
      }));
  r.Add(ReadOnlyFlag("appendfilename", "appendfilename", ConfigType::kString));
  r.Add(ReadOnlyFlag("appenddirname", "appenddirname", ConfigType::kString));
  r.Add(MutableBool("aof-load-truncated", "aof_load_truncated", AofLoadTruncated,
                    SetAofLoadTruncated));
  r.Add(Fixed("aof-use-rdb-preamble", "yes"));
  r.Add(MutableInt("auto-aof-rewrite-percentage", "auto_aof_rewrite_percentage", 0, INT32_MAX,
                   AutoAofRewritePercentage, SetAutoAofRewritePercentage));
  r.Add(MutableMemory("auto-aof-rewrite-min-size", "auto_aof_rewrite_min_size",
                      AutoAofRewriteMinSize, SetAutoAofRewriteMinSize));
  // No fork, so no child to pin (Redis: immutable, empty unless set at start).
  r.Add(ReadOnly("bgsave_cpulist", ""));
}

// The encodings' thresholds and node sizes (core/), with Redis' bounds (its size_t ones: up to
// LONG_MAX) and its old ziplist names as aliases. Shard threads read them on the data path through
// core::RuntimeSetting, so a change reaches every shard at its next write.
void RegisterDataTypeParams(ConfigRegistry& r) {
  constexpr int64_t kMax = INT64_MAX;
  // A parameter and, when `alias` is not empty, its other name.
  auto add = [&r](ConfigParam p, std::string_view alias = {}) {
    ConfigParam other = alias.empty() ? ConfigParam{} : Alias(alias, p);
    r.Add(std::move(p));
    if (!alias.empty()) r.Add(std::move(other));
  };
  add(MutableInt("hash-max-listpack-entries", "hash_max_listpack_entries", 0, kMax,
                 core::HashMaxListpackEntries, core::SetHashMaxListpackEntries),
      "hash-max-ziplist-entries");
  add(MutableMemory("hash-max-listpack-value", "hash_max_listpack_value",
                    core::HashMaxListpackValue, core::SetHashMaxListpackValue),
      "hash-max-ziplist-value");
  add(MutableInt("set-max-intset-entries", "set_max_intset_entries", 0, kMax,
                 core::SetMaxIntsetEntries, core::SetSetMaxIntsetEntries));
  add(MutableInt("set-max-listpack-entries", "set_max_listpack_entries", 0, kMax,
                 core::SetMaxListpackEntries, core::SetSetMaxListpackEntries));
  add(MutableInt("set-max-listpack-value", "set_max_listpack_value", 0, kMax,
                 core::SetMaxListpackValue, core::SetSetMaxListpackValue));
  add(MutableInt("zset-max-listpack-entries", "zset_max_listpack_entries", 0, kMax,
                 core::ZSetMaxListpackEntries, core::SetZSetMaxListpackEntries),
      "zset-max-ziplist-entries");
  add(MutableMemory("zset-max-listpack-value", "zset_max_listpack_value",
                    core::ZSetMaxListpackValue, core::SetZSetMaxListpackValue),
      "zset-max-ziplist-value");
  add(MutableInt("list-max-listpack-size", "list_max_listpack_size", INT32_MIN, INT32_MAX,
                 core::ListMaxListpackSize, core::SetListMaxListpackSize),
      "list-max-ziplist-size");
  add(MutableInt("list-compress-depth", "", 0, INT32_MAX, core::ListCompressDepth,
                 core::SetListCompressDepth));
  add(MutableMemory("stream-node-max-bytes", "stream_node_max_bytes",
                    core::StreamNodeMaxBytesSetting, core::SetStreamNodeMaxBytes));
  add(MutableInt("stream-node-max-entries", "stream_node_max_entries", 0, kMax,
                 core::StreamNodeMaxEntries, core::SetStreamNodeMaxEntries));
  add(MutableMemory("hll-sparse-max-bytes", "hll_sparse_max_bytes", core::hll::SparseMaxBytes,
                    core::hll::SetSparseMaxBytes));
}

}  // namespace

void RegisterConfigParams(ConfigRegistry& r) {
  RegisterFixedConfigParams(r);  // first: the real parameters below replace their entries

  // --- Runtime-settable.
  r.Add(MutableMemory(
      "maxmemory", "maxmemory", [] { return int64_t(MemoryLimit::maxmemory()); },
      [](int64_t v) {
        MemoryLimit::set_maxmemory(uint64_t(v));
        MemoryLimit::set_container_limit(0);  // set explicitly: used_memory only, as Redis
      }));
  r.Add(MutableEnum(
      "maxmemory-policy", "maxmemory_policy", shard::kEvictionPolicyNames,
      [] { return std::string(shard::EvictionPolicyName(MemoryLimit::policy())); },
      [](std::string_view v) { MemoryLimit::set_policy(*shard::ParseEvictionPolicy(v)); }));
  r.Add(MutableInt(
      "maxmemory-samples", "", 1, INT32_MAX, [] { return int64_t(MemoryLimit::samples()); },
      [](int64_t v) { MemoryLimit::set_samples(unsigned(v)); }));
  r.Add(MutableInt(
      "lfu-log-factor", "", 0, INT32_MAX, [] { return MemoryLimit::lfu_log_factor(); },
      [](int64_t v) { MemoryLimit::set_lfu_log_factor(v); }));
  r.Add(MutableInt(
      "lfu-decay-time", "", 0, INT32_MAX, [] { return MemoryLimit::lfu_decay_time(); },
      [](int64_t v) { MemoryLimit::set_lfu_decay_time(v); }));

  r.Add(MutableInt(
      "slowlog-log-slower-than", "slowlog_log_slower_than", -1, INT64_MAX,
      [] { return SlowlogLogSlowerThan(); }, [](int64_t v) { SetSlowlogLogSlowerThan(v); }));
  r.Add(MutableInt(
      "slowlog-max-len", "slowlog_max_len", 0, INT64_MAX, [] { return int64_t(SlowlogMaxLen()); },
      [](int64_t v) { SetSlowlogMaxLen(uint64_t(v)); }));
  r.Add(MutableInt(
      "latency-monitor-threshold", "latency_monitor_threshold", 0, INT64_MAX,
      [] { return LatencyMonitorThreshold(); }, [](int64_t v) { SetLatencyMonitorThreshold(v); }));

  r.Add(MutableInt(
      "tracking-table-max-keys", "", 0, INT64_MAX,
      [] { return int64_t(shard::TrackingTableMaxKeys()); },
      [](int64_t v) { shard::SetTrackingTableMaxKeys(size_t(v)); }));
  // Redis 7 renamed lua-time-limit; both names work.
  r.Add(MutableInt(
      "busy-reply-threshold", "busy_reply_threshold", 0, INT64_MAX,
      [] { return BusyReplyThresholdMs(); }, [](int64_t v) { SetBusyReplyThresholdMs(v); }));
  r.Add(Alias("lua-time-limit", *r.Find("busy-reply-threshold")));
  r.Add(MutableString(
      "requirepass", "requirepass", [] { return RequirePass(); },
      [](std::string_view v) { SetRequirePass(v); }));
  // ACL users (acl_users.h): the aclfile is read-only at runtime, as Redis' IMMUTABLE_CONFIG.
  r.Add(ReadOnlyFlag("aclfile", "aclfile", ConfigType::kString));
  r.Add(MutableInt(
      "acllog-max-len", "acllog_max_len", 0, INT64_MAX, [] { return int64_t(AclLogMaxLen()); },
      [](int64_t v) { SetAclLogMaxLen(uint64_t(v)); }));
  r.Add(MutableEnum(
      "acl-pubsub-default", "acl_pubsub_default", kAclPubsubDefaultChoices,
      [] { return std::string(kAclPubsubDefaultChoices[AclNewUsersAllowAllChannels() ? 0 : 1]); },
      [](std::string_view v) {
        SetAclNewUsersAllowAllChannels(core::EqualsIgnoreCase(v, "allchannels"));
      }));
  ConfigParam maxclients = MutableInt(
      "maxclients", "maxclients", 1, UINT32_MAX, [] { return int64_t(MaxClients()); },
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

  r.Add(MutableInt("hz", "", 0, INT32_MAX, shard::Hz, shard::SetHz));
  r.Add(MutableBool("latency-tracking", "", LatencyTracking, SetLatencyTracking));
  // Active defragmentation (shard/defrag.h), with Redis 7.2's defaults and ranges.
  r.Add(MutableBool(
      "activedefrag", "", [] { return shard::GetDefragSettings().enabled; },
      shard::SetDefragEnabled));
  r.Add(MutableMemoryAtLeast(
      "active-defrag-ignore-bytes", "", 1, [] { return shard::GetDefragSettings().ignore_bytes; },
      shard::SetDefragIgnoreBytes));
  r.Add(MutableInt(
      "active-defrag-threshold-lower", "", 0, 1000,
      [] { return int64_t(shard::GetDefragSettings().threshold_lower); },
      [](int64_t v) { shard::SetDefragThresholdLower(int(v)); }));
  r.Add(MutableInt(
      "active-defrag-threshold-upper", "", 0, 1000,
      [] { return int64_t(shard::GetDefragSettings().threshold_upper); },
      [](int64_t v) { shard::SetDefragThresholdUpper(int(v)); }));
  r.Add(MutableInt(
      "active-defrag-cycle-min", "", 1, 99,
      [] { return int64_t(shard::GetDefragSettings().cycle_min); },
      [](int64_t v) { shard::SetDefragCycleMin(int(v)); }));
  r.Add(MutableInt(
      "active-defrag-cycle-max", "", 1, 99,
      [] { return int64_t(shard::GetDefragSettings().cycle_max); },
      [](int64_t v) { shard::SetDefragCycleMax(int(v)); }));
  r.Add(MutableInt(
      "active-defrag-max-scan-fields", "", 1, INT64_MAX,
      [] { return shard::GetDefragSettings().max_scan_fields; }, shard::SetDefragMaxScanFields));
  // Lazy freeing (shard/lazy_free.h): Redis 7.2's five settings, all `no` by default.
  // A plain variable for the lambdas: clang 14 (the fuzz tree) cannot capture a structured
  // binding.
  for (const auto& setting : {std::pair{"lazyfree-lazy-eviction", shard::LazyFreePath::kEviction},
                              std::pair{"lazyfree-lazy-expire", shard::LazyFreePath::kExpire},
                              std::pair{"lazyfree-lazy-server-del", shard::LazyFreePath::kServerDel},
                              std::pair{"lazyfree-lazy-user-del", shard::LazyFreePath::kUserDel},
                              std::pair{"lazyfree-lazy-user-flush", shard::LazyFreePath::kUserFlush}}) {
    const shard::LazyFreePath path = setting.second;
    r.Add(MutableBool(
        setting.first, "", [path] { return shard::LazyFreeOn(path); },
        [path](bool on) { shard::SetLazyFree(path, on); }));
  }
  r.Add(ValidatedString(
      "latency-tracking-info-percentiles", "",
      [](std::string_view v) { return ParseLatencyPercentiles(v).status(); },
      [] { return FormatLatencyPercentiles(LatencyPercentiles()); },
      [](std::string_view v) { SetLatencyPercentiles(*ParseLatencyPercentiles(v)); }));
  RegisterDataTypeParams(r);
  RegisterPersistenceParams(r);

  RegisterListenParams(r);  // port, bind, tls-port
  RegisterTlsParams(r);

  // --- Redis parameters with a fixed value in shardis (clients and tools read them).
  // --- Redis parameters whose fixed value in shardis is not Redis' default (the others are in
  // config_fixed_params.cc).
  r.Add(ReadOnly("databases", core::Concat(shard::Shard::kNumDbs)));
  r.Add(ReadOnly("enable-debug-command", "yes"));
  // No modules can load (module_family.cc): MODULE answers everyone, as Redis with "yes".
  r.Add(ReadOnly("enable-module-command", "yes"));

  // Registered last: it must win over any fixed placeholder of the same name.
  RegisterKeyspaceEventsParam(r);
}

}  // namespace shardis::server

// The Redis 7.2 parameters shardis has no counterpart for (replication, cluster, ...),
// each with Redis' default: CONFIG GET shows them as Redis would, so that tools reading them
// work. CONFIG SET refuses the ones Redis has immutable, and accepts for the others only the value
// they have (Fixed: a client or suite that sets Redis' default, e.g. Redis' maxmemory unit with
// `maxmemory-clients 0`, goes on; any other value is refused as immutable).
#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>

#include "server/config_registry.h"

namespace shardis::server {

namespace {

constexpr std::pair<std::string_view, std::string_view> kFixedParams[] = {
    {"active-expire-effort", "1"},
    {"activerehashing", "yes"},
    {"always-show-logo", "no"},
    {"aof-rewrite-incremental-fsync", "yes"},
    {"aof-timestamp-enabled", "no"},
    {"aof_rewrite_cpulist", ""},
    {"bind-source-addr", ""},
    {"bio_cpulist", ""},
    {"cluster-allow-pubsubshard-when-down", "yes"},
    {"cluster-allow-reads-when-down", "no"},
    {"cluster-allow-replica-migration", "yes"},
    {"cluster-announce-bus-port", "0"},
    {"cluster-announce-hostname", ""},
    {"cluster-announce-human-nodename", ""},
    {"cluster-announce-ip", ""},
    {"cluster-announce-port", "0"},
    {"cluster-announce-tls-port", "0"},
    {"cluster-config-file", "nodes.conf"},
    {"cluster-enabled", "no"},
    {"cluster-link-sendbuf-limit", "0"},
    {"cluster-migration-barrier", "1"},
    {"cluster-node-timeout", "15000"},
    {"cluster-port", "0"},
    {"cluster-preferred-endpoint-type", "ip"},
    {"cluster-replica-no-failover", "no"},
    {"cluster-replica-validity-factor", "10"},
    {"cluster-require-full-coverage", "yes"},
    {"cluster-slave-no-failover", "no"},
    {"cluster-slave-validity-factor", "10"},
    {"crash-log-enabled", "yes"},
    {"crash-memcheck-enabled", "yes"},
    {"daemonize", "no"},
    {"disable-thp", "yes"},
    {"dynamic-hz", "yes"},
    {"ignore-warnings", ""},
    {"io-threads", "1"},
    {"io-threads-do-reads", "no"},
    {"jemalloc-bg-thread", "yes"},
    {"lazyfree-lazy-eviction", "no"},
    {"lazyfree-lazy-expire", "no"},
    {"lazyfree-lazy-server-del", "no"},
    {"lazyfree-lazy-user-del", "no"},
    {"lazyfree-lazy-user-flush", "no"},
    {"locale-collate", ""},
    {"logfile", ""},
    {"loglevel", "notice"},
    {"masterauth", ""},
    {"masteruser", ""},
    {"maxmemory-clients", "0"},
    {"maxmemory-eviction-tenacity", "10"},
    {"min-replicas-max-lag", "10"},
    {"min-replicas-to-write", "0"},
    {"min-slaves-max-lag", "10"},
    {"min-slaves-to-write", "0"},
    {"no-appendfsync-on-rewrite", "no"},
    {"oom-score-adj", "no"},
    {"oom-score-adj-values", "0 200 800"},
    {"pidfile", ""},
    {"proc-title-template", "{title} {listen-addr} {server-mode}"},
    {"propagation-error-behavior", "ignore"},
    {"repl-backlog-size", "1048576"},
    {"repl-backlog-ttl", "3600"},
    {"repl-disable-tcp-nodelay", "no"},
    {"repl-diskless-load", "disabled"},
    {"repl-diskless-sync", "yes"},
    {"repl-diskless-sync-delay", "5"},
    {"repl-diskless-sync-max-replicas", "0"},
    {"repl-ping-replica-period", "10"},
    {"repl-ping-slave-period", "10"},
    {"repl-timeout", "60"},
    {"replica-announce-ip", ""},
    {"replica-announce-port", "0"},
    {"replica-announced", "yes"},
    {"replica-ignore-disk-write-errors", "no"},
    {"replica-ignore-maxmemory", "yes"},
    {"replica-lazy-flush", "no"},
    {"replica-priority", "100"},
    {"replica-read-only", "yes"},
    {"replica-serve-stale-data", "yes"},
    {"replicaof", ""},
    {"sanitize-dump-payload", "no"},
    {"server_cpulist", ""},
    {"set-proc-title", "yes"},
    {"shutdown-on-sigint", "default"},
    {"shutdown-on-sigterm", "default"},
    {"shutdown-timeout", "10"},
    {"slave-announce-ip", ""},
    {"slave-announce-port", "0"},
    {"slave-ignore-maxmemory", "yes"},
    {"slave-lazy-flush", "no"},
    {"slave-priority", "100"},
    {"slave-read-only", "yes"},
    {"slave-serve-stale-data", "yes"},
    {"slaveof", ""},
    {"socket-mark-id", "0"},
    {"supervised", "no"},
    {"syslog-enabled", "no"},
    {"syslog-facility", "local0"},
    {"syslog-ident", "redis"},
    {"tcp-backlog", "511"},
    {"tls-client-cert-file", ""},
    {"tls-client-key-file", ""},
    {"tls-client-key-file-pass", ""},
    {"tls-cluster", "no"},
    {"tls-dh-params-file", ""},
    {"tls-replication", "no"},
    {"unixsocket", ""},
    {"unixsocketperm", "0"},
};

// The ones Redis 7.2 has IMMUTABLE_CONFIG (and their aliases): refused whatever the value.
constexpr std::string_view kImmutableInRedis[] = {
    "always-show-logo", "aof_rewrite_cpulist", "bio_cpulist", "cluster-config-file",
    "cluster-enabled", "cluster-port", "daemonize", "disable-thp", "io-threads",
    "io-threads-do-reads", "logfile", "pidfile", "replicaof", "server_cpulist",
    "set-proc-title", "slaveof", "socket-mark-id", "supervised", "syslog-enabled",
    "syslog-facility", "syslog-ident", "tcp-backlog", "unixsocket", "unixsocketperm",
};

bool ImmutableInRedis(std::string_view name) {
  return std::find(std::begin(kImmutableInRedis), std::end(kImmutableInRedis), name) !=
         std::end(kImmutableInRedis);
}

}  // namespace

void RegisterFixedConfigParams(ConfigRegistry& r) {
  for (const auto& [name, value] : kFixedParams) {
    r.Add(ImmutableInRedis(name) ? ReadOnly(name, std::string(value))
                                 : Fixed(name, std::string(value)));
  }
}

}  // namespace shardis::server

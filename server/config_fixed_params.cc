// The Redis 7.2 parameters whose effect shardis does not have (replication, cluster, client
// eviction, logging, lazy freeing, ...), each with Redis' default, so that tools and test suites
// that read or set them work:
// - Redis lets CONFIG SET change it (the most): accepted with Redis' type, range and error
//   texts, stored, shown by CONFIG GET and written by CONFIG REWRITE, with no effect yet
//   (README and docs/compatibility.md say so).
// - Redis has it IMMUTABLE_CONFIG: refused at runtime with Redis' error, whatever the value.
#include <locale.h>

#include <cctype>
#include <clocale>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/config_registry.h"

namespace shardis::server {

namespace {

constexpr int64_t kIntMax = INT32_MAX;
constexpr int64_t kLongMax = INT64_MAX;

// Redis' enums, in the order its error text lists them.
constexpr std::string_view kEndpointTypes[] = {"ip", "hostname", "unknown-endpoint"};
constexpr std::string_view kLogLevels[] = {"debug", "verbose", "notice", "warning", "nothing"};
constexpr std::string_view kOomScoreAdj[] = {"no", "yes", "relative", "absolute"};
constexpr std::string_view kPropagationErrorBehavior[] = {"ignore", "panic", "panic-on-replicas"};
constexpr std::string_view kReplDisklessLoad[] = {"disabled", "on-empty-db", "swapdb"};
constexpr std::string_view kSanitizeDumpPayload[] = {"no", "yes", "clients"};
constexpr std::string_view kShutdownOnSig[] = {"default", "save", "nosave", "now", "force"};

// A parameter accepted and stored with no effect yet.
struct Accepted {
  std::string_view name;
  ConfigType type;
  std::string_view value;  // Redis' default, as CONFIG GET shows it
  int64_t min = 0;         // kInt and kMemory bounds
  int64_t max = 0;
  std::span<const std::string_view> choices = {};  // kEnum
  std::string_view alias = {};  // Redis' other name (the replication ones' "slave" names)
};

constexpr Accepted kAccepted[] = {
    {"active-expire-effort", ConfigType::kInt, "1", 1, 10},
    {"activerehashing", ConfigType::kBool, "yes"},
    {"aof-rewrite-incremental-fsync", ConfigType::kBool, "yes"},
    {"aof-timestamp-enabled", ConfigType::kBool, "no"},
    {"bind-source-addr", ConfigType::kString, ""},
    {"cluster-allow-pubsubshard-when-down", ConfigType::kBool, "yes"},
    {"cluster-allow-reads-when-down", ConfigType::kBool, "no"},
    {"cluster-allow-replica-migration", ConfigType::kBool, "yes"},
    {"cluster-announce-bus-port", ConfigType::kInt, "0", 0, 65535},
    {"cluster-announce-hostname", ConfigType::kString, ""},
    {"cluster-announce-human-nodename", ConfigType::kString, ""},
    {"cluster-announce-ip", ConfigType::kString, ""},
    {"cluster-announce-port", ConfigType::kInt, "0", 0, 65535},
    {"cluster-announce-tls-port", ConfigType::kInt, "0", 0, 65535},
    {"cluster-link-sendbuf-limit", ConfigType::kMemory, "0", 0, kLongMax},
    {"cluster-migration-barrier", ConfigType::kInt, "1", 0, kIntMax},
    {"cluster-node-timeout", ConfigType::kInt, "15000", 0, kLongMax},
    {"cluster-preferred-endpoint-type", ConfigType::kEnum, "ip", 0, 0, kEndpointTypes},
    {"cluster-replica-no-failover", ConfigType::kBool, "no", 0, 0, {},
     "cluster-slave-no-failover"},
    {"cluster-replica-validity-factor", ConfigType::kInt, "10", 0, kIntMax, {},
     "cluster-slave-validity-factor"},
    {"cluster-require-full-coverage", ConfigType::kBool, "yes"},
    {"crash-log-enabled", ConfigType::kBool, "yes"},
    {"crash-memcheck-enabled", ConfigType::kBool, "yes"},
    {"dynamic-hz", ConfigType::kBool, "yes"},
    {"ignore-warnings", ConfigType::kString, ""},
    {"jemalloc-bg-thread", ConfigType::kBool, "yes"},
    {"locale-collate", ConfigType::kString, ""},
    {"loglevel", ConfigType::kEnum, "notice", 0, 0, kLogLevels},
    {"masterauth", ConfigType::kString, ""},
    {"masteruser", ConfigType::kString, ""},
    {"maxmemory-clients", ConfigType::kMemory, "0", -100, kLongMax},
    {"maxmemory-eviction-tenacity", ConfigType::kInt, "10", 0, 100},
    {"min-replicas-max-lag", ConfigType::kInt, "10", 0, kIntMax, {}, "min-slaves-max-lag"},
    {"min-replicas-to-write", ConfigType::kInt, "0", 0, kIntMax, {}, "min-slaves-to-write"},
    {"no-appendfsync-on-rewrite", ConfigType::kBool, "no"},
    {"oom-score-adj", ConfigType::kEnum, "no", 0, 0, kOomScoreAdj},
    {"oom-score-adj-values", ConfigType::kString, "0 200 800"},
    {"proc-title-template", ConfigType::kString, "{title} {listen-addr} {server-mode}"},
    {"propagation-error-behavior", ConfigType::kEnum, "ignore", 0, 0,
     kPropagationErrorBehavior},
    {"repl-backlog-size", ConfigType::kMemory, "1048576", 1, kLongMax},
    {"repl-backlog-ttl", ConfigType::kInt, "3600", 0, kLongMax},
    {"repl-disable-tcp-nodelay", ConfigType::kBool, "no"},
    {"repl-diskless-load", ConfigType::kEnum, "disabled", 0, 0, kReplDisklessLoad},
    {"repl-diskless-sync", ConfigType::kBool, "yes"},
    {"repl-diskless-sync-delay", ConfigType::kInt, "5", 0, kIntMax},
    {"repl-diskless-sync-max-replicas", ConfigType::kInt, "0", 0, kIntMax},
    {"repl-ping-replica-period", ConfigType::kInt, "10", 1, kIntMax, {},
     "repl-ping-slave-period"},
    {"repl-timeout", ConfigType::kInt, "60", 1, kIntMax},
    {"replica-announce-ip", ConfigType::kString, "", 0, 0, {}, "slave-announce-ip"},
    {"replica-announce-port", ConfigType::kInt, "0", 0, 65535, {}, "slave-announce-port"},
    {"replica-announced", ConfigType::kBool, "yes"},
    {"replica-ignore-disk-write-errors", ConfigType::kBool, "no"},
    {"replica-ignore-maxmemory", ConfigType::kBool, "yes", 0, 0, {}, "slave-ignore-maxmemory"},
    {"replica-lazy-flush", ConfigType::kBool, "no", 0, 0, {}, "slave-lazy-flush"},
    {"replica-priority", ConfigType::kInt, "100", 0, kIntMax, {}, "slave-priority"},
    {"replica-read-only", ConfigType::kBool, "yes", 0, 0, {}, "slave-read-only"},
    {"replica-serve-stale-data", ConfigType::kBool, "yes", 0, 0, {}, "slave-serve-stale-data"},
    {"sanitize-dump-payload", ConfigType::kEnum, "no", 0, 0, kSanitizeDumpPayload},
    {"shutdown-on-sigint", ConfigType::kString, "default"},
    {"shutdown-on-sigterm", ConfigType::kString, "default"},
    {"shutdown-timeout", ConfigType::kInt, "10", 0, kIntMax},
    {"tls-client-cert-file", ConfigType::kString, ""},
    {"tls-client-key-file", ConfigType::kString, ""},
    {"tls-client-key-file-pass", ConfigType::kString, ""},
    {"tls-cluster", ConfigType::kBool, "no"},
    {"tls-dh-params-file", ConfigType::kString, ""},
    {"tls-replication", ConfigType::kBool, "no"},
};

// Redis has these IMMUTABLE_CONFIG: refused whatever the value.
constexpr std::pair<std::string_view, std::string_view> kImmutableInRedis[] = {
    {"always-show-logo", "no"},
    {"aof_rewrite_cpulist", ""},
    {"bio_cpulist", ""},
    {"cluster-config-file", "nodes.conf"},
    {"cluster-enabled", "no"},
    {"cluster-port", "0"},
    {"daemonize", "no"},
    {"disable-thp", "yes"},
    {"io-threads", "1"},
    {"io-threads-do-reads", "no"},
    {"logfile", ""},
    {"pidfile", ""},
    {"replicaof", ""},
    {"server_cpulist", ""},
    {"set-proc-title", "yes"},
    {"slaveof", ""},
    {"socket-mark-id", "0"},
    {"supervised", "no"},
    {"syslog-enabled", "no"},
    {"syslog-facility", "local0"},
    {"syslog-ident", "redis"},
    {"tcp-backlog", "511"},
    {"unixsocket", ""},
    {"unixsocketperm", "0"},
};

// --- Redis' checks of the string and multi-word parameters, with its error texts.

// Redis' isValidAnnouncedHostname.
absl::Status ValidateHostname(std::string_view v) {
  if (v.size() >= 256) return absl::InvalidArgumentError("Hostnames must be less than 256 characters");
  for (char c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      return absl::InvalidArgumentError(
          "Hostnames may only contain alphanumeric characters, hyphens or dots");
    }
  }
  return absl::OkStatus();
}

// Redis' isValidAuxString: none of the characters its cluster bus uses as separators.
absl::Status ValidateNodename(std::string_view v) {
  if (v.find_first_of("!#$%&()*+:;<>?@[]^{|}~") != std::string_view::npos) {
    return absl::InvalidArgumentError("Announced human node name contained invalid character");
  }
  return absl::OkStatus();
}

// Redis' validateProcTitleTemplate: {variables} it knows ({{ is a brace), and something left once
// expanded with an empty title.
absl::Status ValidateProcTitleTemplate(std::string_view v) {
  const auto invalid = [] {
    return absl::InvalidArgumentError("template format is invalid or contains unknown variables");
  };
  std::string expanded;
  for (size_t i = 0; i < v.size();) {
    if (v[i] != '{') {
      expanded += v[i++];
      continue;
    }
    if (i + 1 >= v.size()) return invalid();
    if (v[i + 1] == '{') {
      expanded += '{';
      i += 2;
      continue;
    }
    const size_t end = v.find('}', i + 1);
    if (end == std::string_view::npos) return invalid();
    const std::string_view var = v.substr(i + 1, end - i - 1);
    if (var == "listen-addr" || var == "port" || var == "tls-port" || var == "config-file") {
      expanded += 'x';  // never empty in shardis
    } else if (var != "title" && var != "server-mode" && var != "unixsocket") {
      return invalid();
    }
    i = end + 1;
  }
  if (expanded.find_first_not_of(' ') == std::string::npos) return invalid();
  return absl::OkStatus();
}

// Redis' updateLocaleCollate, without changing this process' locale: whether setlocale would
// take the name.
absl::Status ValidateLocale(std::string_view v) {
  locale_t loc = newlocale(LC_COLLATE_MASK, std::string(v).c_str(), locale_t(0));
  if (loc == locale_t(0)) return absl::InvalidArgumentError("Invalid locale name");
  freelocale(loc);
  return absl::OkStatus();
}

// Redis' oom-score-adj-values: three integers, each in -2000..2000, shown as they parse.
absl::StatusOr<std::string> CanonicalOomScoreAdjValues(std::string_view v) {
  const std::vector<std::string_view> words = core::SplitWords(v);
  if (words.size() != 3) return absl::InvalidArgumentError("wrong number of arguments");
  std::string out;
  for (std::string_view w : words) {
    // As Redis reads them: strtoll of the whole word ("+5" and "05" are 5).
    const std::string word(w);
    char* end = nullptr;
    const long long n = std::strtoll(word.c_str(), &end, 10);
    if (*end != '\0' || n < -2000 || n > 2000) {
      return absl::InvalidArgumentError(
          "Invalid oom-score-adj-values, elements must be between -2000 and 2000.");
    }
    core::Append(&out, out.empty() ? "" : " ", n);
  }
  return out;
}

// Redis' shutdown-on-sigint/sigterm: a set of the flags save, nosave, now, force ("default" is
// none), shown in that order.
absl::StatusOr<std::string> CanonicalShutdownFlags(std::string_view v) {
  bool set[std::size(kShutdownOnSig)] = {};
  for (std::string_view w : core::SplitWords(v)) {
    size_t i = 0;
    while (i < std::size(kShutdownOnSig) && !core::EqualsIgnoreCase(w, kShutdownOnSig[i])) ++i;
    if (i == std::size(kShutdownOnSig)) {
      return absl::InvalidArgumentError(
          "argument(s) must be one of the following: default, save, nosave, now, force");
    }
    set[i] = true;
  }
  if (set[1] && set[2]) {
    return absl::InvalidArgumentError(
        "shutdown options SAVE and NOSAVE can't be used simultaneously");
  }
  std::string out;
  for (size_t i = 1; i < std::size(kShutdownOnSig); ++i) {
    if (set[i]) core::Append(&out, out.empty() ? "" : " ", kShutdownOnSig[i]);
  }
  return out.empty() ? std::string("default") : out;
}

// The value CONFIG GET shows after CONFIG SET of `text` (already validated): Redis' own
// formatting of the multi-word ones, the enum name Redis shows for a synonym ("relative" is
// "yes"), the text itself otherwise.
std::string Canonical(std::string_view name, std::string text) {
  if (name == "oom-score-adj-values") return *CanonicalOomScoreAdjValues(text);
  if (name == "shutdown-on-sigint" || name == "shutdown-on-sigterm") {
    return *CanonicalShutdownFlags(text);
  }
  if (name == "oom-score-adj" && text == "relative") return "yes";
  return text;
}

std::function<absl::Status(std::string_view)> ValidatorOf(std::string_view name) {
  if (name == "cluster-announce-hostname") return ValidateHostname;
  if (name == "cluster-announce-human-nodename") return ValidateNodename;
  if (name == "proc-title-template") return ValidateProcTitleTemplate;
  if (name == "locale-collate") return ValidateLocale;
  if (name == "oom-score-adj-values") {
    return [](std::string_view v) { return CanonicalOomScoreAdjValues(v).status(); };
  }
  if (name == "shutdown-on-sigint" || name == "shutdown-on-sigterm") {
    return [](std::string_view v) { return CanonicalShutdownFlags(v).status(); };
  }
  return nullptr;
}

// The stored value of an accepted parameter. CONFIG GET and SET may run on different threads at
// once; neither is on the data path, so a mutex is enough.
struct StoredValue {
  std::mutex mu;
  std::string text;
};

ConfigParam AcceptedParam(const Accepted& a) {
  auto stored = std::make_shared<StoredValue>();
  stored->text = a.value;
  return {.name = a.name,
          .type = a.type,
          .is_mutable = true,
          .deny_loading = a.name == "repl-diskless-load",  // Redis' DENY_LOADING_CONFIG
          .min = a.min,
          .max = a.max,
          .percent = a.name == "maxmemory-clients",  // Redis' PERCENT_CONFIG
          .choices = a.choices,
          .validate = ValidatorOf(a.name),
          .get =
              [stored] {
                std::lock_guard lock(stored->mu);
                return stored->text;
              },
          .set =
              [stored, name = a.name, type = a.type, percent = a.name == "maxmemory-clients"](
                  const ConfigValue& v) {
                ConfigParam shape{.type = type, .percent = percent};
                std::string text = Canonical(name, ConfigRegistry::Format(shape, v));
                std::lock_guard lock(stored->mu);
                stored->text = std::move(text);
              }};
}

}  // namespace

void RegisterFixedConfigParams(ConfigRegistry& r) {
  for (const Accepted& a : kAccepted) {
    r.Add(AcceptedParam(a));
    if (!a.alias.empty()) r.Add(Alias(a.alias, *r.Find(a.name)));
  }
  for (const auto& [name, value] : kImmutableInRedis) r.Add(ReadOnly(name, std::string(value)));
}

}  // namespace shardis::server

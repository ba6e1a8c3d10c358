// The CONFIG parameters: one entry per Redis name, with the gflag it maps to, its type (how a
// value is parsed, validated and shown), whether CONFIG SET may change it, and how a new value is
// applied. CONFIG GET/SET/REWRITE, the config file and the SHARDIS_ environment variables all go
// through it (config_family.cc, startup_config.cc).
//
// Registering a parameter is one line in RegisterConfigParams (config_params.cc), e.g.
//   r.Add(MutableMemory("maxmemory", "maxmemory", GetMaxMemory, SetMaxMemory));
// Runtime state behind a mutable parameter must be safe to read from every thread (an atomic, or
// a value copied to each thread by the setter): `set` runs in the connection that sent CONFIG SET,
// and at start (from the flag's value) on the main thread before any shard thread serves.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace shardis::server {

enum class ConfigType : uint8_t { kBool, kInt, kMemory, kEnum, kString };

// A parsed value: `number` for bool (0/1), int and memory (bytes); `text` for enum and string.
struct ConfigValue {
  int64_t number = 0;
  std::string text;
};

struct ConfigParam {
  std::string_view name{};  // Redis' name, lower case, e.g. "maxmemory-policy"
  std::string_view flag{};  // the gflag it maps to, e.g. "maxmemory_policy"; empty for none
  ConfigType type = ConfigType::kString;
  bool is_mutable = false;  // CONFIG SET may change it
  // Redis lets CONFIG SET change it, shardis fixes it (Fixed): CONFIG SET of the value it has is
  // accepted and changes nothing (clients and test suites set Redis' defaults), any other value is
  // refused as immutable.
  bool accepts_own_value = false;
  // Redis' PROTECTED_CONFIG (dir, dbfilename: together they let a client write a file anywhere):
  // CONFIG SET changes it only as enable-protected-configs allows ("can't set protected config").
  bool is_protected = false;
  // Redis' DENY_LOADING_CONFIG (dir): CONFIG SET answers -LOADING while a snapshot loads.
  bool deny_loading = false;
  // Redis' HIDDEN_CONFIG (test knobs): CONFIG GET shows it only when asked by its exact name.
  bool hidden = false;
  // Redis' `save`: a list. In a config file each line adds to the lines before it (the file's
  // first line replaces the default, an empty value clears), and a value from a file, a flag or a
  // SHARDIS_ variable is split as Redis splits a config line (runs of blanks, quotes), while
  // CONFIG SET splits at single spaces.
  bool accumulates = false;
  // Redis' ALIAS_CONFIG (hash-max-ziplist-entries for hash-max-listpack-entries): another name of
  // the parameter `alias_of`, sharing its value. CONFIG REWRITE writes only the main name.
  std::string_view alias_of{};
  int64_t min = std::numeric_limits<int64_t>::min();  // kInt and kMemory bounds
  int64_t max = std::numeric_limits<int64_t>::max();
  // Redis' PERCENT_CONFIG (maxmemory-clients), for kMemory: "N%" is also a value, kept as -N
  // (so min = -100 allows up to 100%) and shown as "N%".
  bool percent = false;
  std::span<const std::string_view> choices{};  // kEnum, in the order Redis' error text lists them
  // kString: checks a value's syntax (the error is Redis' text); empty: any string.
  std::function<absl::Status(std::string_view)> validate{};
  // The current value, already formatted as CONFIG GET shows it (memory in bytes, yes/no).
  std::function<std::string()> get{};
  // Applies a parsed, validated value. Empty: nothing to apply (fixed or start-only).
  std::function<void(const ConfigValue&)> set{};
  // Optional, for CONFIG SET: whether the system can take a parsed value (maxclients needs file
  // descriptors), asked before anything is applied. The error is shown after "... - ".
  std::function<absl::Status(const ConfigValue&)> check{};
  // Optional, Redis' apply function: run once after a CONFIG SET has set its values (the TLS
  // context, rebuilt once for a certificate and its key set together). A failure puts back the
  // values of every parameter of that CONFIG SET; its message is the error shown after "... - ".
  absl::Status (*apply)() = nullptr;
};

// Redis' memtoull: digits with an optional unit b, k (1000), kb (1024), m, mb, g, gb (any case).
absl::StatusOr<int64_t> ParseMemory(std::string_view text);
// Redis' rewriteConfigFormatMemory: the largest unit that divides the value ("1gb", "100mb").
std::string FormatMemoryUnits(int64_t bytes);

class ConfigRegistry {
 public:
  void Add(ConfigParam param);
  // By Redis name (case-insensitive), or nullptr.
  const ConfigParam* Find(std::string_view name) const;
  // By gflag name, or nullptr.
  const ConfigParam* FindByFlag(std::string_view flag) const;
  const std::vector<ConfigParam>& params() const { return params_; }

  // The value of each parameter as registered (its default), for CONFIG REWRITE, which writes
  // only what differs. Taken once after registration; SetDefault overrides one (maxmemory when
  // derived from the cgroup limit: a rewrite must not freeze a derived value into the file).
  void SnapshotDefaults();
  void SetDefault(std::string_view name, std::string value);
  std::string_view DefaultOf(const ConfigParam& p) const;

  // Parses and validates `text` for `p`. The error is Redis' text after "... - ", e.g.
  // "argument must be a memory value".
  static absl::StatusOr<ConfigValue> Parse(const ConfigParam& p, std::string_view text);
  // The canonical text of a parsed value, as CONFIG GET shows it (and as gflags gets it).
  static std::string Format(const ConfigParam& p, const ConfigValue& v);

 private:
  std::vector<ConfigParam> params_;
  std::vector<std::string> defaults_;  // parallel to params_
};

// The process' registry, filled once at start (RegisterConfigParams) and read-only afterwards.
ConfigRegistry& Config();
void RegisterConfigParams(ConfigRegistry& r);
// notify-keyspace-events (keyspace_events_config.cc).
void RegisterKeyspaceEventsParam(ConfigRegistry& r);
// The Redis parameters shardis has no counterpart for, with Redis' defaults, read-only
// (config_fixed_params.cc). RegisterConfigParams calls it first; a real parameter of the same name
// registered later replaces its entry.
void RegisterFixedConfigParams(ConfigRegistry& r);

// Whether enable-protected-configs lets a client at `peer_addr` ("ip:port") CONFIG SET a
// protected parameter.
bool ProtectedConfigAllowed(std::string_view peer_addr);

// One-line registrations. get/set for int, memory and bool take and give int64_t.
ConfigParam MutableInt(std::string_view name, std::string_view flag, int64_t min, int64_t max,
                       std::function<int64_t()> get, std::function<void(int64_t)> set);
ConfigParam MutableMemory(std::string_view name, std::string_view flag,
                          std::function<int64_t()> get, std::function<void(int64_t)> set);
ConfigParam MutableBool(std::string_view name, std::string_view flag, std::function<bool()> get,
                        std::function<void(bool)> set);
ConfigParam MutableEnum(std::string_view name, std::string_view flag,
                        std::span<const std::string_view> choices,
                        std::function<std::string()> get,
                        std::function<void(std::string_view)> set);
ConfigParam MutableString(std::string_view name, std::string_view flag,
                          std::function<std::string()> get,
                          std::function<void(std::string_view)> set);
// A memory parameter with a lower bound (Redis' client-query-buffer-limit: at least 1mb).
ConfigParam MutableMemoryAtLeast(std::string_view name, std::string_view flag, int64_t min,
                                 std::function<int64_t()> get, std::function<void(int64_t)> set);
// Another name of `main` (Redis' alias), e.g. Alias("list-max-ziplist-size", list_max_size).
ConfigParam Alias(std::string_view name, const ConfigParam& main);
// A parameter CONFIG SET refuses ("can't set immutable config"), shown with a fixed value.
ConfigParam ReadOnly(std::string_view name, std::string value);
// A parameter Redis can change and shardis fixes: as ReadOnly, but CONFIG SET accepts the value it
// already has (accepts_own_value).
ConfigParam Fixed(std::string_view name, std::string value);
// Whether `text` is p's current value for CONFIG SET (accepts_own_value): the same text in any
// case, or the same number of bytes ("0" and "0mb").
bool IsCurrentValue(const ConfigParam& p, std::string_view text);
ConfigParam ReadOnlyFn(std::string_view name, std::function<std::string()> get);
// A read-only parameter backed by a start-up flag (port, bind): the config file and env set it.
ConfigParam ReadOnlyFlag(std::string_view name, std::string_view flag, ConfigType type);

}  // namespace shardis::server

#include "server/config_registry.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <utility>

#include "core/number.h"
#include "core/string_util.h"

namespace shardis::server {

absl::StatusOr<int64_t> ParseMemory(std::string_view text) {
  static constexpr struct {
    std::string_view name;
    int64_t mul;
  } kUnits[] = {{"", 1},
                {"b", 1},
                {"k", 1000},
                {"kb", 1024},
                {"m", 1000 * 1000},
                {"mb", 1024 * 1024},
                {"g", 1000 * 1000 * 1000},
                {"gb", int64_t{1} << 30}};
  auto invalid = [] { return absl::InvalidArgumentError("argument must be a memory value"); };
  // As Redis' memtoull: leading digits (no sign, no spaces), then nothing or a unit. No digits
  // at all reads as 0, as there ("kb" is 0).
  const size_t unit_at = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view digits = text.substr(0, unit_at), unit = text.substr(unit_at);
  int64_t mul = 0;
  for (const auto& u : kUnits) {
    if (core::EqualsIgnoreCase(unit, u.name)) mul = u.mul;
  }
  int64_t n = 0;
  if (mul == 0 || (!digits.empty() && !core::ParseInt64(digits, &n)) ||
      n > std::numeric_limits<int64_t>::max() / mul) {
    return invalid();
  }
  return n * mul;
}

std::string FormatMemoryUnits(int64_t bytes) {
  static constexpr std::pair<int64_t, std::string_view> kUnits[] = {
      {int64_t{1} << 30, "gb"}, {int64_t{1} << 20, "mb"}, {int64_t{1} << 10, "kb"}};
  for (const auto& [mul, unit] : kUnits) {
    if (bytes != 0 && bytes % mul == 0) return core::Concat(bytes / mul, unit);
  }
  return core::Concat(bytes);
}

void ConfigRegistry::Add(ConfigParam param) {
  for (ConfigParam& p : params_) {
    if (p.name == param.name) {  // a later registration replaces a placeholder
      p = std::move(param);
      return;
    }
  }
  params_.push_back(std::move(param));
}

void ConfigRegistry::SnapshotDefaults() {
  defaults_.clear();
  for (const ConfigParam& p : params_) defaults_.push_back(p.get());
}

void ConfigRegistry::SetDefault(std::string_view name, std::string value) {
  for (size_t i = 0; i < params_.size() && i < defaults_.size(); ++i) {
    if (params_[i].name == name) defaults_[i] = std::move(value);
  }
}

std::string_view ConfigRegistry::DefaultOf(const ConfigParam& p) const {
  const size_t i = size_t(&p - params_.data());
  return i < defaults_.size() ? std::string_view(defaults_[i]) : std::string_view();
}

const ConfigParam* ConfigRegistry::Find(std::string_view name) const {
  for (const ConfigParam& p : params_) {
    if (core::EqualsIgnoreCase(p.name, name)) return &p;
  }
  return nullptr;
}

const ConfigParam* ConfigRegistry::FindByFlag(std::string_view flag) const {
  for (const ConfigParam& p : params_) {
    if (!p.flag.empty() && p.flag == flag) return &p;
  }
  return nullptr;
}

absl::StatusOr<ConfigValue> ConfigRegistry::Parse(const ConfigParam& p, std::string_view text) {
  ConfigValue v;
  auto out_of_range = [&] {
    return absl::InvalidArgumentError(
        core::Concat("argument must be between ", p.min, " and ", p.max, " inclusive"));
  };
  switch (p.type) {
    case ConfigType::kBool:
      if (core::EqualsIgnoreCase(text, "yes") || core::EqualsIgnoreCase(text, "true")) {
        v.number = 1;
      } else if (core::EqualsIgnoreCase(text, "no") || core::EqualsIgnoreCase(text, "false")) {
        v.number = 0;
      } else {
        return absl::InvalidArgumentError("argument must be 'yes' or 'no'");
      }
      return v;
    case ConfigType::kInt:
      if (!core::ParseInt64(text, &v.number)) {
        return absl::InvalidArgumentError("argument couldn't be parsed into an integer");
      }
      if (v.number < p.min || v.number > p.max) return out_of_range();
      return v;
    case ConfigType::kMemory: {
      absl::StatusOr<int64_t> n = ParseMemory(text);
      if (n.ok()) {
        v.number = *n;
      } else if (!p.percent) {
        return n.status();
      } else if (int64_t pct = 0; text.size() > 1 && text.back() == '%' &&
                 core::ParseInt64(text.substr(0, text.size() - 1), &pct) && pct >= 0) {
        v.number = -pct;  // as Redis: a percentage is kept negative
      } else {
        return absl::InvalidArgumentError("argument must be a memory or percent value");
      }
      if (p.percent && v.number < 0) {
        if (v.number < p.min) {
          return absl::InvalidArgumentError(
              core::Concat("percentage argument must be less or equal to ", -p.min));
        }
        return v;
      }
      if (v.number < p.min || v.number > p.max) return out_of_range();
      return v;
    }
    case ConfigType::kEnum:
      for (std::string_view choice : p.choices) {
        if (core::EqualsIgnoreCase(choice, text)) {
          v.text = choice;
          return v;
        }
      }
      {
        std::string list;
        for (std::string_view choice : p.choices) {
          core::Append(&list, list.empty() ? "" : ", ", choice);
        }
        return absl::InvalidArgumentError(
            core::Concat("argument(s) must be one of the following: ", list));
      }
    case ConfigType::kString:
      if (p.validate) {
        if (absl::Status s = p.validate(text); !s.ok()) return s;
      }
      v.text = text;
      return v;
  }
  return v;
}

std::string ConfigRegistry::Format(const ConfigParam& p, const ConfigValue& v) {
  switch (p.type) {
    case ConfigType::kBool:
      return v.number != 0 ? "yes" : "no";
    case ConfigType::kInt:
      return core::Concat(v.number);
    case ConfigType::kMemory:
      if (p.percent && v.number < 0) return core::Concat(-v.number, "%");
      return core::Concat(v.number);
    case ConfigType::kEnum:
    case ConfigType::kString:
      return v.text;
  }
  return v.text;
}

ConfigRegistry& Config() {
  static ConfigRegistry* registry = new ConfigRegistry();
  return *registry;
}

ConfigParam MutableInt(std::string_view name, std::string_view flag, int64_t min, int64_t max,
                       std::function<int64_t()> get, std::function<void(int64_t)> set) {
  return {.name = name,
          .flag = flag,
          .type = ConfigType::kInt,
          .is_mutable = true,
          .min = min,
          .max = max,
          .get = [get = std::move(get)] { return core::Concat(get()); },
          .set = [set = std::move(set)](const ConfigValue& v) { set(v.number); }};
}

ConfigParam MutableMemory(std::string_view name, std::string_view flag,
                          std::function<int64_t()> get, std::function<void(int64_t)> set) {
  ConfigParam p = MutableInt(name, flag, 0, std::numeric_limits<int64_t>::max(), std::move(get),
                             std::move(set));
  p.type = ConfigType::kMemory;
  return p;
}

ConfigParam MutableMemoryAtLeast(std::string_view name, std::string_view flag, int64_t min,
                                 std::function<int64_t()> get, std::function<void(int64_t)> set) {
  ConfigParam p = MutableMemory(name, flag, std::move(get), std::move(set));
  p.min = min;
  return p;
}

ConfigParam MutableBool(std::string_view name, std::string_view flag, std::function<bool()> get,
                        std::function<void(bool)> set) {
  return {.name = name,
          .flag = flag,
          .type = ConfigType::kBool,
          .is_mutable = true,
          .get = [get = std::move(get)] { return std::string(get() ? "yes" : "no"); },
          .set = [set = std::move(set)](const ConfigValue& v) { set(v.number != 0); }};
}

ConfigParam MutableEnum(std::string_view name, std::string_view flag,
                        std::span<const std::string_view> choices,
                        std::function<std::string()> get,
                        std::function<void(std::string_view)> set) {
  return {.name = name,
          .flag = flag,
          .type = ConfigType::kEnum,
          .is_mutable = true,
          .choices = choices,
          .get = std::move(get),
          .set = [set = std::move(set)](const ConfigValue& v) { set(v.text); }};
}

ConfigParam MutableString(std::string_view name, std::string_view flag,
                          std::function<std::string()> get,
                          std::function<void(std::string_view)> set) {
  return {.name = name,
          .flag = flag,
          .type = ConfigType::kString,
          .is_mutable = true,
          .get = std::move(get),
          .set = [set = std::move(set)](const ConfigValue& v) { set(v.text); }};
}

ConfigParam Alias(std::string_view name, const ConfigParam& main) {
  ConfigParam alias = main;
  alias.name = name;
  alias.alias_of = main.name;  // same flag: a config file line of either name sets it
  return alias;
}

ConfigParam ReadOnly(std::string_view name, std::string value) {
  return {.name = name, .get = [value = std::move(value)] { return value; }};
}

ConfigParam Fixed(std::string_view name, std::string value) {
  ConfigParam p = ReadOnly(name, std::move(value));
  p.accepts_own_value = true;
  return p;
}

bool IsCurrentValue(const ConfigParam& p, std::string_view text) {
  const std::string current = p.get();
  if (core::EqualsIgnoreCase(text, current)) return true;
  absl::StatusOr<int64_t> a = ParseMemory(text);
  absl::StatusOr<int64_t> b = ParseMemory(current);
  return a.ok() && b.ok() && *a == *b;
}

ConfigParam ReadOnlyFn(std::string_view name, std::function<std::string()> get) {
  return {.name = name, .get = std::move(get)};
}

ConfigParam ReadOnlyFlag(std::string_view name, std::string_view flag, ConfigType type) {
  return {.name = name,
          .flag = flag,
          .type = type,
          .get = [flag, type] {
            std::string value;
            gflags::GetCommandLineOption(std::string(flag).c_str(), &value);
            if (type == ConfigType::kBool) return std::string(value == "true" ? "yes" : "no");
            return value;
          }};
}

}  // namespace shardis::server

#include "server/command_keys.h"

#include <algorithm>

#include "core/number.h"
#include "core/string_util.h"
#include "server/subcommand.h"

namespace shardis::server {

namespace {

// BITFIELD reads only when every subcommand is a GET (or OVERFLOW), as Redis' bitfieldGetKeys
// decides; an incomplete or unknown subcommand counts as a write.
bool BitfieldOnlyReads(ArgSlice cmd) {
  for (size_t i = 2; i < cmd.size(); ++i) {
    const size_t more = cmd.size() - i - 1;
    if (core::EqualsIgnoreCase(cmd[i], "get") && more >= 2) {
      i += 2;
    } else if (core::EqualsIgnoreCase(cmd[i], "overflow") && more >= 1) {
      i += 1;
    } else {
      return false;  // SET, INCRBY, or a syntax error
    }
  }
  return true;
}

// numkeys at args[at], then that many keys. Redis refuses numkeys < 1 or past the end.
bool NumKeysAt(ArgSlice args, int at, std::vector<int>* out) {
  int64_t n = 0;
  if (at >= int(args.size()) || !core::ParseInt64(args[at], &n) || n < 1 ||
      n > int64_t(args.size()) - at - 1) {
    return false;
  }
  for (int i = 0; i < n; ++i) out->push_back(at + 1 + i);
  return true;
}

}  // namespace

bool CommandKeyPositions(const CommandSpec& spec, ArgSlice args, std::vector<int>* out) {
  if (spec.key_finder != nullptr) return spec.key_finder(args, out);
  KeyRange range = spec.keys;
  if (spec.container != nullptr && args.size() >= 2) {
    if (const SubCommand* sub = FindSub(*spec.container, args[1])) range = sub->keys;
  }
  if (range.first <= 0) return true;
  const int argc = int(args.size());
  const int last = range.last < 0 ? argc + range.last : range.last;
  for (int i = range.first; i <= last && i < argc; i += std::max(range.step, 1)) {
    out->push_back(i);
  }
  return true;
}

bool ScriptKeys(ArgSlice args, std::vector<int>* out) {
  int64_t n = 0;
  if (args.size() < 3 || !core::ParseInt64(args[2], &n) || n < 0 ||
      n > int64_t(args.size()) - 3) {
    return false;
  }
  for (int i = 0; i < n; ++i) out->push_back(3 + i);
  return true;
}

bool NumKeysFirst(ArgSlice args, std::vector<int>* out) { return NumKeysAt(args, 1, out); }

bool NumKeysAfterTimeout(ArgSlice args, std::vector<int>* out) { return NumKeysAt(args, 2, out); }

bool DestinationThenNumKeys(ArgSlice args, std::vector<int>* out) {
  out->push_back(1);
  return NumKeysAt(args, 2, out);
}

bool SortKeys(ArgSlice args, std::vector<int>* out) {
  out->push_back(1);
  int store = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "limit")) {
      i += 2;
    } else if (core::EqualsIgnoreCase(args[i], "get") || core::EqualsIgnoreCase(args[i], "by")) {
      i += 1;
    } else if (core::EqualsIgnoreCase(args[i], "store") && i + 1 < args.size()) {
      store = int(i + 1);
      i += 1;
    }
  }
  if (store > 0) out->push_back(store);
  return true;
}

bool MigrateKeys(ArgSlice args, std::vector<int>* out) {
  for (size_t i = 6; i < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "keys")) {
      if (!args[3].empty()) return true;
      for (size_t k = i + 1; k < args.size(); ++k) out->push_back(int(k));
      return true;
    }
    if (core::EqualsIgnoreCase(args[i], "auth")) {
      i += 1;
    } else if (core::EqualsIgnoreCase(args[i], "auth2")) {
      i += 2;
    }
  }
  out->push_back(3);
  return true;
}

bool FirstKeyOnly(ArgSlice, std::vector<int>* out) {
  out->push_back(1);
  return true;
}

bool GeoRadiusKeys(ArgSlice args, std::vector<int>* out) {
  out->push_back(1);
  int store = 0;
  for (size_t i = 5; i + 1 < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "store") || core::EqualsIgnoreCase(args[i], "storedist")) {
      store = int(i + 1);
      ++i;
    }
  }
  if (store > 0) out->push_back(store);
  return true;
}

bool StreamsKeys(ArgSlice args, std::vector<int>* out) {
  const bool group = core::EqualsIgnoreCase(args[0], "xreadgroup");
  for (size_t i = 1; i < args.size(); ++i) {
    if (group && core::EqualsIgnoreCase(args[i], "group")) {
      i += 2;
      continue;
    }
    if (!core::EqualsIgnoreCase(args[i], "streams")) continue;
    const size_t rest = args.size() - i - 1;
    if (rest == 0 || rest % 2 != 0) return false;
    for (size_t k = 0; k < rest / 2; ++k) out->push_back(int(i + 1 + k));
    return true;
  }
  return false;
}

// The flags of the k-th key of a command line, as Redis' key specs and getkeys functions give
// them: SET and BITFIELD decide per call (their spec says variable_flags), the others by key spec.
std::string_view KeyFlagsOf(const CommandSpec& spec, ArgSlice cmd, size_t k) {
  if (spec.name == "set") {
    const bool get = std::any_of(cmd.begin() + std::min<size_t>(3, cmd.size()), cmd.end(),
                                 [](std::string_view a) { return core::EqualsIgnoreCase(a, "get"); });
    return get ? "RW access update" : "OW update";
  }
  if (spec.name == "bitfield") return BitfieldOnlyReads(cmd) ? "RO access" : "RW access update";
  if (k > 0 && !spec.docs.other_key_flags.empty()) return spec.docs.other_key_flags;
  return spec.docs.key_flags;
}


}  // namespace shardis::server

#include "server/command_keys.h"

#include <utility>

#include "core/number.h"
#include "core/string_util.h"

namespace shardis::server {
namespace {

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

// ZUNION/ZINTER/ZDIFF, SINTERCARD/ZINTERCARD, LMPOP/ZMPOP: numkeys key [key ...] ...
bool NumKeysFirst(ArgSlice args, std::vector<int>* out) { return NumKeysAt(args, 1, out); }

// BLMPOP/BZMPOP timeout numkeys key [key ...] ...
bool NumKeysAfterTimeout(ArgSlice args, std::vector<int>* out) { return NumKeysAt(args, 2, out); }

// Z*STORE destination numkeys key [key ...] ...
bool DestinationThenNumKeys(ArgSlice args, std::vector<int>* out) {
  out->push_back(1);
  return NumKeysAt(args, 2, out);
}

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE dest]:
// the key and the last STORE's destination (Redis' sortGetKeys skips the options' operands).
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

// SORT_RO key ...: never stores.
bool FirstKeyOnly(ArgSlice, std::vector<int>* out) {
  out->push_back(1);
  return true;
}

// GEORADIUS(BYMEMBER) key ... [STORE key] [STOREDIST key]: the key and the last store target.
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

// XREAD/XREADGROUP ... STREAMS key [key ...] id [id ...]: the first half after STREAMS (the first
// STREAMS word: a key may be called "streams").
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

constexpr std::pair<std::string_view, KeyFinder> kFinders[] = {
    {"zunion", NumKeysFirst},
    {"zinter", NumKeysFirst},
    {"zdiff", NumKeysFirst},
    {"sintercard", NumKeysFirst},
    {"zintercard", NumKeysFirst},
    {"lmpop", NumKeysFirst},
    {"zmpop", NumKeysFirst},
    {"blmpop", NumKeysAfterTimeout},
    {"bzmpop", NumKeysAfterTimeout},
    {"zunionstore", DestinationThenNumKeys},
    {"zinterstore", DestinationThenNumKeys},
    {"zdiffstore", DestinationThenNumKeys},
    {"sort", SortKeys},
    {"sort_ro", FirstKeyOnly},
    {"georadius", GeoRadiusKeys},
    {"georadiusbymember", GeoRadiusKeys},
    {"xread", StreamsKeys},
    {"xreadgroup", StreamsKeys},
};

}  // namespace

KeyFinder FindMovableKeys(std::string_view command_name) {
  for (const auto& [name, finder] : kFinders) {
    if (name == command_name) return finder;
  }
  return nullptr;
}

}  // namespace shardis::server

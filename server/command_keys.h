// The key procedures of the "movablekeys" commands (CommandSpec::key_finder), whose keys'
// positions depend on the arguments (numkeys, STREAMS, STORE), so the legacy first/last/step
// range of the command table cannot say. These are Redis' getkeys procedures; each family sets
// them where it registers its commands, and COMMAND GETKEYS and COMMAND INFO's movablekeys flag
// read them. The handlers parse their own arguments and do not use these.
#pragma once

#include <vector>

#include "server/command.h"

namespace shardis::server {

// The positions in args (args[0] is the command name) of a command line's keys: from the
// command's key finder, its subcommand's key range, or its own key range. False when a key
// finder cannot parse the arguments.
bool CommandKeyPositions(const CommandSpec& spec, ArgSlice args, std::vector<int>* out);

// The key spec flags of the k-th key of a command line (Redis' names, space separated: "RW
// access update"), as COMMAND GETKEYSANDFLAGS reports them and ACL checks key permissions by.
std::string_view KeyFlagsOf(const CommandSpec& spec, ArgSlice cmd, size_t k);

// EVAL/EVALSHA/FCALL script numkeys key [key ...] arg [arg ...]: numkeys may be 0.
bool ScriptKeys(ArgSlice args, std::vector<int>* out);

// ZUNION/ZINTER/ZDIFF, SINTERCARD/ZINTERCARD, LMPOP/ZMPOP: numkeys key [key ...] ...
bool NumKeysFirst(ArgSlice args, std::vector<int>* out);

// BLMPOP/BZMPOP timeout numkeys key [key ...] ...
bool NumKeysAfterTimeout(ArgSlice args, std::vector<int>* out);

// Z*STORE destination numkeys key [key ...] ...
bool DestinationThenNumKeys(ArgSlice args, std::vector<int>* out);

// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE dest]:
// the key and the last STORE's destination (Redis' sortGetKeys skips the options' operands).
bool SortKeys(ArgSlice args, std::vector<int>* out);

// SORT_RO key ...: never stores.
bool FirstKeyOnly(ArgSlice args, std::vector<int>* out);

// GEORADIUS(BYMEMBER) key ... [STORE key] [STOREDIST key]: the key and the last store target.
bool GeoRadiusKeys(ArgSlice args, std::vector<int>* out);

// XREAD/XREADGROUP ... STREAMS key [key ...] id [id ...]: the first half after STREAMS (the first
// STREAMS word: a key may be called "streams").
bool StreamsKeys(ArgSlice args, std::vector<int>* out);

// MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS key ...]:
// args[3], or with KEYS (and an empty args[3]) the keys after it (Redis' migrateGetKeys; KEYS
// with a non-empty args[3] has no keys, a syntax error for the command itself).
bool MigrateKeys(ArgSlice args, std::vector<int>* out);

}  // namespace shardis::server

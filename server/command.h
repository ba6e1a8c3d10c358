// The command table: one CommandSpec per command, registered by its family file (the
// Register*Family functions below, one per file: string_family.cc, list_family.cc, ...). Each
// registration is one table entry with every fact of its command:
//
//   r->Register({.name = "get", .arity = 2, .flags = kReadOnly | kFast, .keys = kOneKey,
//                .acl_categories = "read string fast", .on_shard = CmdGet,
//                .docs = {"string", "1.0.0", "O(1)", "Returns the string value of a key.",
//                         "RO access"}});
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/reply_builder.h"
#include "core/string_util.h"
#include "shard/eviction.h"
#include "shard/shard.h"

namespace shardis::server {

// args[0] is the command name as the client sent it; views into the connection's input buffer.
using ArgSlice = std::span<const std::string_view>;

struct ConnectionState;
struct Container;

// What a command that runs on the shard owning its key sees. The handler runs on that shard's
// thread (inline for local keys, in the owner's loop for remote ones): it must not block.
struct ShardContext {
  shard::Shard& shard;
  shard::Db& db;  // the client's selected database on this shard
  core::ReplyBuilder& rb;
  int64_t now_ms;
  uint64_t hash;  // core::HashBytes(args[1]), for the Db calls on that key
  // Set by a write command whose run left the key as it was (SETNX on an existing key, EXPIRE
  // that replied 0, ...), so that its watchers are not disturbed (Redis signals a key modified
  // only when it is). Errors and writes to a key missing before and after need not set it.
  bool unchanged = false;
  // Inside EXEC: where the command's journal record goes (the EXEC's unit), instead of the
  // shard's journal.
  shard::JournalUnit* journal_unit = nullptr;
  // Set by a write whose effect only it knows (the members SPOP drew, the id XADD * made, the
  // entries XCLAIM moved), while the AOF is on: what the journal records instead of the command
  // sent.
  shard::JournalEffect journal_effect{};
  // CLIENT TRACKING: the client whose reads this command's key is remembered for, if any.
  const shard::TrackedReader* reader = nullptr;
  // A command that needs no maxmemory check nor eviction: a script's (Redis' scriptVerifyOOM:
  // the script has the allow-oom flag, or an earlier command of the script wrote, and a run is
  // never cut halfway), or one queued in an EXEC, which did both.
  bool skip_memory_check = false;
  // The command's bytes as the client sent them, when they are canonical RESP
  // (core::RespParser::canonical); empty otherwise. A command journaled as sent records them as
  // they are rather than encoding its arguments again.
  std::string_view request = {};
  bool journaling() const { return shard.journal().on(); }
};
using ShardHandler = void (*)(ArgSlice args, ShardContext& ctx);
// A write whose replay needs another command than the one sent (Redis' propagation rewrites: a
// relative expiry made absolute, ...). Called on the shard after the command ran and changed
// something, while the AOF is on: fills *form and returns true, or returns false to journal the
// command as sent.
using JournalRewriter = bool (*)(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form);

// What a command that runs in the connection's fiber sees: it may hop to shards and wait.
struct ConnContext {
  ConnectionState& conn;
  core::ReplyBuilder& rb;
};
using ConnHandler = void (*)(ArgSlice args, ConnContext& ctx);

// The key procedure of a "movablekeys" command, whose keys' positions depend on its arguments
// (numkeys, STREAMS, STORE): appends the indexes of its keys in args (args[0] is the command name)
// to *out; returns false when the arguments are malformed. Redis' getkeys procedures, read by
// COMMAND GETKEYS and COMMAND INFO (server/command_keys.h has them).
using KeyFinder = bool (*)(ArgSlice args, std::vector<int>* out);

// Flags, reported by COMMAND INFO with Redis' names.
enum CommandFlag : uint32_t {
  kWrite = 1 << 0,
  kReadOnly = 1 << 1,
  kDenyOom = 1 << 2,
  kAdmin = 1 << 3,
  kPubSub = 1 << 4,
  kNoScript = 1 << 5,
  kLoading = 1 << 6,
  kStale = 1 << 7,
  kFast = 1 << 8,
  kNoAuth = 1 << 9,
  kAllowBusy = 1 << 10,    // Redis runs it while a script is busy (MULTI/WATCH/QUIT/...)
  kSkipSlowlog = 1 << 11,  // EXEC: its commands are logged one by one instead
  kNoAsyncLoading = 1 << 12,  // refused during an async (replica) load: shown, nothing else yet
  kNoMulti = 1 << 13,         // refused inside MULTI (QueueInMulti)
  kSkipMonitor = 1 << 14,     // Redis' skip_monitor (EVAL): shown by COMMAND INFO only
  // Redis' may_replicate (PUBLISH, PFCOUNT, EVAL, ...): held by CLIENT PAUSE WRITE and refused
  // in read-only scripts, as writes are. COMMAND INFO hides it, as Redis does.
  kMayReplicate = 1 << 15,
  kNoMandatoryKeys = 1 << 16, // Redis' no_mandatory_keys (EVAL with numkeys 0): shown only
  // Not Redis': a script (EVAL, FCALL), whose keys are known only as it runs. EXEC holds every
  // shard for it, and its replies wait for the journal like a write's.
  kScript = 1 << 17,
};
// COMMAND INFO also shows "blocking" for commands in the blocking ACL category and
// "movablekeys" for those with a key finder (CommandSpec::key_finder).

// What COMMAND DOCS and COMMAND INFO say of a command beyond how it runs (Redis keeps these in the
// command's JSON file). Group, since, complexity, key flags and tips are Redis 7.0's (its COMMAND
// DOCS and COMMAND INFO are the spec; test_command_table.py compares); the summary is ours. Every
// command has them: Register refuses one without group or since.
struct CommandDocs {
  std::string_view group = {};  // "string", "generic", "server", ...
  std::string_view since = {};
  std::string_view complexity = {};
  std::string_view summary = {};
  std::string_view key_flags = {};  // the flags of Redis' first key spec, space separated
  // The flags of the keys after the first where Redis' later key specs differ (LMOVE's
  // destination, ZUNIONSTORE's sources, SORT's STORE key, ...); empty: key_flags for every key.
  std::string_view other_key_flags = {};
  std::string_view tips = {};       // space separated
};

// Redis' legacy key range (COMMAND INFO's first key, last key, step): the keys are args[first],
// args[first + step], ... up to args[last]; a negative last counts from the end (-1 = the last
// argument). first = 0: no keys (or only movable ones, found by a KeyFinder).
struct KeyRange {
  int first = 0;
  int last = 0;
  int step = 0;
};
// The common ranges.
inline constexpr KeyRange kNoKeys = {0, 0, 0};
inline constexpr KeyRange kOneKey = {1, 1, 1};    // args[1] (GET, SET, EXPIRE, ...)
inline constexpr KeyRange kTwoKeys = {1, 2, 1};   // args[1] and args[2] (RENAME, LMOVE, ...)
inline constexpr KeyRange kAllKeys = {1, -1, 1};  // every argument after the name (DEL, MGET, ...)

struct CommandSpec {
  std::string_view name;  // lower case
  int arity;              // Redis' arity: N = exactly N args (with the name), -N = at least N
  uint32_t flags;
  KeyRange keys;
  std::string_view acl_categories;  // space separated, without '@', e.g. "write string slow"
  // Commands whose only key is args[1] use on_shard: the connection routes them to the owner
  // (batched with the rest of the pipeline). Everything else uses on_conn. Exactly one handler is
  // set, except for a command that has both and keys_found_while_running: it runs with on_shard
  // unless that says otherwise for the command line (RunsOnShard).
  ShardHandler on_shard = nullptr;
  ConnHandler on_conn = nullptr;
  KeyFinder key_finder = nullptr;  // set for movablekeys commands only
  // Set for a command that may also touch keys it finds only while it runs (SORT's BY/GET
  // patterns): true for such a command line. A script holds every shard to run it.
  bool (*keys_found_while_running)(ArgSlice args) = nullptr;
  // Set for the script commands (EVAL, FCALL and their kin): the shard this call's script can run
  // on, batched with the connection's other commands for that shard (every key it declares lives
  // there, the script is known on this thread and does not run over every shard), or -1 to run it
  // on its own (Connection::Dispatch).
  int (*script_shard)(ArgSlice args) = nullptr;
  JournalRewriter journal_rewrite = nullptr;  // on_shard writes only
  CommandDocs docs = {};
  // For container commands (CONFIG, CLIENT, PUBSUB, ...): their subcommands (subcommand.h), a
  // constant with static storage, so that dispatch needs no lookup by name.
  const Container* container = nullptr;
  // Set at start, not by the family files:
  // Index of the command's statistics (INFO commandstats), and of its first subcommand's for
  // containers (the others follow in the container's order): set by AssignCommandStatsIds
  // (command_stats.h) once every family is registered, so that counting a call is an array
  // access, never a lookup by name.
  uint32_t stats_id = 0;
  uint32_t sub_stats_base = 0;
};

// Whether this command line runs with on_shard (else with on_conn). Every place that chooses
// between the two asks this.
inline bool RunsOnShard(const CommandSpec& spec, ArgSlice args) {
  if (spec.on_shard == nullptr) return false;
  return spec.on_conn == nullptr || !spec.keys_found_while_running(args);
}

// Runs a single-key command on its shard (the one place that does, so that what every write
// must do afterwards happens for all of them): wakes clients blocked on the key and, when the
// write changed a WATCHed or tracked key, fails its watchers' EXEC and tells its trackers.
void RunWatchedWrite(const CommandSpec& spec, ArgSlice args, ShardContext& ctx);
// Records a write that changed something in the journal (the AOF is on).
void JournalShardCommand(const CommandSpec& spec, ArgSlice args, ShardContext& ctx);
// For journal rewriters: the key's deadline after the write (Unix ms, 0: none), or -1 when the
// write left no key (a deadline in the past deletes it).
int64_t KeyDeadlineAfterWrite(std::string_view key, ShardContext& ctx);
// The journal's form of a write that set the key's deadline: PEXPIREAT key <ms> (Redis' form for
// EXPIRE and its kin, GETEX EX/PX), or DEL key when the deadline had passed and the key went;
// false when the key has no deadline.
bool PexpireatForm(std::string_view key, ShardContext& ctx, std::vector<std::string>* form);
// maxmemory on the shard, before any command runs there (eviction.h): false when the command is
// refused with kOomError.
bool AdmitOnShard(const CommandSpec& spec, ShardContext& ctx);
inline void RunShardCommand(const CommandSpec& spec, ArgSlice args, ShardContext& ctx) {
  // One relaxed load when no limit is set. As Redis before every command, a shard over its share
  // evicts first, for reads too: a reader hears of the keys that went before its reply.
  if (shard::MemoryLimit::maxmemory() != 0 && !ctx.skip_memory_check) [[unlikely]] {
    if (!AdmitOnShard(spec, ctx)) return ctx.rb.Error(shard::kOomError);
  }
  if (!(spec.flags & kWrite)) {
    // A tracking client's read remembers its key on the shard, as it reads it (Redis'
    // trackingRememberKeys): no write can come in between unnoticed.
    if (ctx.reader != nullptr && (spec.flags & kReadOnly)) [[unlikely]] {
      ctx.shard.tracking().Remember(args[1], *ctx.reader);
    }
    return spec.on_shard(args, ctx);
  }
  ctx.db.DropMcMeta(args[1], ctx.hash);  // a RESP write invalidates memcached's CAS and flags
  // The journal takes what changed something, as Redis propagates what moved its dirty counter.
  const uint64_t dirty = ctx.shard.stats().dirty;
  if (ctx.db.WantsModifiedSignal(args[1])) [[unlikely]] {
    RunWatchedWrite(spec, args, ctx);
  } else {
    spec.on_shard(args, ctx);
    ctx.db.NoteReady(args[1]);
  }
  if (ctx.shard.stats().dirty != dirty && ctx.shard.journal().on()) [[unlikely]] {
    JournalShardCommand(spec, args, ctx);
  }
  if ((spec.flags & kDenyOom) && shard::MemoryLimit::maxmemory() != 0) [[unlikely]] {
    shard::NoteWriteGrowth(ctx.shard);  // may leave the shard over its share with no victim
  }
}

class CommandRegistry {
 public:
  // Adds one command with every fact about it (see the top of this file).
  void Register(const CommandSpec& spec);
  // Case-insensitive lookup; nullptr for unknown commands.
  const CommandSpec* Find(std::string_view name) const;
  const absl::flat_hash_map<std::string, CommandSpec, core::StringHash, core::StringEq>& all()
      const {
    return specs_;
  }
  absl::flat_hash_map<std::string, CommandSpec, core::StringHash, core::StringEq>& mutable_all() {
    return specs_;
  }

 private:
  absl::flat_hash_map<std::string, CommandSpec, core::StringHash, core::StringEq> specs_;
};

// The process' command table, filled at start by the Register*Family functions.
CommandRegistry& Registry();

// Every family below, in one call (main).
void RegisterAllFamilies(CommandRegistry* registry);

void RegisterStringFamily(CommandRegistry* registry);
void RegisterBitopsFamily(CommandRegistry* registry);
void RegisterHllFamily(CommandRegistry* registry);
void RegisterGenericFamily(CommandRegistry* registry);
void RegisterRenameFamily(CommandRegistry* registry);
void RegisterSortFamily(CommandRegistry* registry);
void RegisterListFamily(CommandRegistry* registry);
void RegisterHashFamily(CommandRegistry* registry);
void RegisterSetFamily(CommandRegistry* registry);
void RegisterZSetFamily(CommandRegistry* registry);
void RegisterGeoFamily(CommandRegistry* registry);
void RegisterStreamFamily(CommandRegistry* registry);
void RegisterServerFamily(CommandRegistry* registry);
void RegisterPersistenceFamily(CommandRegistry* registry);
// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] (persistence_family.cc), for DEBUG's dispatcher.
void DebugReload(ArgSlice args, ConnContext& ctx);
void RegisterInfoCommand(CommandRegistry* registry);
void RegisterConfigFamily(CommandRegistry* registry);
void RegisterMemoryFamily(CommandRegistry* registry);
void RegisterCommandFamily(CommandRegistry* registry);
void RegisterClientFamily(CommandRegistry* registry);
void RegisterConnectionFamily(CommandRegistry* registry);
void RegisterMultiFamily(CommandRegistry* registry);
void RegisterBlockingFamily(CommandRegistry* registry);
void RegisterPubSubFamily(CommandRegistry* registry);
void RegisterAuthFamily(CommandRegistry* registry);
void RegisterAclFamily(CommandRegistry* registry);
void RegisterMonitorCommand(CommandRegistry* registry);
void RegisterLolwutCommand(CommandRegistry* registry);
void RegisterModuleFamily(CommandRegistry* registry);
void RegisterClusterFamily(CommandRegistry* registry);
void RegisterMigrateFamily(CommandRegistry* registry);
void RegisterScriptFamily(CommandRegistry* registry);
void RegisterFunctionFamily(CommandRegistry* registry);

// Redis' error texts, shared by the families.
inline constexpr std::string_view kSyntaxErr = "ERR syntax error";
inline constexpr std::string_view kNotIntegerErr = "ERR value is not an integer or out of range";
// Redis' getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX) without a message.
inline constexpr std::string_view kOutOfLongRangeErr =
    "ERR value is out of range, value must between -9223372036854775807 and "
    "9223372036854775807";
inline constexpr std::string_view kNotFloatErr = "ERR value is not a valid float";
// Redis' getPositiveLongFromObjectOrReply without a message: not a number or negative.
inline constexpr std::string_view kMustBePositiveErr =
    "ERR value is out of range, must be positive";
inline constexpr std::string_view kWrongTypeErr =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNoSuchKeyErr = "ERR no such key";
inline constexpr std::string_view kOverflowErr = "ERR increment or decrement would overflow";
std::string WrongArgsError(
    std::string_view command);  // "ERR wrong number of arguments for 'x' command"

}  // namespace shardis::server

#include "server/command.h"

#include "server/client_tracking.h"
#include "server/command_stats.h"
#include "server/latency_monitor.h"
#include "server/slowlog.h"
#include "server/subcommand.h"
#include "shard/db.h"

#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>
#include <glog/logging.h>

namespace shardis::server {

void CommandRegistry::Register(const CommandSpec& spec) {
  CHECK(spec.on_shard != nullptr || spec.on_conn != nullptr) << spec.name;
  // Both handlers: keys_found_while_running chooses (RunsOnShard).
  CHECK(spec.on_shard == nullptr || spec.on_conn == nullptr ||
        spec.keys_found_while_running != nullptr)
      << spec.name;
  // on_shard runs on the shard of args[1]: only a command whose one key is there may have it.
  CHECK(spec.on_shard == nullptr || (spec.keys.first == 1 && spec.keys.last == 1)) << spec.name;
  CHECK(!spec.docs.group.empty() && !spec.docs.since.empty()) << "no docs for " << spec.name;
  auto [it, inserted] = specs_.emplace(std::string(spec.name), spec);
  CHECK(inserted) << "duplicate command " << spec.name;
  if (spec.container != nullptr) AddContainer(*spec.container);
}

const CommandSpec* CommandRegistry::Find(std::string_view name) const {
  // Command names are short: lower-case into a stack buffer instead of allocating.
  char buf[32];
  if (name.size() > sizeof(buf)) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) buf[i] = absl::ascii_tolower(name[i]);
  auto it = specs_.find(std::string_view(buf, name.size()));
  return it == specs_.end() ? nullptr : &it->second;
}

namespace {

bool EvictAndAdmit(const CommandSpec& spec, ShardContext& ctx) {
  if (spec.flags & kDenyOom) return shard::MakeRoomForWrite(ctx.shard, ctx.now_ms);
  // Reads and deletes run even when the shard cannot get under its share.
  shard::EvictBeforeCommand(ctx.shard, ctx.now_ms);
  return true;
}

}  // namespace

bool AdmitOnShard(const CommandSpec& spec, ShardContext& ctx) {
  // A RESP3 tracking client hears of the keys its own command's eviction took before that
  // command's reply, as Redis sends them (performEvictions runs before the command, and a
  // client's invalidations go out at once unless its own command is executing): the pushes go
  // into the command's reply, ahead of it, rather than behind the batch's replies.
  const shard::TrackedReader* reader = ctx.reader;
  if (reader == nullptr || reader->redirected || !ctx.rb.resp3()) [[likely]] {
    return EvictAndAdmit(spec, ctx);
  }
  shard::InvalidationCapture evicted(reader->client_id);
  const bool admitted = EvictAndAdmit(spec, ctx);
  for (const std::string& key : evicted.keys()) {
    AppendInvalidationPush({key}, ctx.rb.output());  // one push per key, as Redis sends them
  }
  return admitted;
}

void RunWatchedWrite(const CommandSpec& spec, ArgSlice args, ShardContext& ctx) {
  // Only for watched keys, so the extra lookups cost nothing on the common path. Redis signals a
  // key modified when a command changes it; the rules below catch what changes nothing: a
  // command that failed (error reply), a key missing before and after, and what the handler
  // reports itself (ctx.unchanged).
  std::string_view key = args[1];
  const bool existed = shard::Db::Found(ctx.db.Find(key, ctx.hash, ctx.now_ms));
  const size_t before = ctx.rb.output()->size();
  spec.on_shard(args, ctx);
  const std::string& out = *ctx.rb.output();
  const bool error = out.size() > before && (out[before] == '-' || out[before] == '!');
  const bool exists = shard::Db::Found(ctx.db.Find(key, ctx.hash, ctx.now_ms));
  if (!error && !ctx.unchanged && (existed || exists)) {
    ctx.db.NoteModified(key);
  } else {
    ctx.db.NoteReady(key);
  }
}

void JournalShardCommand(const CommandSpec& spec, ArgSlice args, ShardContext& ctx) {
  const shard::JournalEffect& effect = ctx.journal_effect;
  if (effect.set()) {
    if (ctx.journal_unit != nullptr) return ctx.journal_unit->Add(ctx.db.index(), effect.commands());
    return ctx.shard.journal().AppendEffect(ctx.db.index(), effect.commands());
  }
  std::vector<std::string> form;
  std::vector<std::string_view> views;
  if (spec.journal_rewrite != nullptr && spec.journal_rewrite(args, ctx, &form)) {
    views.assign(form.begin(), form.end());
    args = views;
  }
  if (ctx.journal_unit != nullptr) return ctx.journal_unit->Add(ctx.db.index(), args);
  if (!ctx.request.empty() && views.empty()) {
    DCHECK(args.back().data() + args.back().size() + 2 == ctx.request.data() + ctx.request.size());
    return ctx.shard.journal().AppendRequest(ctx.db.index(), ctx.request);
  }
  ctx.shard.journal().AppendCommand(ctx.db.index(), args);
}

int64_t KeyDeadlineAfterWrite(std::string_view key, ShardContext& ctx) {
  shard::Db::Iterator it = ctx.db.Find(key, ctx.hash, ctx.now_ms);
  if (!shard::Db::Found(it)) return -1;
  return ctx.db.ExpireAt(it, key, ctx.hash);
}

bool PexpireatForm(std::string_view key, ShardContext& ctx, std::vector<std::string>* form) {
  const int64_t at = KeyDeadlineAfterWrite(key, ctx);
  if (at == 0) return false;
  if (at < 0) {
    *form = {"DEL", std::string(key)};
  } else {
    *form = {"PEXPIREAT", std::string(key), std::to_string(at)};
  }
  return true;
}

CommandRegistry& Registry() {
  static CommandRegistry* registry = new CommandRegistry();
  return *registry;
}

std::string WrongArgsError(std::string_view command) {
  return core::Concat("ERR wrong number of arguments for '", core::ToLower(command), "' command");
}

void RegisterAllFamilies(CommandRegistry* r) {
  RegisterConnectionFamily(r);
  RegisterStringFamily(r);
  RegisterBitopsFamily(r);
  RegisterHllFamily(r);
  RegisterGenericFamily(r);
  RegisterRenameFamily(r);
  RegisterSortFamily(r);
  RegisterListFamily(r);
  RegisterHashFamily(r);
  RegisterSetFamily(r);
  RegisterZSetFamily(r);
  RegisterGeoFamily(r);
  RegisterStreamFamily(r);
  RegisterServerFamily(r);
  RegisterPersistenceFamily(r);
  RegisterInfoCommand(r);
  RegisterConfigFamily(r);
  RegisterMemoryFamily(r);
  RegisterCommandFamily(r);
  RegisterClientFamily(r);
  RegisterMultiFamily(r);
  RegisterBlockingFamily(r);
  RegisterPubSubFamily(r);
  RegisterSlowlogFamily(r);
  RegisterLatencyFamily(r);
  RegisterAuthFamily(r);
  RegisterAclFamily(r);
  RegisterMonitorCommand(r);
  RegisterLolwutCommand(r);
  RegisterModuleFamily(r);
  RegisterClusterFamily(r);
  RegisterMigrateFamily(r);
  RegisterScriptFamily(r);
  RegisterFunctionFamily(r);
  AssignCommandStatsIds(r);  // last: every command and container is known
}

}  // namespace shardis::server

// COMMAND [COUNT | INFO | DOCS | LIST | GETKEYS | GETKEYSANDFLAGS | HELP]: the command table as
// Redis 7 reports it, with the subcommands of every registered container.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/glob.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/command_docs_args.h"
#include "server/connection_state.h"
#include "server/command_keys.h"
#include "server/subcommand.h"

namespace shardis::server {

namespace {

// The command flags in Redis' order. "blocking" and "movablekeys" are not bits of the table: a
// command is blocking when it is in the blocking ACL category and has movable keys when it has a
// key finder.
void ReplyFlags(core::ReplyBuilder& rb, uint32_t flags, std::string_view acl_categories,
                bool movable_keys) {
  bool blocking = false;
  for (std::string_view c : core::SplitWords(acl_categories)) blocking |= c == "blocking";
  std::vector<std::string_view> names;
  static constexpr std::pair<uint32_t, std::string_view> kBeforeBlocking[] = {
      {kWrite, "write"}, {kReadOnly, "readonly"}, {kDenyOom, "denyoom"},
      {kAdmin, "admin"}, {kPubSub, "pubsub"},     {kNoScript, "noscript"},
  };
  static constexpr std::pair<uint32_t, std::string_view> kAfterBlocking[] = {
      {kLoading, "loading"},
      {kStale, "stale"},
      {kSkipMonitor, "skip_monitor"},
      {kSkipSlowlog, "skip_slowlog"},
      {kFast, "fast"},
      {kNoAuth, "no_auth"},
      {kNoMandatoryKeys, "no_mandatory_keys"},
      {kNoAsyncLoading, "no_async_loading"},
      {kNoMulti, "no_multi"},
  };
  for (const auto& [bit, name] : kBeforeBlocking) {
    if (flags & bit) names.push_back(name);
  }
  if (blocking) names.push_back("blocking");
  for (const auto& [bit, name] : kAfterBlocking) {
    if (flags & bit) names.push_back(name);
  }
  if (movable_keys) names.push_back("movablekeys");
  if (flags & kAllowBusy) names.push_back("allow_busy");
  rb.SetHeader(names.size());
  for (std::string_view name : names) rb.SimpleString(name);
}

void ReplyCategories(core::ReplyBuilder& rb, std::string_view acl) {
  std::vector<std::string_view> cats = core::SplitWords(acl);
  rb.SetHeader(cats.size());
  for (std::string_view c : cats) rb.SimpleString(core::Concat("@", c));
}

void ReplyTips(core::ReplyBuilder& rb, std::string_view tips) {
  std::vector<std::string_view> words = core::SplitWords(tips);
  rb.SetHeader(words.size());
  for (std::string_view t : words) rb.Bulk(t);
}

// One COMMAND INFO entry of a subcommand.
void ReplySubInfo(core::ReplyBuilder& rb, std::string_view container, const SubCommand& sub) {
  rb.ArrayHeader(10);
  rb.Bulk(core::Concat(container, "|", sub.name));
  rb.Integer(sub.arity);
  ReplyFlags(rb, sub.flags, sub.acl_categories, /*movable_keys=*/false);
  rb.Integer(sub.keys.first);
  rb.Integer(sub.keys.last);
  rb.Integer(sub.keys.step);
  ReplyCategories(rb, sub.acl_categories);
  ReplyTips(rb, sub.docs.tips);
  rb.SetHeader(0);  // key specs
  rb.SetHeader(0);  // subcommands
}


// One COMMAND INFO entry: [name, arity, flags, first key, last key, step, categories, tips,
// key specs, subcommands], as Redis 7.
void ReplyCommandInfo(core::ReplyBuilder& rb, const CommandSpec& spec) {
  rb.ArrayHeader(10);
  rb.Bulk(spec.name);
  rb.Integer(spec.arity);
  ReplyFlags(rb, spec.flags, spec.acl_categories, spec.key_finder != nullptr);
  rb.Integer(spec.keys.first);
  rb.Integer(spec.keys.last);
  rb.Integer(spec.keys.step);
  ReplyCategories(rb, spec.acl_categories);
  ReplyTips(rb, spec.docs.tips);
  if (spec.keys.first > 0) {
    // The legacy key range as one key spec: begin at keys.first, range to keys.last.
    std::vector<std::string_view> kf = core::SplitWords(spec.docs.key_flags);
    rb.SetHeader(1);
    rb.MapHeader(3);
    rb.Bulk("flags");
    rb.SetHeader(kf.size());
    for (std::string_view f : kf) rb.SimpleString(f);
    rb.Bulk("begin_search");
    rb.MapHeader(2);
    rb.Bulk("type");
    rb.Bulk("index");
    rb.Bulk("spec");
    rb.MapHeader(1);
    rb.Bulk("index");
    rb.Integer(spec.keys.first);
    rb.Bulk("find_keys");
    rb.MapHeader(2);
    rb.Bulk("type");
    rb.Bulk("range");
    rb.Bulk("spec");
    rb.MapHeader(3);
    rb.Bulk("lastkey");
    rb.Integer(spec.keys.last < 0 ? spec.keys.last : spec.keys.last - spec.keys.first);
    rb.Bulk("keystep");
    rb.Integer(spec.keys.step);
    rb.Bulk("limit");
    rb.Integer(0);
  } else {
    rb.SetHeader(0);
  }
  const Container* c = spec.container;
  if (c == nullptr) {
    rb.SetHeader(0);
    return;
  }
  rb.SetHeader(c->subs.size());
  for (const SubCommand& sub : c->subs) ReplySubInfo(rb, c->name, sub);
}

// Looks up "name" or "container|sub" for COMMAND INFO/DOCS. Returns false if unknown.
bool ReplyInfoByName(core::ReplyBuilder& rb, std::string_view name) {
  size_t bar = name.find('|');
  if (bar == std::string_view::npos) {
    const CommandSpec* spec = Registry().Find(name);
    if (spec == nullptr) return false;
    ReplyCommandInfo(rb, *spec);
    return true;
  }
  const Container* c = FindContainer(name.substr(0, bar));
  const SubCommand* sub = c == nullptr ? nullptr : FindSub(*c, name.substr(bar + 1));
  if (sub == nullptr) return false;
  ReplySubInfo(rb, c->name, *sub);
  return true;
}

// The names of every command, sorted (the registry is a hash map).
std::vector<const CommandSpec*> AllSpecs() {
  std::vector<const CommandSpec*> specs;
  for (const auto& [name, spec] : Registry().all()) specs.push_back(&spec);
  std::sort(specs.begin(), specs.end(),
            [](const CommandSpec* a, const CommandSpec* b) { return a->name < b->name; });
  return specs;
}

void CommandNoArgs(ArgSlice, ConnContext& ctx) {
  std::vector<const CommandSpec*> specs = AllSpecs();
  ctx.rb.ArrayHeader(specs.size());
  for (const CommandSpec* spec : specs) ReplyCommandInfo(ctx.rb, *spec);
}

void CommandCount(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(int64_t(Registry().all().size())); }

void CommandInfo(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 2) return CommandNoArgs(args, ctx);
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) {
    if (!ReplyInfoByName(ctx.rb, core::ToLower(args[i]))) ctx.rb.Null();
  }
}

// A COMMAND DOCS map: summary, since, group, complexity (left out when there is none, as Redis
// does for MONITOR), Redis' doc flags and argument tree (command_docs_args.h) and, for a
// container, its subcommands' maps. Redis' `history` is not kept.
void ReplyDoc(core::ReplyBuilder& rb, std::string_view name, const CommandDocs& doc,
              const Container* c) {
  const bool has_complexity = !doc.complexity.empty();
  const CommandDocArgs* args = FindCommandDocArgs(name);
  rb.MapHeader(3 + (has_complexity ? 1 : 0) + (args != nullptr ? args->fields : 0) +
               (c != nullptr ? 1 : 0));
  rb.Bulk("summary");
  rb.Bulk(doc.summary);
  rb.Bulk("since");
  rb.Bulk(doc.since);
  rb.Bulk("group");
  rb.Bulk(doc.group);
  if (has_complexity) {
    rb.Bulk("complexity");
    rb.Bulk(doc.complexity);
  }
  if (args != nullptr) AppendDocEntries(rb, args->resp3);
  if (c == nullptr) return;
  rb.Bulk("subcommands");
  rb.MapHeader(c->subs.size());
  for (const SubCommand& sub : c->subs) {
    const std::string sub_name = core::Concat(c->name, "|", sub.name);
    rb.Bulk(sub_name);
    ReplyDoc(rb, sub_name, sub.docs, nullptr);
  }
}

void CommandDocsCmd(ArgSlice args, ConnContext& ctx) {
  std::vector<const CommandSpec*> specs;
  if (args.size() == 2) {
    specs = AllSpecs();
  } else {
    for (size_t i = 2; i < args.size(); ++i) {
      if (const CommandSpec* spec = Registry().Find(args[i])) specs.push_back(spec);
    }
  }
  ctx.rb.MapHeader(specs.size());
  for (const CommandSpec* spec : specs) {
    ctx.rb.Bulk(spec->name);
    ReplyDoc(ctx.rb, spec->name, spec->docs, spec->container);
  }
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
void CommandList(ArgSlice args, ConnContext& ctx) {
  enum class Filter { kNone, kModule, kAclCat, kPattern } filter = Filter::kNone;
  std::string_view arg;
  if (args.size() == 5 && core::EqualsIgnoreCase(args[2], "filterby")) {
    arg = args[4];
    if (core::EqualsIgnoreCase(args[3], "module")) {
      filter = Filter::kModule;
    } else if (core::EqualsIgnoreCase(args[3], "aclcat")) {
      filter = Filter::kAclCat;
    } else if (core::EqualsIgnoreCase(args[3], "pattern")) {
      filter = Filter::kPattern;
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
  } else if (args.size() != 2) {
    return ctx.rb.Error(kSyntaxErr);
  }
  auto keep = [&](std::string_view name, std::string_view acl) {
    switch (filter) {
      case Filter::kNone:
        return true;
      case Filter::kModule:
        return false;  // no modules
      case Filter::kAclCat:
        for (std::string_view c : core::SplitWords(acl)) {
          if (core::EqualsIgnoreCase(c, arg)) return true;
        }
        return false;
      case Filter::kPattern:
        return core::GlobMatch(arg, name, /*nocase=*/true);
    }
    return false;
  };
  std::vector<std::string> names;
  for (const CommandSpec* spec : AllSpecs()) {
    if (keep(spec->name, spec->acl_categories)) names.emplace_back(spec->name);
    if (const Container* c = spec->container) {
      for (const SubCommand& sub : c->subs) {
        std::string full = core::Concat(c->name, "|", sub.name);
        if (keep(full, sub.acl_categories)) names.push_back(std::move(full));
      }
    }
  }
  ctx.rb.ArrayHeader(names.size());
  for (const std::string& n : names) ctx.rb.Bulk(n);
}

// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg ...]: the keys of a command line, from the
// command's key finder, the subcommand's key range, or the command's key range.
template <bool kWithFlags>
void CommandGetKeys(ArgSlice args, ConnContext& ctx) {
  ArgSlice cmd = args.subspan(2);
  const CommandSpec* spec = Registry().Find(cmd[0]);
  if (spec == nullptr) return ctx.rb.Error("ERR Invalid command specified");
  if (!ArityOk(spec->arity, cmd.size())) {
    return ctx.rb.Error("ERR Invalid number of arguments specified for command");
  }
  if (spec->container != nullptr && cmd.size() >= 2) {
    const SubCommand* sub = FindSub(*spec->container, cmd[1]);
    if (sub != nullptr && !ArityOk(sub->arity, cmd.size())) {
      return ctx.rb.Error("ERR Invalid number of arguments specified for command");
    }
  }
  std::vector<int> positions;
  if (!CommandKeyPositions(*spec, cmd, &positions) ||
      (spec->key_finder != nullptr && positions.empty())) {
    // EVAL/FCALL may name no keys (numkeys 0): Redis answers with no keys, not an error.
    if (spec->flags & kNoMandatoryKeys) return ctx.rb.ArrayHeader(0);
    return ctx.rb.Error("ERR Invalid arguments specified for command");
  }
  if (positions.empty()) return ctx.rb.Error("ERR The command has no key arguments");
  std::vector<std::string_view> keys;
  for (int i : positions) keys.push_back(cmd[i]);
  if (!kWithFlags) return ctx.rb.BulkArray(keys);
  ctx.rb.ArrayHeader(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    std::vector<std::string_view> kf = core::SplitWords(KeyFlagsOf(*spec, cmd, k));
    ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk(keys[k]);
    ctx.rb.SetHeader(kf.size());
    for (std::string_view f : kf) ctx.rb.SimpleString(f);
  }
}

void CommandHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "COMMAND",
            {"(no subcommand)", "    Return details about all commands.", "COUNT",
             "    Return the number of commands.", "LIST [FILTERBY (MODULE|ACLCAT|PATTERN) <arg>]",
             "    Return the names of all commands, or of those matching a filter.",
             "INFO [<command-name> ...]", "    Return details about the given commands, or all.",
             "DOCS [<command-name> ...]",
             "    Return documentation about the given commands, or all.", "GETKEYS <full-command>",
             "    Return the keys of a full command line.", "GETKEYSANDFLAGS <full-command>",
             "    Return the keys of a full command line and their access flags."});
}

constexpr SubCommand kCommandSubs[] = {
    {.name = "count", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = CommandCount,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns the number of commands."}},
    {.name = "info", .arity = -2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = CommandInfo,
     .docs = {.group = "server", .since = "2.8.13",
              .complexity = "O(N) where N is the number of commands to look up",
              .summary = "Returns information about commands.",
              .tips = "nondeterministic_output_order"}},
    {.name = "docs", .arity = -2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = CommandDocsCmd,
     .docs = {.group = "server", .since = "7.0.0",
              .complexity = "O(N) where N is the number of commands to look up",
              .summary = "Returns documentary information about commands.",
              .tips = "nondeterministic_output_order"}},
    {.name = "list", .arity = -2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = CommandList,
     .docs = {.group = "server", .since = "7.0.0",
              .complexity = "O(N) where N is the total number of Redis commands",
              .summary = "Returns a list of command names.",
              .tips = "nondeterministic_output_order"}},
    {.name = "getkeys", .arity = -4, .flags = kLoading | kStale,
     .acl_categories = "slow connection", .handler = CommandGetKeys<false>,
     .docs = {.group = "server", .since = "2.8.13",
              .complexity = "O(N) where N is the number of arguments to the command",
              .summary = "Extracts the key names from an arbitrary command."}},
    {.name = "getkeysandflags", .arity = -4, .flags = kLoading | kStale,
     .acl_categories = "slow connection", .handler = CommandGetKeys<true>,
     .docs = {.group = "server", .since = "7.0.0",
              .complexity = "O(N) where N is the number of arguments to the command",
              .summary = "Extracts the key names and access flags from an arbitrary command."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = CommandHelp,
     .docs = {.group = "server", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about subcommands."}},
};

constexpr Container kCommand = {"command", kCommandSubs};

void CmdCommand(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 1) {
    ctx.conn.last_command = "command";
    ctx.conn.last_subcommand = {};
    return CommandNoArgs(args, ctx);
  }
  DispatchSub(kCommand, args, ctx);
}

}  // namespace

void RegisterCommandFamily(CommandRegistry* r) {
  r->Register({.name = "command", .arity = -1, .flags = kLoading | kStale, .keys = kNoKeys,
               .acl_categories = "slow connection", .on_conn = CmdCommand,
               .docs = {.group = "server", .since = "2.8.13",
                        .complexity = "O(N) where N is the total number of Redis commands",
                        .summary = "Returns details about all commands.",
                        .tips = "nondeterministic_output_order"},
               .container = &kCommand});
}

}  // namespace shardis::server

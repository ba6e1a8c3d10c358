// Subcommands of the container commands (CONFIG, CLIENT, COMMAND): looked up by name, arity checked
// like top-level commands, and reported by COMMAND INFO/DOCS/LIST as "container|sub".
//
// Each family file defines its container's table, names it in its command's registration
// (CommandSpec::container), and runs it with DispatchSub; COMMAND enumerates them with
// Containers().
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "core/reply_builder.h"
#include "server/command.h"

namespace shardis::server {

// One subcommand's entry, with the same facts as a command's (command.h).
struct SubCommand {
  std::string_view name;  // lower case
  int arity;              // Redis arity, counting the container name and the subcommand
  uint32_t flags;
  KeyRange keys = kNoKeys;  // Redis' legacy key range of the subcommand (OBJECT ENCODING key)
  std::string_view acl_categories;
  ConnHandler handler;
  CommandDocs docs = {};  // key_flags unused: COMMAND reports no key specs for subcommands
};

// The key of the keyed subcommands (OBJECT ENCODING key, XGROUP CREATE key ...): args[2].
inline constexpr KeyRange kSubKey = {2, 2, 1};

struct Container {
  std::string_view name;  // lower case
  std::span<const SubCommand> subs;
};

// The flags Redis gives its administrative subcommands (CONFIG GET, CLIENT LIST, ...).
inline constexpr uint32_t kAdminSub = kAdmin | kNoScript | kLoading | kStale;

// Adds a container to the ones COMMAND reports (`container` must have static storage). Called by
// CommandRegistry::Register for a command with a container, at start, before any connection is
// served; the list is read-only afterwards.
void AddContainer(const Container& container);

// Every registered container, in registration order.
std::span<const Container> Containers();

// Case-insensitive lookups; nullptr when there is no such container or subcommand.
const Container* FindContainer(std::string_view name);
const SubCommand* FindSub(const Container& container, std::string_view name);

// The flags a call runs with: for a container, those of the subcommand `sub_name` names (its
// args[1]; XGROUP CREATE writes, XGROUP HELP does not), else the command's.
uint32_t CallFlags(const CommandSpec& spec, std::string_view sub_name);

// Redis' arity check: arity N = exactly N arguments (with the name), -N = at least N.
bool ArityOk(int arity, size_t argc);

// The subcommand args[1] names, or null with Redis' error (without "ERR ") in *error when it is
// unknown or has the wrong arity. args.size() >= 2.
const SubCommand* CheckSub(const Container& container, ArgSlice args, std::string* error);

// Redis' addReplySubcommandSyntaxError for a subcommand whose arguments its handler rejects:
// "ERR unknown subcommand or wrong number of arguments for '<args[1]>'. Try <ARGS[0]> HELP."
std::string SubcommandSyntaxError(ArgSlice args);

// Runs the subcommand of `container` named by args[1], with Redis' errors for unknown ones and
// wrong arity.
void DispatchSub(const Container& container, ArgSlice args, ConnContext& ctx);

// Replies a HELP text as Redis does: an array of status lines.
void ReplyHelp(core::ReplyBuilder& rb, std::string_view container,
               std::initializer_list<std::string_view> lines);

}  // namespace shardis::server

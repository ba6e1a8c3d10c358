#include "server/subcommand.h"

#include <vector>

#include "core/string_util.h"
#include "server/connection_state.h"

namespace shardis::server {

namespace {

std::vector<Container>& MutableContainers() {
  static std::vector<Container>* containers = new std::vector<Container>();
  return *containers;
}

}  // namespace

void AddContainer(const Container& container) { MutableContainers().push_back(container); }

std::span<const Container> Containers() { return MutableContainers(); }

const Container* FindContainer(std::string_view name) {
  for (const Container& c : Containers()) {
    if (core::EqualsIgnoreCase(c.name, name)) return &c;
  }
  return nullptr;
}

const SubCommand* FindSub(const Container& c, std::string_view name) {
  for (const SubCommand& s : c.subs) {
    if (core::EqualsIgnoreCase(s.name, name)) return &s;
  }
  return nullptr;
}

uint32_t CallFlags(const CommandSpec& spec, std::string_view sub_name) {
  if (spec.container == nullptr) return spec.flags;
  const SubCommand* sub = FindSub(*spec.container, sub_name);
  return sub != nullptr ? sub->flags : spec.flags;
}

bool ArityOk(int arity, size_t argc) {
  return arity >= 0 ? argc == size_t(arity) : argc >= size_t(-arity);
}

const SubCommand* CheckSub(const Container& container, ArgSlice args, std::string* error) {
  const SubCommand* sub = FindSub(container, args[1]);
  if (sub == nullptr) {
    *error = core::Concat("unknown subcommand '", args[1].substr(0, 128), "'. Try ",
                          core::ToUpper(args[0]), " HELP.");
    return nullptr;
  }
  if (!ArityOk(sub->arity, args.size())) {
    *error = core::Concat("wrong number of arguments for '", container.name, "|", sub->name,
                          "' command");
    return nullptr;
  }
  return sub;
}

std::string SubcommandSyntaxError(ArgSlice args) {
  return core::Concat("ERR unknown subcommand or wrong number of arguments for '",
                      args[1].substr(0, 128), "'. Try ", core::ToUpper(args[0]), " HELP.");
}

void DispatchSub(const Container& container, ArgSlice args, ConnContext& ctx) {
  std::string error;
  const SubCommand* sub = CheckSub(container, args, &error);
  if (sub == nullptr) return ctx.rb.Error(core::Concat("ERR ", error));
  // CLIENT LIST shows the command a client runs now (or ran last) by its full name.
  ctx.conn.last_command = container.name;
  ctx.conn.last_subcommand = sub->name;
  sub->handler(args, ctx);
}

void ReplyHelp(core::ReplyBuilder& rb, std::string_view container,
               std::initializer_list<std::string_view> lines) {
  rb.ArrayHeader(lines.size() + 3);
  rb.SimpleString(
      core::Concat(container, " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"));
  for (std::string_view line : lines) rb.SimpleString(line);
  rb.SimpleString("HELP");
  rb.SimpleString("    Prints this help.");
}

}  // namespace shardis::server

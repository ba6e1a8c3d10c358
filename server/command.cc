#include "server/command.h"

#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>
#include <glog/logging.h>

namespace shardis::server {

void CommandRegistry::Register(const CommandSpec& spec) {
  CHECK((spec.on_shard == nullptr) != (spec.on_conn == nullptr)) << spec.name;
  CHECK(specs_.emplace(std::string(spec.name), spec).second) << "duplicate command " << spec.name;
}

void CommandRegistry::RegisterKeyCommand(std::string_view name, int arity, uint32_t flags,
                                         std::string_view acl_categories, ShardHandler handler) {
  Register({.name = name,
            .arity = arity,
            .flags = flags,
            .first_key = 1,
            .last_key = 1,
            .key_step = 1,
            .acl_categories = acl_categories,
            .on_shard = handler});
}

void CommandRegistry::RegisterMultiKeyCommand(std::string_view name, int arity, uint32_t flags,
                                              std::string_view acl_categories,
                                              ConnHandler handler) {
  Register({.name = name,
            .arity = arity,
            .flags = flags,
            .first_key = 1,
            .last_key = -1,
            .key_step = 1,
            .acl_categories = acl_categories,
            .on_conn = handler});
}

void CommandRegistry::RegisterKeylessCommand(std::string_view name, int arity, uint32_t flags,
                                             std::string_view acl_categories, ConnHandler handler) {
  Register({.name = name,
            .arity = arity,
            .flags = flags,
            .first_key = 0,
            .last_key = 0,
            .key_step = 0,
            .acl_categories = acl_categories,
            .on_conn = handler});
}

const CommandSpec* CommandRegistry::Find(std::string_view name) const {
  // Command names are short: lower-case into a stack buffer instead of allocating.
  char buf[32];
  if (name.size() > sizeof(buf)) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) buf[i] = absl::ascii_tolower(name[i]);
  auto it = specs_.find(std::string_view(buf, name.size()));
  return it == specs_.end() ? nullptr : &it->second;
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
  RegisterInfoCommand(r);
  RegisterConfigFamily(r);
  RegisterCommandFamily(r);
  RegisterClientFamily(r);
  RegisterMultiFamily(r);
  RegisterBlockingFamily(r);
  RegisterPubSubFamily(r);
}

}  // namespace shardis::server

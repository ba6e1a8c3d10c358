// MODULE: shardis loads no modules (it has no module API), but answers MODULE as a Redis with none
// loaded would: LIST is empty, LOAD and LOADEX fail as a failed load does (the reason goes to
// the log, as Redis logs why), UNLOAD finds no such module. Clients and Redis' own test suite
// call MODULE HELP and MODULE LIST to see what a server has.
#include <glog/logging.h>

#include <string_view>

#include "core/string_util.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/subcommand.h"

namespace shardis::server {

namespace {

constexpr std::string_view kLoadFailedErr =
    "ERR Error loading the extension. Please check the server logs.";

void ModuleHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "MODULE",
            {"LIST", "    Return a list of loaded modules.", "LOAD <path> [<arg> ...]",
             "    Load a module library from <path>, passing to it any optional arguments.",
             "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
             "    Load a module library from <path>, while passing it module configurations and "
             "optional arguments.",
             "UNLOAD <name>", "    Unload a module."});
}

void ModuleList(ArgSlice, ConnContext& ctx) { ctx.rb.ArrayHeader(0); }

void ModuleLoad(ArgSlice args, ConnContext& ctx) {
  LOG(WARNING) << "Module " << args[2] << " failed to load: shardis does not load modules";
  ctx.rb.Error(kLoadFailedErr);
}

void ModuleUnload(ArgSlice, ConnContext& ctx) {
  ctx.rb.Error("ERR Error unloading module: no such module with that name");
}

// Redis' flags for the subcommands that change the modules (protected by enable-module-command,
// which shardis fixes at yes: there is nothing a module could do here).
constexpr uint32_t kModuleChange = kNoAsyncLoading | kAdmin | kNoScript;
constexpr std::string_view kModuleAcl = "admin slow dangerous";

constexpr SubCommand kModuleSubs[] = {
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = ModuleHelp,
     .docs = {.group = "server", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
    {.name = "list", .arity = 2, .flags = kAdmin | kNoScript, .acl_categories = kModuleAcl,
     .handler = ModuleList,
     .docs = {.group = "server", .since = "4.0.0",
              .complexity = "O(N) where N is the number of loaded modules.",
              .summary = "Returns all loaded modules.",
              .tips = "nondeterministic_output_order"}},
    {.name = "load", .arity = -3, .flags = kModuleChange, .acl_categories = kModuleAcl,
     .handler = ModuleLoad,
     .docs = {.group = "server", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Loads a module."}},
    {.name = "loadex", .arity = -3, .flags = kModuleChange, .acl_categories = kModuleAcl,
     .handler = ModuleLoad,
     .docs = {.group = "server", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Loads a module using extended parameters."}},
    {.name = "unload", .arity = 3, .flags = kModuleChange, .acl_categories = kModuleAcl,
     .handler = ModuleUnload,
     .docs = {.group = "server", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Unloads a module."}},
};

constexpr Container kModule = {"module", kModuleSubs};

void CmdModule(ArgSlice args, ConnContext& ctx) { DispatchSub(kModule, args, ctx); }

}  // namespace

void RegisterModuleFamily(CommandRegistry* r) {
  r->Register({.name = "module", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdModule,
               .docs = {.group = "server", .since = "4.0.0",
                        .complexity = "Depends on subcommand.",
                        .summary = "A container for module commands."},
               .container = &kModule});
}

}  // namespace shardis::server

// ACL CAT|DELUSER|DRYRUN|GENPASS|GETUSER|HELP|LIST|LOAD|LOG|SAVE|SETUSER|USERS|WHOAMI, with
// Redis 7.2's replies (acl.c's aclCommand), and the aclfile.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "core/string_util.h"
#include "server/acl_file.h"
#include "server/acl_users.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/subcommand.h"

namespace shardis::server {

namespace {

void AclSetUser(ArgSlice args, ConnContext& ctx) {
  const std::string_view name = args[2];
  if (AclHasSpaces(name)) {
    return ctx.rb.Error("ERR Usernames can't contain spaces or null characters");
  }
  const std::string err = SetAclUser(name, args.subspan(3), &ctx);
  if (!err.empty()) return ctx.rb.Error(core::Concat("ERR ", err));
  ctx.rb.Ok();
}

void AclDelUser(ArgSlice args, ConnContext& ctx) {
  for (std::string_view name : args.subspan(2)) {
    if (name == "default") return ctx.rb.Error("ERR The 'default' user cannot be removed");
  }
  ctx.rb.Integer(int64_t(DeleteAclUsers(args.subspan(2), &ctx)));
}

void ReplySelector(core::ReplyBuilder& rb, const AclSelector& s) {
  rb.Bulk("commands");
  rb.Bulk(DescribeAclCommands(s));
  rb.Bulk("keys");
  rb.Bulk(DescribeAclKeys(s));
  rb.Bulk("channels");
  rb.Bulk(DescribeAclChannels(s));
}

void AclGetUser(ArgSlice args, ConnContext& ctx) {
  const AclUserPtr u = FindAclUser(args[2]);
  if (u == nullptr) return ctx.rb.Null();
  ctx.rb.MapHeader(6);
  ctx.rb.Bulk("flags");
  std::vector<std::string_view> flags = {u->enabled ? "on" : "off"};
  if (u->nopass) flags.push_back("nopass");
  flags.push_back(u->sanitize_payload ? "sanitize-payload" : "skip-sanitize-payload");
  ctx.rb.SetHeader(flags.size());
  for (std::string_view f : flags) ctx.rb.Bulk(f);
  ctx.rb.Bulk("passwords");
  ctx.rb.ArrayHeader(u->passwords.size());
  for (const std::string& p : u->passwords) ctx.rb.Bulk(p);
  ReplySelector(ctx.rb, u->selectors[0]);
  ctx.rb.Bulk("selectors");
  ctx.rb.ArrayHeader(u->selectors.size() - 1);
  for (size_t i = 1; i < u->selectors.size(); ++i) {
    ctx.rb.MapHeader(3);
    ReplySelector(ctx.rb, u->selectors[i]);
  }
}

void AclList(ArgSlice, ConnContext& ctx) {
  const std::vector<AclUserPtr> users = AllAclUsers();
  ctx.rb.ArrayHeader(users.size());
  for (const AclUserPtr& u : users) ctx.rb.Bulk(AclFileLine(*u));
}

void AclUsers(ArgSlice, ConnContext& ctx) {
  const std::vector<AclUserPtr> users = AllAclUsers();
  ctx.rb.ArrayHeader(users.size());
  for (const AclUserPtr& u : users) ctx.rb.Bulk(u->name);
}

void AclWhoAmI(ArgSlice, ConnContext& ctx) {
  if (ctx.conn.user == nullptr) return ctx.rb.Null();  // the AOF's client, as Redis' has none
  ctx.rb.Bulk(ctx.conn.user->name);
}

// ACL CAT [category]: the categories, or the commands and subcommands of one.
void AclCat(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 2) {
    ctx.rb.ArrayHeader(AclCategories().size());
    for (std::string_view c : AclCategories()) ctx.rb.Bulk(c);
    return;
  }
  if (args.size() > 3) return ctx.rb.Error(SubcommandSyntaxError(args));
  const uint32_t bit = AclCategoryBit(args[2]);
  if (bit == 0) {
    return ctx.rb.Error(core::Concat("ERR Unknown category '", args[2].substr(0, 128), "'"));
  }
  auto in_category = [&](std::string_view cats) {
    for (std::string_view c : core::SplitWords(cats)) {
      if (AclCategoryBit(c) == bit) return true;
    }
    return false;
  };
  std::vector<std::string> names;
  for (const auto& [name, spec] : Registry().all()) {
    if (in_category(spec.acl_categories)) names.emplace_back(spec.name);
    if (spec.container == nullptr) continue;
    for (const SubCommand& sub : spec.container->subs) {
      if (in_category(sub.acl_categories)) names.push_back(core::Concat(spec.name, "|", sub.name));
    }
  }
  ctx.rb.ArrayHeader(names.size());
  for (const std::string& n : names) ctx.rb.Bulk(n);
}

// ACL GENPASS [bits]: random hex, 256 bits by default.
void AclGenPass(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(SubcommandSyntaxError(args));
  int64_t bits = 256;
  if (args.size() == 3) {
    ArgParser p(args, 2);
    bits = p.Next<int64_t>();
    if (p.ReplyError(ctx.rb)) return;
  }
  constexpr int64_t kMaxBits = 4096;
  if (bits <= 0 || bits > kMaxBits) {
    return ctx.rb.Error(
        "ERR ACL GENPASS argument must be the number of bits for the output password, a "
        "positive number up to 4096");
  }
  // std::random_device reads the kernel's CSPRNG (getrandom) on Linux, as Redis' /dev/urandom.
  std::random_device rd;
  constexpr char kHex[] = "0123456789abcdef";
  std::string pass(size_t((bits + 3) / 4), '0');
  for (char& c : pass) c = kHex[rd() & 15];
  ctx.rb.Bulk(pass);
}

// ACL LOG [count | RESET]
void AclLog(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(SubcommandSyntaxError(args));
  int64_t count = 10;
  if (args.size() == 3) {
    if (core::EqualsIgnoreCase(args[2], "reset")) {
      ResetAclLog();
      return ctx.rb.Ok();
    }
    ArgParser p(args, 2);
    count = p.Next<int64_t>();
    if (p.ReplyError(ctx.rb)) return;
  }
  ReplyAclLog(ctx, count);
}

// ACL DRYRUN user command [arg ...]: OK, or the verbose denial as a bulk string.
void AclDryRun(ArgSlice args, ConnContext& ctx) {
  const AclUserPtr u = FindAclUser(args[2]);
  if (u == nullptr) return ctx.rb.Error(core::Concat("ERR User '", args[2], "' not found"));
  ArgSlice cmd = args.subspan(3);
  const CommandSpec* spec = Registry().Find(cmd[0]);
  const SubCommand* sub = nullptr;
  if (spec != nullptr && spec->container != nullptr && cmd.size() > 1) {
    sub = FindSub(*spec->container, cmd[1]);
    if (sub == nullptr) spec = nullptr;  // Redis' lookupCommand finds no "container|unknown"
  }
  if (spec == nullptr) return ctx.rb.Error(core::Concat("ERR Command '", cmd[0], "' not found"));
  const int arity = sub != nullptr ? sub->arity : spec->arity;
  if (!ArityOk(arity, cmd.size())) {
    return ctx.rb.Error(core::Concat("ERR wrong number of arguments for '",
                                     AclCommandName(*spec, sub), "' command"));
  }
  const AclCheck check = CheckAclCommand(*u, *spec, sub, cmd);
  if (check.denial != AclDenial::kNone) {
    return ctx.rb.Bulk(AclDenialMessage(*u, check, *spec, sub, cmd, /*verbose=*/true));
  }
  ctx.rb.Ok();
}

void AclLoad(ArgSlice, ConnContext& ctx) {
  if (AclFile().empty()) return ctx.rb.Error(kNoAclFileErr);
  const std::string err = LoadAclFile(&ctx);
  if (!err.empty()) return ctx.rb.Error(core::Concat("ERR ", err));
  ctx.rb.Ok();
}

void AclSave(ArgSlice, ConnContext& ctx) {
  if (AclFile().empty()) return ctx.rb.Error(kNoAclFileErr);
  if (!SaveAclFile()) {
    return ctx.rb.Error(
        "ERR There was an error trying to save the ACLs. Please check the server logs for more "
        "information");
  }
  ctx.rb.Ok();
}

void AclHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "ACL",
            {"CAT [<category>]",
             "    List all commands that belong to <category>, or all command categories",
             "    when no category is specified.",
             "DELUSER <username> [<username> ...]",
             "    Delete a list of users.",
             "DRYRUN <username> <command> [<arg> ...]",
             "    Returns whether the user can execute the given command without executing the "
             "command.",
             "GETUSER <username>",
             "    Get the user's details.",
             "GENPASS [<bits>]",
             "    Generate a secure 256-bit user password. The optional `bits` argument can",
             "    be used to specify a different size.",
             "LIST",
             "    Show users details in config file format.",
             "LOAD",
             "    Reload users from the ACL file.",
             "LOG [<count> | RESET]",
             "    Show the ACL log entries.",
             "SAVE",
             "    Save the current config to the ACL file.",
             "SETUSER <username> <attribute> [<attribute> ...]",
             "    Create or modify a user with the specified attributes.",
             "USERS",
             "    List all the registered usernames.",
             "WHOAMI",
             "    Return the current connection username."});
}

constexpr uint32_t kAclFlags = kAdminSub;
constexpr std::string_view kAdminCats = "admin slow dangerous";
constexpr uint32_t kOpenFlags = kNoScript | kLoading | kStale;
constexpr std::string_view kServer = "server";
constexpr std::string_view kSince = "6.0.0";
constexpr std::string_view kPerUser = "O(N). Where N is the number of configured users.";

constexpr SubCommand kAclSubs[] = {
    {.name = "cat", .arity = -2, .flags = kOpenFlags, .acl_categories = "slow",
     .handler = AclCat,
     .docs = {.group = kServer, .since = kSince,
              .complexity = "O(1) since the categories and commands are a fixed set.",
              .summary = "Lists the ACL categories, or the commands inside a category."}},
    {.name = "deluser", .arity = -3, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclDelUser,
     .docs = {.group = kServer, .since = kSince,
              .complexity = "O(1) amortized time considering the typical user.",
              .summary = "Deletes ACL users, and terminates their connections."}},
    {.name = "dryrun", .arity = -4, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclDryRun,
     .docs = {.group = kServer, .since = "7.0.0", .complexity = "O(1).",
              .summary = "Simulates the execution of a command by a user, without executing "
                         "the command."}},
    {.name = "genpass", .arity = -2, .flags = kOpenFlags, .acl_categories = "slow",
     .handler = AclGenPass,
     .docs = {.group = kServer, .since = kSince, .complexity = "O(1)",
              .summary = "Generates a pseudorandom, secure password that can be used to "
                         "identify ACL users."}},
    {.name = "getuser", .arity = 3, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclGetUser,
     .docs = {.group = kServer, .since = kSince,
              .complexity = "O(N). Where N is the number of password, command and pattern rules "
                            "that the user has.",
              .summary = "Lists the ACL rules of a user."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = AclHelp,
     .docs = {.group = kServer, .since = kSince, .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
    {.name = "list", .arity = 2, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclList,
     .docs = {.group = kServer, .since = kSince, .complexity = kPerUser,
              .summary = "Dumps the effective rules in ACL file format."}},
    {.name = "load", .arity = 2, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclLoad,
     .docs = {.group = kServer, .since = kSince, .complexity = kPerUser,
              .summary = "Reloads the rules from the configured ACL file."}},
    {.name = "log", .arity = -2, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclLog,
     .docs = {.group = kServer, .since = kSince,
              .complexity = "O(N) with N being the number of entries shown.",
              .summary = "Lists recent security events generated due to commands rejected by "
                         "ACL rules."}},
    {.name = "save", .arity = 2, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclSave,
     .docs = {.group = kServer, .since = kSince, .complexity = kPerUser,
              .summary = "Saves the effective ACL rules in the configured ACL file."}},
    {.name = "setuser", .arity = -3, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclSetUser,
     .docs = {.group = kServer, .since = kSince,
              .complexity = "O(N). Where N is the number of rules provided.",
              .summary = "Creates and modifies an ACL user and its rules."}},
    {.name = "users", .arity = 2, .flags = kAclFlags, .acl_categories = kAdminCats,
     .handler = AclUsers,
     .docs = {.group = kServer, .since = kSince, .complexity = kPerUser,
              .summary = "Lists all ACL users."}},
    {.name = "whoami", .arity = 2, .flags = kOpenFlags, .acl_categories = "slow",
     .handler = AclWhoAmI,
     .docs = {.group = kServer, .since = kSince, .complexity = "O(1)",
              .summary = "Returns the authenticated username of the current connection."}},
};
constexpr Container kAcl = {"acl", kAclSubs};

void CmdAcl(ArgSlice args, ConnContext& ctx) { DispatchSub(kAcl, args, ctx); }

}  // namespace

void RegisterAclFamily(CommandRegistry* r) {
  r->Register({.name = "acl", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdAcl,
               .docs = {.group = "server", .since = "6.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about users and their permissions."},
               .container = &kAcl});
}

}  // namespace shardis::server

// AUTH and ACL WHOAMI/LIST/USERS/CAT for the single default user (see auth.h).
#include "server/auth.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "core/sha256.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/subcommand.h"

DEFINE_string(requirepass, "",
              "password of the default user; clients must AUTH before other commands "
              "(empty: no authentication)");

namespace shardis::server {

namespace {

// The password itself is read only by AUTH, HELLO AUTH, ACL LIST and CONFIG GET (never per
// command), so a mutex around it is fine; the per-command question "is a password set?" is the
// atomic, written under the mutex and read without it (relaxed: a client racing a CONFIG SET may
// see either answer, as it may in Redis).
struct Password {
  std::mutex mu;
  std::string value;
  bool loaded = false;  // FLAGS_requirepass copied in (at first use, after flags are parsed)
};
std::atomic<int> g_has_password{-1};  // -1: not loaded yet

Password& ThePassword() {
  static Password p;
  return p;
}

// Copies --requirepass in at first use. Callers hold p.mu.
void LoadLocked(Password& p) {
  if (p.loaded) return;
  p.value = FLAGS_requirepass;
  p.loaded = true;
  g_has_password.store(p.value.empty() ? 0 : 1, std::memory_order_relaxed);
}

// Compares the SHA-256 digests, so the time taken does not depend on where the texts differ
// (Redis' time_independent_strcmp serves the same purpose).
bool SameSecret(std::string_view a, std::string_view b) {
  const std::array<uint8_t, 32> da = core::Sha256(a), db = core::Sha256(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < da.size(); ++i) diff |= uint8_t(da[i] ^ db[i]);
  return diff == 0;
}

}  // namespace

std::string RequirePass() {
  Password& p = ThePassword();
  std::lock_guard lock(p.mu);
  LoadLocked(p);
  return p.value;
}

void SetRequirePass(std::string_view password) {
  Password& p = ThePassword();
  std::lock_guard lock(p.mu);
  p.loaded = true;
  p.value.assign(password.data(), password.size());
  g_has_password.store(p.value.empty() ? 0 : 1, std::memory_order_relaxed);
}

bool AuthRequired() {
  int has = g_has_password.load(std::memory_order_relaxed);
  if (has < 0) [[unlikely]] {
    RequirePass();  // loads the flag
    has = g_has_password.load(std::memory_order_relaxed);
  }
  return has == 1;
}

bool CheckPassword(std::string_view user, std::string_view password) {
  if (user != "default") return false;
  const std::string secret = RequirePass();
  return secret.empty() || SameSecret(secret, password);
}

namespace {

// AUTH [username] password
void CmdAuth(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(kSyntaxErr);
  if (args.size() == 2 && !AuthRequired()) {
    return ctx.rb.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  const std::string_view user = args.size() == 3 ? args[1] : std::string_view("default");
  if (!CheckPassword(user, args.back())) return ctx.rb.Error(kWrongPassErr);
  ctx.conn.authenticated = true;
  ctx.rb.Ok();
}

void AclWhoAmI(ArgSlice, ConnContext& ctx) { ctx.rb.Bulk("default"); }

void AclUsers(ArgSlice, ConnContext& ctx) {
  ctx.rb.ArrayHeader(1);
  ctx.rb.Bulk("default");
}

void AclList(ArgSlice, ConnContext& ctx) {
  const std::string secret = RequirePass();
  ctx.rb.ArrayHeader(1);
  ctx.rb.Bulk(core::Concat("user default on ",
                           secret.empty() ? "nopass" : core::Concat("#", core::Sha256Hex(secret)),
                           " ~* &* +@all"));
}

// ACL CAT [category]: the categories, or the commands of one of them (from the command table).
void AclCat(ArgSlice args, ConnContext& ctx) {
  static constexpr std::string_view kCategories[] = {
      "keyspace", "read",  "write", "set",      "sortedset", "list",       "hash",
      "string",   "bitmap", "hyperloglog", "geo", "stream", "pubsub",     "admin",
      "fast",     "slow",  "blocking", "dangerous", "connection", "transaction", "scripting"};
  if (args.size() == 2) {
    ctx.rb.ArrayHeader(std::size(kCategories));
    for (std::string_view c : kCategories) ctx.rb.Bulk(c);
    return;
  }
  const std::string wanted = core::ToLower(args[2]);
  if (std::find(std::begin(kCategories), std::end(kCategories), wanted) == std::end(kCategories)) {
    return ctx.rb.Error(core::Concat("ERR Unknown category '", args[2], "'"));
  }
  std::vector<std::string_view> names;
  for (const auto& [name, spec] : Registry().all()) {
    // acl_categories is space separated: match a whole word.
    const std::string_view cats = spec.acl_categories;
    for (size_t pos = cats.find(wanted); pos != std::string_view::npos;
         pos = cats.find(wanted, pos + 1)) {
      const size_t end = pos + wanted.size();
      if ((pos == 0 || cats[pos - 1] == ' ') && (end == cats.size() || cats[end] == ' ')) {
        names.push_back(spec.name);
        break;
      }
    }
  }
  ctx.rb.ArrayHeader(names.size());
  for (std::string_view n : names) ctx.rb.Bulk(n);
}

void AclHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "ACL",
            {"CAT [<category>]",
             "    List all commands that belong to <category>, or all command categories",
             "    when no category is specified.", "LIST",
             "    Show users details in config file format.", "USERS",
             "    List all the registered usernames.", "WHOAMI",
             "    Return the current connection username."});
}

constexpr uint32_t kAclFlags = kAdminSub;
constexpr SubCommand kAclSubs[] = {
    {.name = "whoami", .arity = 2, .flags = kNoScript | kLoading | kStale, .acl_categories = "slow",
     .handler = AclWhoAmI,
     .docs = {.group = "server", .since = "6.0.0", .complexity = "O(1)",
              .summary = "Returns the authenticated username of the current connection."}},
    {.name = "list", .arity = 2, .flags = kAclFlags, .acl_categories = "admin slow dangerous",
     .handler = AclList,
     .docs = {.group = "server", .since = "6.0.0",
              .complexity = "O(N). Where N is the number of configured users.",
              .summary = "Dumps the effective rules in ACL file format."}},
    {.name = "users", .arity = 2, .flags = kAclFlags, .acl_categories = "admin slow dangerous",
     .handler = AclUsers,
     .docs = {.group = "server", .since = "6.0.0",
              .complexity = "O(N). Where N is the number of configured users.",
              .summary = "Lists all ACL users."}},
    {.name = "cat", .arity = -2, .flags = kNoScript | kLoading | kStale, .acl_categories = "slow",
     .handler = AclCat,
     .docs = {.group = "server", .since = "6.0.0",
              .complexity = "O(1) since the categories and commands are a fixed set.",
              .summary = "Lists the ACL categories, or the commands inside a category."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = AclHelp,
     .docs = {.group = "server", .since = "6.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
};
constexpr Container kAcl = {"acl", kAclSubs};

void CmdAcl(ArgSlice args, ConnContext& ctx) { DispatchSub(kAcl, args, ctx); }

}  // namespace

void RegisterAuthFamily(CommandRegistry* r) {
  r->Register({.name = "auth", .arity = -2,
               .flags = kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = CmdAuth,
               .docs = {.group = "connection", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of passwords defined for the "
                                      "user",
                        .summary = "Authenticates the connection with a password (and a user "
                                   "name)."}});
  r->Register({.name = "acl", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdAcl,
               .docs = {.group = "server", .since = "6.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about users and their permissions."},
               .container = &kAcl});
}

}  // namespace shardis::server

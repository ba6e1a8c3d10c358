// AUTH [username] password (see auth.h).
#include "server/auth.h"

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

namespace {

// AUTH [username] password
void CmdAuth(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(kSyntaxErr);
  if (args.size() == 2 && DefaultAclUser()->nopass) {
    return ctx.rb.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  const std::string_view user = args.size() == 3 ? args[1] : std::string_view("default");
  if (!AuthenticateConnection(ctx.conn, user, args.back(), args[0])) {
    return ctx.rb.Error(kWrongPassErr);
  }
  ctx.rb.Ok();
}

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
}

}  // namespace shardis::server

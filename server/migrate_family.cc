// MIGRATE: in the command table with Redis 7.2's facts (arity, flags, its movable keys for
// COMMAND INFO, COMMAND GETKEYS and ACL key checks), but not carried out yet: it needs a
// connection to another server, which shardis does not open. It answers an error and changes
// nothing.
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"

namespace shardis::server {

namespace {

void CmdMigrate(ArgSlice, ConnContext& ctx) {
  ctx.rb.Error("ERR MIGRATE is not supported yet: shardis does not connect to other servers");
}

}  // namespace

void RegisterMigrateFamily(CommandRegistry* r) {
  r->Register({.name = "migrate", .arity = -6, .flags = kWrite, .keys = {3, 3, 1},
               .acl_categories = "keyspace write slow dangerous", .on_conn = CmdMigrate,
               .key_finder = MigrateKeys,
               .docs = {.group = "generic", .since = "2.6.0",
                        .complexity = "This command actually executes a DUMP+DEL in the source "
                                      "instance, and a RESTORE in the target instance. See the "
                                      "pages of these commands for time complexity. Also an O(N) "
                                      "data transfer between the two instances is performed.",
                        .summary = "Atomically transfers a key from one Redis instance to "
                                   "another.",
                        .key_flags = "RW access delete",
                        .tips = "nondeterministic_output"}});
}

}  // namespace shardis::server

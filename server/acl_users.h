// The ACL user table and ACL LOG: every user by name, "default" always among them.
//
// Users are immutable once published: ACL SETUSER builds a new AclUser from a copy and swaps it
// in under the table's mutex, which only ACL commands, AUTH/HELLO and new connections take (never
// a command check). Connections hold a shared_ptr to their user's rules; a change reaches them by
// a hop to every thread (PublishAclUser), each thread updating its own connections.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/acl_user.h"
#include "server/command.h"

namespace shardis::server {

struct CommandSpec;
struct ConnContext;
struct SubCommand;
struct ConnectionState;

using AclUserPtr = std::shared_ptr<const AclUser>;

AclUserPtr DefaultAclUser();
// nullptr when there is no such user.
AclUserPtr FindAclUser(std::string_view name);
// Every user, by name (ACL LIST, ACL USERS, ACL SAVE).
std::vector<AclUserPtr> AllAclUsers();

// ACL SETUSER name rule...: creates or changes the user; "" or Redis' error (without "ERR ").
// On success the connections of the user see the new rules (PublishAclUser).
std::string SetAclUser(std::string_view name, std::span<const std::string_view> rules,
                       ConnContext* ctx);
// ACL DELUSER: removes the users (not "default"), closing their connections; how many existed.
size_t DeleteAclUsers(std::span<const std::string_view> names, ConnContext* ctx);
// Replaces every user but "default" by the given ones, and "default" by its given rules if any
// (ACL LOAD); connections whose user changed or went are closed, as in Redis.
void ReplaceAclUsers(std::vector<AclUser> users, ConnContext* ctx);

// Whether user/password authenticate (an enabled user, nopass or one of its passwords; the
// password compared in constant time). HTTP basic auth asks this.
bool CheckPassword(std::string_view user, std::string_view password);

// Whether a new connection starts unauthenticated: the default user has a password or is off
// (Redis' authRequired). One relaxed atomic load.
bool AuthRequired();
// Puts a connection as new ones are: the default user, authenticated unless AuthRequired().
void ResetConnectionUser(ConnectionState& conn);
// AUTH/HELLO AUTH: on success the connection runs as `user`; on failure the attempt goes to ACL
// LOG (object: the command name as sent).
bool AuthenticateConnection(ConnectionState& conn, std::string_view user,
                            std::string_view password, std::string_view command);

// The default user's password for requirepass ("" = nopass): CONFIG GET/SET requirepass.
std::string RequirePass();
void SetRequirePass(std::string_view password);

// The check of a command line against the connection's user, for one whose rules are not
// unrestricted: "" when allowed, else Redis' -NOPERM text (without "NOPERM "), the denial logged
// in ACL LOG (in `context`; MULTI instead of top level while one is open).
std::string CheckAclCall(ConnectionState& conn, const CommandSpec& spec,
                         const SubCommand* sub, ArgSlice args,
                         AclLogContext context = AclLogContext::kTopLevel);

// Puts the rules PublishAclUsers left in conn.pending_user in force: at once for a connection
// that runs nothing, else when its batch ends (Connection::ProcessInput). Closes it when they
// revoke a channel it is subscribed to (ACL SETUSER's check).
void ApplyPendingAclUser(ConnectionState& conn);

// Adds the ACL LOG entries of denials its scripts met on other threads (CheckAclCall left them in
// conn.deferred_acl_denials); on any other thread than the connection's own, does nothing.
void LogDeferredAclDenials(ConnectionState& conn);

// ACL LOG.
void AddAclLogEntry(const ConnectionState& conn, AclDenial reason, AclLogContext context,
                    std::string_view object, std::string_view username);
void ReplyAclLog(ConnContext& ctx, int64_t count);
void ResetAclLog();
// acllog-max-len: how many entries ACL LOG keeps.
uint64_t AclLogMaxLen();
void SetAclLogMaxLen(uint64_t len);

}  // namespace shardis::server

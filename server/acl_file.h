// The aclfile (Redis' ACL SAVE / ACL LOAD format: one "user <name> <rules>" line per user) and the
// users of the config file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/acl_user.h"

namespace shardis::server {

struct ConnContext;

// --aclfile: "" when none is configured.
const std::string& AclFile();

inline constexpr std::string_view kNoAclFileErr =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users "
    "via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "
    "configuration file set) in order to store users in the Redis configuration.";

// "user <name> <rules>": ACL LIST's line of a user, and the aclfile's.
std::string AclFileLine(const AclUser& user);

// More `user <name> <rules...>` lines of the config file or the command line (the words after
// "user"), applied at start in the order added.
void AddConfigUserLines(std::vector<std::vector<std::string>> lines);
// At start, once every command is registered: the config file's users, or the aclfile's (Redis
// refuses both at once). The error message, or "".
std::string LoadAclUsersAtStart();

// ACL LOAD: replaces the users by the file's; "" or Redis' errors (nothing changes then).
std::string LoadAclFile(ConnContext* ctx);
// ACL SAVE: writes every user to the file (a temporary file renamed over it).
bool SaveAclFile();

}  // namespace shardis::server

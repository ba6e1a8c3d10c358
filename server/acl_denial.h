// Why ACL refused a command, and the ACL LOG entry that records it, apart from the users' rules so
// that a connection's state can carry entries it has yet to log (ConnectionState).
#pragma once

#include <string>

namespace shardis::server {

// Why a command was refused (Redis' ACL_DENIED_*; the order is the one Redis ranks them in when
// several selectors refuse a command).
enum class AclDenial { kNone = 0, kCommand = 1, kKey = 2, kAuth = 3, kChannel = 4 };

// ACL LOG's contexts of a denial.
enum class AclLogContext { kTopLevel, kMulti, kLua };

// A denial inside a script that ran on another thread than its client's. Its ACL LOG entry
// describes the client (CLIENT LIST's line, which reads the connection's buffers), and only the
// client's own thread may read those: the client's thread adds it after the run.
struct DeferredAclDenial {
  AclDenial reason;
  AclLogContext context;
  std::string object;
  std::string username;
};

}  // namespace shardis::server

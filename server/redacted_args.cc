#include "server/redacted_args.h"

#include "core/string_util.h"

namespace shardis::server {

namespace {

// HELLO [protover [AUTH username password] [SETNAME name]].
bool RedactedInHello(ArgSlice args, size_t i) {
  for (size_t j = 2; j + 2 < args.size(); ++j) {
    if (core::EqualsIgnoreCase(args[j], "auth")) return i == j + 1 || i == j + 2;
    if (core::EqualsIgnoreCase(args[j], "setname")) ++j;
  }
  return false;
}

// MIGRATE host port key db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS ...]: the
// options as migrateCommand reads them.
bool RedactedInMigrate(ArgSlice args, size_t i) {
  for (size_t j = 6; j < args.size(); ++j) {
    if (core::EqualsIgnoreCase(args[j], "keys")) return false;
    if (core::EqualsIgnoreCase(args[j], "auth")) {
      if (i == j + 1) return true;
      j += 1;
    } else if (core::EqualsIgnoreCase(args[j], "auth2")) {
      if (i == j + 1 || i == j + 2) return true;
      j += 2;
    }
  }
  return false;
}

}  // namespace

bool IsRedactedArg(ArgSlice args, size_t i) {
  if (args.empty() || i == 0) return false;
  if (core::EqualsIgnoreCase(args[0], "auth")) return true;
  if (core::EqualsIgnoreCase(args[0], "hello")) return RedactedInHello(args, i);
  if (core::EqualsIgnoreCase(args[0], "migrate")) return RedactedInMigrate(args, i);
  // aclCommand redacts every argument after SETUSER.
  return i >= 2 && core::EqualsIgnoreCase(args[0], "acl") &&
         core::EqualsIgnoreCase(args[1], "setuser");
}

}  // namespace shardis::server

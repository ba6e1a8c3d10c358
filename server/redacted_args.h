// Which arguments of a command line never show in MONITOR or SLOWLOG, as Redis replaces them
// with "(redacted)" (redactClientCommandArgument): passwords, and what may hold one.
#pragma once

#include <cstddef>

#include "server/command.h"

namespace shardis::server {

// Whether args[i] is shown as "(redacted)": AUTH's arguments, HELLO's AUTH username and
// password, ACL SETUSER's user and rules, MIGRATE's AUTH password and AUTH2 username and
// password.
bool IsRedactedArg(ArgSlice args, size_t i);

}  // namespace shardis::server

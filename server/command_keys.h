// Where the "movablekeys" commands keep their keys: the positions depend on the arguments
// (numkeys, STREAMS, STORE), so the legacy first/last/step range of the command table cannot say.
// These are Redis' getkeys procedures; COMMAND GETKEYS and COMMAND INFO's movablekeys flag read
// them. The handlers parse their own arguments and do not use this.
#pragma once

#include <string_view>
#include <vector>

#include "server/command.h"

namespace shardis::server {

// The procedure of a movablekeys command: appends the indexes of its keys in args (args[0] is the
// command name) to *out; returns false when the arguments are malformed.
using KeyFinder = bool (*)(ArgSlice args, std::vector<int>* out);

// nullptr when the command's keys are its legacy range (or it has none).
KeyFinder FindMovableKeys(std::string_view command_name);

}  // namespace shardis::server

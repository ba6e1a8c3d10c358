// MULTI/EXEC/DISCARD/WATCH/UNWATCH (multi_family.cc): what the connection calls.
#pragma once

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

// Inside MULTI: queues the command (replying QUEUED) or rejects it (flagging the transaction so
// that EXEC aborts), and returns true. Returns false for the commands that run at once even
// inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET). spec may be null (unknown command).
bool QueueInMulti(const CommandSpec* spec, bool arity_ok, ArgSlice args, ConnContext& ctx);

// Forgets every WATCHed key (hops to their shards). The connection calls it when it closes.
void UnwatchAll(ConnectionState& conn);

}  // namespace shardis::server

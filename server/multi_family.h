// MULTI/EXEC/DISCARD/WATCH/UNWATCH (multi_family.cc): what the connection calls.
#pragma once

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

// Inside MULTI: queues a valid command, replying QUEUED, and returns true. Returns false for the
// commands that run at once even inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
// (Commands refused before this point flag the transaction: Connection::Reject.)
bool QueueInMulti(const CommandSpec* spec, ArgSlice args, ConnContext& ctx);

// Leaves MULTI, dropping the queued commands (DISCARD, RESET).
void DiscardMulti(ConnectionState& conn);

// Forgets every WATCHed key (hops to their shards). The connection calls it when it closes.
void UnwatchAll(ConnectionState& conn);

}  // namespace shardis::server

// Client-side caching, as Redis 6+ has it: CLIENT TRACKING | CACHING | GETREDIR | TRACKINGINFO,
// and the invalidation messages.
//
// The shards remember who read which key (shard/tracking_table.h) and send an invalidation to the
// reader's thread when the key changes. There, the reader's connection gets it as a RESP3 push
// (`>2 invalidate [keys]`), or it goes on to the client the reader redirects to (REDIRECT id),
// which may live on yet another thread: as a push if that one speaks RESP3, as a message of the
// `__redis__:invalidate` channel if it is subscribed to anything in RESP2. A redirect client that
// is gone leaves the reader a `tracking-redir-broken` push (RESP3).
//
// Differences from Redis: messages from different shards travel apart, so BCAST sends one message
// per shard for what one command wrote on several; and an invalidation reaches the client that
// caused it after the reply of its whole pipeline batch, never before (Redis sends those of keys
// evicted before a command ahead of its reply).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

// The reader under which this client's read-only commands remember their keys now, or nullptr
// (not tracking, BCAST mode, or OPTIN/OPTOUT says not this command).
inline const shard::TrackedReader* TrackingReaderOf(const ConnectionState& c) {
  const TrackingState& t = c.tracking;
  if (!t.on) [[likely]]
    return nullptr;
  if (t.bcast || (t.optin && !t.caching) || (t.optout && t.caching)) return nullptr;
  return &t.reader;
}

// After each command of a client that gave CLIENT CACHING: the answer holds for one command (a
// whole MULTI ... EXEC), as in Redis.
void EndCachingAnswer(ConnectionState& c, const CommandSpec* spec);

// The client closes (or turns tracking off): its prefixes leave the shards. From its fiber.
void DisableTracking(ConnectionState& c);

// FLUSHALL / FLUSHDB, on each thread with its shard: the shard forgets the keys it remembered and
// every tracking client of the thread hears that all keys changed (a null invalidation).
void InvalidateTrackingOnFlush(shard::Shard& shard);

// Appends the RESP3 push that invalidates keys (">2 invalidate [keys]") to out.
void AppendInvalidationPush(const std::vector<std::string>& keys, std::string* out);

// Installs the delivery of the shards' messages (at start, before serving).
void InstallTrackingDelivery();

// Clients with tracking on, over every thread (INFO tracking_clients).
size_t TrackingClients();

// The CLIENT subcommands (client_family.cc registers them).
void ClientTracking(ArgSlice args, ConnContext& ctx);
void ClientCaching(ArgSlice args, ConnContext& ctx);
void ClientGetRedir(ArgSlice args, ConnContext& ctx);
void ClientTrackingInfo(ArgSlice args, ConnContext& ctx);

}  // namespace shardis::server

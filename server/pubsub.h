// Pub/sub (pubsub.cc): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB.
//
// Subscriptions live with the subscriber: each thread has a PubSubRegistry of the channels and
// patterns its own connections subscribed to, touched only by that thread. PUBLISH hops to every
// thread (one message per thread, in parallel); each delivers to its local subscribers through
// their PushSink and counts them, and the publisher sums the counts. Nothing is shared, so nothing
// is locked; a subscriber that leaves removes itself from its own thread's registry.
#pragma once

#include "server/connection_state.h"

namespace shardis::server {

// Removes every subscription of conn (the connection calls it when it closes).
void UnsubscribeAll(ConnectionState& conn);

// Whether a RESP2 client in subscribed state may run the command (Redis: only (P|S)SUBSCRIBE,
// (P|S)UNSUBSCRIBE, PING, QUIT and RESET).
bool AllowedWhileSubscribed(std::string_view command_name);

// Whether the command's replies are pushes: (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE confirm each
// channel with one, and Redis sends them even under CLIENT REPLY OFF or SKIP (CLIENT_PUSHING).
bool RepliesArePushes(std::string_view command_name);

}  // namespace shardis::server

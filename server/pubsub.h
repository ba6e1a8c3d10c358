// Pub/sub (pubsub.cc): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB, and
// sharded pub/sub: SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH (a namespace of channels of its own, without
// patterns; in a standalone server every thread delivers them as PUBLISH does).
//
// Subscriptions live with the subscriber: each thread has a PubSubRegistry of the channels and
// patterns its own connections subscribed to, touched only by that thread. PUBLISH hops to every
// thread (one message per thread, in parallel); each delivers to its local subscribers through
// their PushSink and counts them, and the publisher sums the counts. Nothing is shared, so nothing
// is locked; a subscriber that leaves removes itself from its own thread's registry.
#pragma once

#include "server/connection_state.h"

namespace shardis::server {

// Delivers a message published on channel to this thread's subscribers (of the channel and of
// the patterns that match it); returns how many got it. Keyspace notifications use it on each
// thread (shard/keyspace_events.h).
size_t PublishOnThisThread(std::string_view channel, std::string_view message);
// Whether connections of proactor thread `thread` subscribe to any channel or pattern (read from
// any thread; a subscription this instant may not show yet).
bool ThreadHasSubscriptions(unsigned thread);

// INFO's pubsub_channels, pubsub_patterns and pubsubshard_channels: the distinct names with
// subscribers on some thread. Hops to every thread: call from a connection's fiber.
struct PubSubTotals {
  size_t channels = 0;
  size_t patterns = 0;
  size_t shard_channels = 0;
};
PubSubTotals CountPubSub();

// Removes every subscription of conn (the connection calls it when it closes).
void UnsubscribeAll(ConnectionState& conn);

// Whether a RESP2 client in subscribed state may run the command (Redis: only (P|S)SUBSCRIBE,
// (P|S)UNSUBSCRIBE, PING, QUIT and RESET).
bool AllowedWhileSubscribed(std::string_view command_name);

}  // namespace shardis::server

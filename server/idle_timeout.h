// timeout: closes normal clients that sent no command for longer than it, as Redis'
// clientsCronHandleTimeout. Clients waiting in a blocking command, pub/sub subscribers and
// monitors are never idle in this sense. Each thread looks at its own clients from its periodic
// tick, so nothing is done per request.
#pragma once

#include <cstdint>

namespace shardis::server {

// Seconds; 0 = never. Safe from any thread.
int64_t IdleTimeout();
void SetIdleTimeout(int64_t seconds);

// On each shard thread, from its 100 ms tick: about once a second, closes this thread's RESP
// clients idle past the timeout (through their PushSink::Kill).
void CloseIdleClients();

}  // namespace shardis::server

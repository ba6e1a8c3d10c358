// tcp-keepalive: TCP keepalive probes on every accepted client socket (RESP and memcached), as
// Redis' anetKeepAlive, so that the connection of a peer that vanished without closing (a crashed
// host, a NAT or load balancer that dropped the flow) is noticed and closed instead of holding a
// client slot forever. A new value applies to connections accepted after it, as in Redis.
#pragma once

#include <cstdint>

namespace shardis::server {

// Seconds of idleness before the first probe; 0 = off. Safe from any thread.
int64_t TcpKeepAlive();
void SetTcpKeepAlive(int64_t seconds);

// Turns keepalive on for an accepted socket with the current setting (nothing when it is 0).
void ApplyTcpKeepAlive(int fd);

}  // namespace shardis::server

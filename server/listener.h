// Listener: every thread accepts on its own SO_REUSEPORT socket bound to the same address, so the
// kernel spreads connections over the threads and a connection stays where it was accepted.
#pragma once

#include <string>

#include <absl/status/statusor.h>

#include "io/proactor.h"

namespace shardis::server {

// Opens a listening socket with SO_REUSEPORT on bind:port (IPv4 or IPv6 address or host name).
absl::StatusOr<int> OpenListenSocket(const std::string& bind, int port);

enum class Protocol { kResp, kMemcache, kHttp };

// Accepts on listen_fd in the calling fiber, one fiber per connection (a RESP Connection, a
// MemcacheConnection, or an HTTP request on --admin_port), until StopServing().
void AcceptLoop(io::Proactor* proactor, int listen_fd, Protocol protocol = Protocol::kResp);

// On the calling thread: stop accepting, and let every connection finish the requests it has read
// (its next read sees end-of-file). Returns at once; ConnectionCount() tells when they are gone.
void StopServing();
size_t ConnectionCount();

}  // namespace shardis::server

// Listener: every thread accepts on its own SO_REUSEPORT socket bound to the same address, so the
// kernel spreads connections over the threads and a connection stays where it was accepted. The
// port is still one server's: a port another process listens on stops the start.
#pragma once

#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "io/proactor.h"

namespace shardis::server {

// Opens `count` listening sockets with SO_REUSEPORT on bind:port (IPv4 or IPv6 address or host
// name), one per thread. Fails, leaving nothing open, when another socket already holds the
// port, with Redis' text: "Could not create server TCP listening socket <bind>:<port>: bind:
// Address already in use".
absl::StatusOr<std::vector<int>> OpenListenSockets(const std::string& bind, int port,
                                                   unsigned count);

enum class Protocol { kResp, kMemcache, kHttp };

// On the calling (proactor) thread: starts a fiber that accepts on listen_fd, one fiber per
// connection (a RESP Connection, a MemcacheConnection, or an HTTP request on --admin_port), until
// StopServing() or StopAccepting(listen_fd); it then closes listen_fd. tls: the port speaks TLS
// (RESP on tls-port, memcached with --memcached_tls, HTTP with --admin_tls).
void StartAccepting(io::Proactor* proactor, int listen_fd, Protocol protocol = Protocol::kResp,
                    bool tls = false);

// On the thread that accepts on listen_fd: it stops listening at once (new clients are refused
// and the port can be bound again), and its accept fiber ends and closes it. The connections it
// accepted stay.
void StopAccepting(int listen_fd);

// On the calling thread: stop accepting, and let every connection finish the requests it has read
// (its next read sees end-of-file). Returns at once; ConnectionCount() tells when they are gone.
void StopServing();
size_t ConnectionCount();

}  // namespace shardis::server

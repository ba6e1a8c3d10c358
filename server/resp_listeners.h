// The RESP listeners: the plain port and the TLS port, each one SO_REUSEPORT socket per thread
// on the same bind address. Redis' port, bind and tls-port: opened at start, and moved by CONFIG
// SET at runtime as Redis 7 does (changeListener): the old sockets stop listening, the new ones
// open, and when they cannot, CONFIG SET puts every parameter it set back (which reopens the old
// ones). Connections already accepted stay.
#pragma once

#include <string>

#include <absl/status/status.h>

#include "io/proactor_pool.h"

namespace shardis::server {

class ConfigRegistry;

// Where the RESP listeners are (or are to be, at start): safe to read from any thread.
int Port();     // 0: no plain listener
int TlsPort();  // 0: no TLS listener
std::string Bind();

// At start, before the threads: opens the sockets of the plain and the TLS port, `threads` of
// each. Fails, leaving nothing open, with Redis' text ("Could not create server TCP listening
// socket ...").
absl::Status OpenRespListeners(unsigned threads);
// On each proactor thread once it runs: accepts on this thread's sockets.
void StartRespListeners(io::Proactor* proactor);

// The parameters port, bind and tls-port (config_params.cc calls it).
void RegisterListenParams(ConfigRegistry& r);

}  // namespace shardis::server

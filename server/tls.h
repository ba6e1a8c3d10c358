// TLS for client connections: Redis' tls-* parameters, the OpenSSL server context built from
// them, and the TlsSession of each connection accepted on a TLS port.
//
// The context is built once and shared read-only: every thread holds its own reference to the
// current one (so accepting takes no lock), and a reload (CONFIG SET of a tls-* parameter) builds
// a new context and hands it to every thread, which drop the old one; connections made with the
// old context keep it until they close (OpenSSL counts the references).
#pragma once

#include <memory>

#include <absl/status/status.h>

#include "io/proactor_pool.h"
#include "io/tls_session.h"

namespace shardis::server {

class ConfigRegistry;

// At start, before the threads: builds the context from the parameters. The error is what Redis
// logs (e.g. "No tls-cert-file configured!").
absl::Status LoadTls();
// Gives the context LoadTls built to every thread of the pool, before they accept; from then on
// a changed tls-* parameter reloads it.
void StartTls(io::ProactorPool& pool);
// For a TLS port opened at runtime (CONFIG SET tls-port) when none was at start: builds the
// context and gives it to every thread, as StartTls; nothing when TLS is running already. Call
// from a fiber on a shard thread.
absl::Status StartTlsAtRuntime();
// The session of a connection accepted on this thread, with the client-certificate check that
// tls-auth-clients asks for. Only after StartTls.
std::unique_ptr<io::TlsSession> NewTlsSession();

// The tls-* parameters (config_params.cc calls it).
void RegisterTlsParams(ConfigRegistry& r);

}  // namespace shardis::server

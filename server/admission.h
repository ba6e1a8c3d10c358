// Admission of new connections (admission.cc): --maxclients and protected mode, decided once per
// accepted socket, before a Connection exists. The count of open client connections is one
// process-wide atomic, changed at accept and at close (never per request).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string_view>

namespace shardis::server {

// --maxclients, changeable at runtime (CONFIG SET maxclients). Safe from any thread.
size_t MaxClients();
void SetMaxClients(size_t n);

// --protected_mode, changeable at runtime (CONFIG SET protected-mode). Safe from any thread.
bool ProtectedMode();
void SetProtectedMode(bool on);

// Whether the peer address is on the loopback interface (127.0.0.0/8, ::1, ::ffff:127.x.y.z).
bool IsLoopback(const sockaddr_storage& peer);

// The decision of protected mode: a non-loopback peer is refused while protected mode is on and
// the default user has no password.
bool ProtectedModeRefuses(bool protected_mode, bool has_password, const sockaddr_storage& peer);

// Counts a just-accepted client connection and decides whether it may stay. Returns an empty
// view when it may; otherwise the error line to write before closing it (the connection is then
// not counted). Call ClientClosed() when an admitted connection ends.
std::string_view AdmitClient(int fd, bool resp);
void ClientClosed();

// Open client connections (RESP and memcached) in the whole process.
size_t OpenClients();

inline constexpr std::string_view kMaxClientsErr = "-ERR max number of clients reached\r\n";

}  // namespace shardis::server

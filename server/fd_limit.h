// The open-files limit and maxclients, as Redis' adjustOpenFilesLimit: at start the server raises
// RLIMIT_NOFILE to what maxclients needs plus the descriptors it uses itself and, where the hard
// limit does not allow that, lowers maxclients instead. A client past the limit is then refused
// with "max number of clients reached" rather than left waiting in the accept backlog while
// accept fails with EMFILE.
#pragma once

#include <cstddef>

#include <absl/status/status.h>

namespace shardis::server {

// Descriptors the server needs besides its clients: Redis' reserve (CONFIG_MIN_RESERVED_FDS, for
// log and config files, DNS and the like) plus, on each thread, its io_uring, its eventfd and one
// listening socket per port.
size_t ReservedFds(unsigned threads, unsigned ports);

// At start, before serving: remembers `reserved` for CheckMaxClients, raises the limit for
// MaxClients() clients or lowers maxclients to what the limit allows, and logs either as Redis
// does. An error (Redis' text) when not even one client fits: the server must not start.
absl::Status AdjustOpenFilesLimit(size_t reserved);

// CONFIG SET maxclients n: raises the limit for n clients when needed; an error (Redis' text)
// when the system does not allow it, and maxclients must stay as it is.
absl::Status CheckMaxClients(size_t n);

}  // namespace shardis::server

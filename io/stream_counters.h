// StreamCounters: what the streams (io/stream.h) of one kind add to on one thread.
#pragma once

#include <cstdint>

namespace shardis::io {

// What the streams of one kind add to: a thread's counters, summed over its connections (INFO's
// total_net_input_bytes, total_reads_processed, ...; memcached's bytes_read, ...). Plain fields:
// a stream runs on the counters' own thread.
struct StreamCounters {
  uint64_t bytes_in = 0;   // with TLS, the plaintext, as Redis counts it
  uint64_t bytes_out = 0;  // the same
  // Receive completions (bytes, the end of input or an error): Redis counts a read per
  // readQueryFromClient, one read(2) of the socket.
  uint64_t reads = 0;
  // Sends handed to the kernel, the rest of a short send included: Redis counts a write per
  // writeToClient, which a full socket buffer ends until the socket is writable again.
  uint64_t writes = 0;
  // Send buffers released after their send because a large reply had grown them (Redis'
  // reply_buffer_shrinks: its reply buffer given back to fit what the client needs).
  uint64_t send_buffer_releases = 0;
};

}  // namespace shardis::io

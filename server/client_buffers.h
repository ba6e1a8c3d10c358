// The limits on what one client may make the server hold (Redis' client-query-buffer-limit,
// proto-max-bulk-len and client-output-buffer-limit), and the recent peaks of client buffers that
// INFO reports (client_recent_max_input_buffer / _output_buffer).
//
// The limits are process-wide and set by CONFIG SET on any thread, so they are relaxed atomics: a
// connection reads them once per read or batch (a plain load on x86), never per request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <absl/status/status.h>

namespace shardis::server {

// Redis' client classes for client-output-buffer-limit (getClientType). A replica's limits are
// accepted and shown, for configs written for Redis; shardis has no replicas yet.
enum class ClientClass : uint8_t { kNormal = 0, kReplica = 1, kPubSub = 2 };

struct OutputBufferLimit {
  uint64_t hard = 0;          // bytes; 0: none
  uint64_t soft = 0;          // bytes; 0: none
  int64_t soft_seconds = 0;   // how long the soft limit may be exceeded without a break
};

OutputBufferLimit GetOutputBufferLimit(ClientClass c);
// Parses Redis' "<class> <hard> <soft> <soft seconds> ..." (any number of classes, memory values
// with units); the error is Redis' text. SetOutputBufferLimits applies a text that parsed.
absl::Status ParseOutputBufferLimits(std::string_view text);
void SetOutputBufferLimits(std::string_view text);
// As CONFIG GET shows it: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
std::string FormatOutputBufferLimits();

// client-query-buffer-limit: a client whose received, unprocessed input exceeds it is closed.
size_t QueryBufferLimit();
void SetQueryBufferLimit(size_t bytes);
// proto-max-bulk-len: the longest bulk string a request may carry.
int64_t ProtoMaxBulkLen();
void SetProtoMaxBulkLen(int64_t bytes);

// INFO's client_recent_max_*: on each shard thread, every 100 ms, the largest input and output
// buffer of its clients goes into one of 8 one-second slots (Redis' CLIENTS_PEAK_MEM_USAGE_SLOTS);
// the recent maximum is the largest over the slots, i.e. over the last 8 seconds or so.
void SampleClientBufferPeaks();

// On each shard thread, every 100 ms: closes its clients whose output stayed over the soft
// output limit past its seconds while no more output came (a quiet pub/sub channel), as Redis'
// clientsCron does.
void CloseClientsPastSoftOutputLimit();
struct ClientBufferPeaks {
  size_t input = 0;
  size_t output = 0;
};
ClientBufferPeaks RecentClientBufferPeaks();  // this thread's

}  // namespace shardis::server

// MONITOR (monitor.cc): every command any client runs, on any thread, streamed to the monitoring
// connections as Redis formats it: +1700000000.123456 [0 127.0.0.1:5555] "set" "k" "v".
//
// With no monitor the command path pays one relaxed load (MonitorsActive). With monitors, the
// client's thread formats each line once and appends it to a per-destination outbox for every
// thread that has a monitor; at the end of the batch (FlushMonitorFeed) each outbox travels to
// its thread as one task and is pushed to the monitors there through their PushSink, the path
// pub/sub messages take. A monitor that does not read is disconnected once more than
// --monitor_output_limit bytes wait for it, so it can neither hold up the clients nor make the
// server's memory grow.
#pragma once

#include <atomic>
#include <cstddef>

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

namespace internal {
extern std::atomic<int> g_monitors;                // monitoring connections in the process
extern constinit thread_local bool tl_feed_pending;  // this thread has lines in its outboxes
void FlushMonitorFeedSlow();
}  // namespace internal

inline bool MonitorsActive() {
  return internal::g_monitors.load(std::memory_order_relaxed) > 0;
}

// Queues the MONITOR line of a command `client` ran (AUTH/HELLO passwords redacted; admin
// commands are not shown, as in Redis; a script's client shows as "lua"). Call on the client's
// thread, while args are valid.
void FeedMonitors(const ConnectionState& client, ArgSlice args);
// The same in two steps, for lines fed later (a script's, once its run is sure to stand): the
// line of one command ("" when it is not shown), and lines to queue.
std::string MonitorLine(const ConnectionState& client, ArgSlice args);
void FeedMonitorLines(std::string_view lines);

// Sends the lines queued on this thread to the monitors' threads (the connection calls it at the
// end of each batch).
inline void FlushMonitorFeed() {
  if (internal::tl_feed_pending) [[unlikely]] internal::FlushMonitorFeedSlow();
}

// Leaves monitor mode (RESET, and the connection when it closes). No-op for other clients.
void StopMonitoring(ConnectionState& conn);

// --monitor_output_limit: bytes waiting for a monitor after which it is disconnected.
size_t MonitorOutputLimit();

}  // namespace shardis::server

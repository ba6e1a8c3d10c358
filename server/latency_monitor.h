// LATENCY: Redis' latency monitor. When a command takes at least --latency_monitor_threshold
// milliseconds (0 = off), a sample is recorded for the event "command" (or "fast-command" for
// commands flagged fast), and for a shard's active expiry cycle ("expire-cycle"); one per second
// per event (the largest wins), the last 160 kept. Each thread keeps the samples of the commands
// it dispatched and of its shard's expiry; LATENCY merges them when asked.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/command.h"

namespace shardis::server {

// The runtime parameter (CONFIG SET latency-monitor-threshold), in milliseconds; 0 disables.
int64_t LatencyMonitorThreshold();
void SetLatencyMonitorThreshold(int64_t ms);

namespace detail {
extern std::atomic<int64_t> latency_threshold_ms;
}  // namespace detail

// On the dispatching thread: records a sample for `event` ("command", "fast-command").
void LatencyAddSample(const char* event, uint64_t latency_ms);
// Redis' latencyAddSampleIfNeeded: a sample when the monitor is on and it took long enough.
inline void LatencyMaybeAddEvent(const char* event, uint64_t duration_us) {
  const int64_t threshold = detail::latency_threshold_ms.load(std::memory_order_relaxed);
  if (threshold > 0 && int64_t(duration_us / 1000) >= threshold) [[unlikely]] {
    LatencyAddSample(event, duration_us / 1000);
  }
}
inline void LatencyMaybeAdd(const CommandSpec& spec, uint64_t duration_us) {
  LatencyMaybeAddEvent((spec.flags & kFast) ? "fast-command" : "command", duration_us);
}

void RegisterLatencyFamily(CommandRegistry* registry);

}  // namespace shardis::server

// LATENCY: Redis' latency monitor. When a command takes at least --latency_monitor_threshold
// milliseconds (0 = off), a sample is recorded for the event "command" (or "fast-command" for
// commands flagged fast), one per second per event (the largest wins), the last 160 kept. Each
// thread keeps the samples of the commands it dispatched; LATENCY merges them when asked.
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
inline void LatencyMaybeAdd(const CommandSpec& spec, uint64_t duration_us) {
  const int64_t threshold = detail::latency_threshold_ms.load(std::memory_order_relaxed);
  if (threshold > 0 && int64_t(duration_us / 1000) >= threshold) [[unlikely]] {
    LatencyAddSample((spec.flags & kFast) ? "fast-command" : "command", duration_us / 1000);
  }
}

void RegisterLatencyFamily(CommandRegistry* registry);

}  // namespace shardis::server

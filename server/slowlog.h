// SLOWLOG: the commands that ran longer than --slowlog_log_slower_than microseconds. Each thread
// keeps the entries of the commands it dispatched (newest first, at most --slowlog_max_len);
// SLOWLOG GET merges them by id, which a process-wide counter hands out in the order the entries
// were made.
#pragma once

#include <atomic>
#include <cstdint>

#include "server/command.h"
#include "server/connection_state.h"

namespace shardis::server {

// The two runtime parameters (CONFIG SET slowlog-log-slower-than / slowlog-max-len). Atomics, so
// any thread may set them while the others read them (relaxed: each is an independent setting).
// usec: < 0 disables the log, 0 logs every command.
int64_t SlowlogLogSlowerThan();
void SetSlowlogLogSlowerThan(int64_t usec);
uint64_t SlowlogMaxLen();
void SetSlowlogMaxLen(uint64_t len);

namespace detail {
extern std::atomic<int64_t> slowlog_slower_than_us;
}  // namespace detail

// On the dispatching thread: logs the call if it is slow enough. The check is inline (one relaxed
// load); the copy of the arguments happens only for a logged call.
void SlowlogAdd(uint64_t duration_us, ArgSlice args, const ConnectionState& conn);
inline void SlowlogMaybeAdd(uint64_t duration_us, ArgSlice args, const ConnectionState& conn) {
  const int64_t threshold = detail::slowlog_slower_than_us.load(std::memory_order_relaxed);
  if (threshold >= 0 && duration_us >= uint64_t(threshold)) [[unlikely]] {
    SlowlogAdd(duration_us, args, conn);
  }
}

void RegisterSlowlogFamily(CommandRegistry* registry);

}  // namespace shardis::server

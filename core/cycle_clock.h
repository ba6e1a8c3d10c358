// CycleClock: the cheapest clock for timing short things on one thread (every command's
// duration for INFO commandstats, latencystats and SLOWLOG). On x86 it reads the time-stamp
// counter (constant and invariant on every CPU shardis targets), which costs a few ns where a
// vDSO clock_gettime under a hypervisor's clock source cost ~6% of a pipelined GET; elsewhere it
// falls back to CLOCK_MONOTONIC. Ticks convert to ns with a rate measured once at start.
#pragma once

#include <time.h>

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace shardis::core {

class CycleClock {
 public:
  static uint64_t Now() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
#endif
  }
  // Nanoseconds in `ticks` (a difference of two Now() on the same thread).
  static uint64_t ToNs(uint64_t ticks) { return uint64_t(double(ticks) * ns_per_tick_); }
  static uint64_t FromNs(uint64_t ns) { return uint64_t(double(ns) / ns_per_tick_); }

 private:
  static const double ns_per_tick_;  // measured at static initialisation (cycle_clock.cc)
};

}  // namespace shardis::core

// The 24-bit access clock every key carries (Redis' robj.lru field; see docs/hash_table.md,
// "Access clocks"): the arithmetic only, with the time and the randomness passed in.
//
// Under an LRU policy (and noeviction, and the random and TTL policies) the clock is the time of
// the last access in seconds, modulo 2^24 (it wraps every ~194 days; an idle time is computed
// modulo the same). Under an LFU policy it is two fields: bits 23..8 the time of the last
// decrement in minutes modulo 2^16, bits 7..0 a logarithmic access counter that starts at
// kLfuInitVal, grows with probability 1 / ((counter - kLfuInitVal) * log_factor + 1) per access
// and loses one per `decay_minutes` minutes without access.
#pragma once

#include <cstdint>

namespace shardis::core {

inline constexpr uint32_t kLruClockMax = (1u << 24) - 1;
inline constexpr int64_t kLruClockResolutionMs = 1000;
inline constexpr uint32_t kLfuInitVal = 5;
inline constexpr uint32_t kLfuCounterMax = 255;

// ---- LRU.
inline uint32_t LruClock(int64_t now_ms) {
  return uint32_t(now_ms / kLruClockResolutionMs) & kLruClockMax;
}
// Milliseconds since `clock` (a whole number of seconds), allowing for one wrap of the clock.
inline int64_t LruIdleMs(uint32_t clock, int64_t now_ms) {
  const uint32_t now = LruClock(now_ms);
  const uint32_t ticks = now >= clock ? now - clock : now + (kLruClockMax - clock);
  return int64_t(ticks) * kLruClockResolutionMs;
}
// The clock of a key last accessed idle_seconds ago (RESTORE ... IDLETIME, an RDB's IDLE).
inline uint32_t LruClockIdleFor(int64_t idle_seconds, int64_t now_ms) {
  static_assert(kLruClockResolutionMs == 1000, "one tick per second: no overflow below");
  const int64_t ticks = idle_seconds;
  int64_t abs = int64_t(LruClock(now_ms)) - ticks % (int64_t(kLruClockMax) + 1);
  if (abs < 0) abs += kLruClockMax;
  return uint32_t(abs);
}

// ---- LFU.
inline uint32_t LfuMinutes(int64_t now_ms) { return uint32_t(now_ms / 60000) & 0xFFFF; }
inline uint32_t LfuClock(uint32_t counter, int64_t now_ms) {
  return (LfuMinutes(now_ms) << 8) | counter;
}
// The counter of `clock` after the decay due by now (what OBJECT FREQ shows; the clock itself
// is not changed).
inline uint32_t LfuDecayedCounter(uint32_t clock, int64_t now_ms, int64_t decay_minutes) {
  const uint32_t last = clock >> 8, counter = clock & 0xFF;
  const uint32_t now = LfuMinutes(now_ms);
  const uint32_t elapsed = now >= last ? now - last : 0xFFFF - last + now;
  const int64_t periods = decay_minutes > 0 ? elapsed / decay_minutes : 0;
  return periods >= counter ? 0 : counter - uint32_t(periods);
}
// The counter after one access; `random01` is uniform in [0, 1).
inline uint32_t LfuIncrement(uint32_t counter, int64_t log_factor, double random01) {
  if (counter >= kLfuCounterMax) return kLfuCounterMax;
  const double base = counter > kLfuInitVal ? double(counter - kLfuInitVal) : 0.0;
  return random01 < 1.0 / (base * double(log_factor) + 1.0) ? counter + 1 : counter;
}
// The clock after one access at now_ms: decay, then increment.
inline uint32_t LfuTouch(uint32_t clock, int64_t now_ms, int64_t log_factor, int64_t decay_minutes,
                         double random01) {
  const uint32_t counter = LfuDecayedCounter(clock, now_ms, decay_minutes);
  return LfuClock(LfuIncrement(counter, log_factor, random01), now_ms);
}

}  // namespace shardis::core

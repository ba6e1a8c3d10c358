// A key's access clock under the current maxmemory-policy (core/access_clock.h has the
// arithmetic): an LRU time, or an LFU counter under volatile-lfu and allkeys-lfu, as Redis keeps
// one or the other in the same 24 bits. Switching policies at runtime reinterprets the clocks
// already kept, as in Redis ("LRU and LFU data will take some time to adjust").
#pragma once

#include <cstdint>

#include "core/access_clock.h"
#include "shard/memory_limit.h"

namespace shardis::shard {

// The clock of a key created at now_ms (Redis' createObject).
inline uint32_t NewAccessClock(int64_t now_ms) {
  return IsLfuPolicy(MemoryLimit::policy()) ? core::LfuClock(core::kLfuInitVal, now_ms)
                                            : core::LruClock(now_ms);
}

// A uniform double in [0, 1) from a per-thread xorshift generator (LFU increments are random).
inline double AccessRandom01() {
  thread_local uint64_t state = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&state);
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return double(state >> 11) * 0x1.0p-53;
}

// The clock of a key after an access at now_ms (Redis' lookupKey: updateLFU or LRU_CLOCK).
inline uint32_t TouchedAccessClock(uint32_t clock, int64_t now_ms) {
  if (!IsLfuPolicy(MemoryLimit::policy())) return core::LruClock(now_ms);
  return core::LfuTouch(clock, now_ms, MemoryLimit::lfu_log_factor(), MemoryLimit::lfu_decay_time(),
                        AccessRandom01());
}

// The clock that RESTORE's FREQ / IDLETIME or a snapshot's FREQ / IDLE ask for (Redis'
// objectSetLRUOrLFU): a frequency applies under an LFU policy, an idle time under the others;
// -1 means not given. False when nothing applies.
inline bool RestoredAccessClock(int64_t frequency, int64_t idle_seconds, int64_t now_ms,
                                uint32_t* clock) {
  if (IsLfuPolicy(MemoryLimit::policy())) {
    if (frequency < 0) return false;
    *clock = core::LfuClock(uint32_t(frequency), now_ms);
    return true;
  }
  if (idle_seconds < 0) return false;
  *clock = core::LruClockIdleFor(idle_seconds, now_ms);
  return true;
}

// What a snapshot records with a key (Redis' rdbSaveKeyValuePair): its idle time in seconds
// (RDB_OPCODE_IDLE) under an LRU policy, its decayed counter (RDB_OPCODE_FREQ) under an LFU one,
// nothing (-1) under the others. `clock()` gives the key's access clock; it is read only when
// recorded (the clocks are an array apart from the entries: a cache miss per key for nothing
// under the default policy).
template <typename ClockFn>
inline void SnapshotAccessMeta(const ClockFn& clock, int64_t now_ms, int64_t* idle_seconds,
                               int* freq) {
  const EvictionPolicy policy = MemoryLimit::policy();
  if (IsLruPolicy(policy)) *idle_seconds = core::LruIdleMs(clock(), now_ms) / 1000;
  if (IsLfuPolicy(policy)) {
    *freq = int(core::LfuDecayedCounter(clock(), now_ms, MemoryLimit::lfu_decay_time()));
  }
}

// How good an eviction candidate a key is, higher = evict first (Redis' evictionPoolPopulate):
// its idle time in ms under LRU, 255 minus its decayed counter under LFU.
inline uint64_t EvictionScore(uint32_t clock, int64_t now_ms, bool lfu) {
  if (lfu) return 255 - core::LfuDecayedCounter(clock, now_ms, MemoryLimit::lfu_decay_time());
  return uint64_t(core::LruIdleMs(clock, now_ms));
}

}  // namespace shardis::shard

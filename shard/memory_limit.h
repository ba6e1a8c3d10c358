// maxmemory and the eviction policy, and the used bytes each shard publishes so that any thread
// can compare the process' total with the limit without a hop.
//
// The limit is global (Redis' semantics: INFO used_memory, the sum over the shards, against
// maxmemory), but enforcement is per shard, on the shard's own thread:
//  - noeviction: a kDenyOom command is refused when this shard's exact used bytes plus what the
//    other shards last published exceed maxmemory.
//  - the eviction policies: before a kDenyOom command, the shard evicts its own keys while it is
//    over its share, maxmemory / shards (keys are spread evenly by hash, so the shares add up to
//    the limit without any shard looking at another's table). When it has nothing left to evict
//    it refuses only if the total is over the limit. A shard over its share with nothing the
//    policy may take (volatile-* and no key with a TTL there) raises short_of_victims; the next
//    command, on any thread, then has the other shards evict past their share until the total is
//    under the limit (AdmitUnderMaxMemory), as Redis, with one keyspace, evicts wherever the
//    candidates are.
// All settings are relaxed atomics: CONFIG SET stores them from any thread, readers want a recent
// value, and nothing else is ordered by them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

namespace shardis::shard {

// Redis' exact OOM reply (without the leading '-').
inline constexpr std::string_view kOomError =
    "OOM command not allowed when used memory > 'maxmemory'.";

enum class EvictionPolicy : uint8_t {
  kVolatileLru,
  kVolatileLfu,
  kVolatileRandom,
  kVolatileTtl,
  kAllKeysLru,
  kAllKeysLfu,
  kAllKeysRandom,
  kNoEviction,
};
// Redis' names, indexed by EvictionPolicy, in Redis' order (its error text lists them so).
inline constexpr std::array<std::string_view, 8> kEvictionPolicyNames = {
    "volatile-lru", "volatile-lfu",   "volatile-random", "volatile-ttl",
    "allkeys-lru",  "allkeys-lfu",    "allkeys-random",  "noeviction"};
std::optional<EvictionPolicy> ParseEvictionPolicy(std::string_view name);  // case-insensitive
inline std::string_view EvictionPolicyName(EvictionPolicy p) {
  return kEvictionPolicyNames[size_t(p)];
}
inline bool IsVolatilePolicy(EvictionPolicy p) { return p <= EvictionPolicy::kVolatileTtl; }
// The policies that evict by the LRU time (a snapshot records each key's idle time then).
inline bool IsLruPolicy(EvictionPolicy p) {
  return p == EvictionPolicy::kVolatileLru || p == EvictionPolicy::kAllKeysLru;
}
// The policies under which a key's access clock holds an LFU counter (else an LRU time).
inline bool IsLfuPolicy(EvictionPolicy p) {
  return p == EvictionPolicy::kVolatileLfu || p == EvictionPolicy::kAllKeysLfu;
}

class MemoryLimit {
 public:
  static constexpr unsigned kMaxShards = 1024;
  // A shard republishes its used bytes when they moved by this much since the last time (and on
  // its expiry tick, 10 times a second): other threads read the slot without its cache line
  // bouncing on every write, at the price of this much staleness per shard.
  static constexpr uint64_t kPublishSlack = 64 * 1024;

  // 0 = no limit.
  static uint64_t maxmemory() { return maxmemory_.load(std::memory_order_relaxed); }
  static void set_maxmemory(uint64_t bytes) { maxmemory_.store(bytes, std::memory_order_relaxed); }
  static EvictionPolicy policy() { return policy_.load(std::memory_order_relaxed); }
  static void set_policy(EvictionPolicy p) { policy_.store(p, std::memory_order_relaxed); }
  // Keys looked at per eviction by the LRU, LFU and TTL policies (Redis' maxmemory-samples).
  static unsigned samples() { return samples_.load(std::memory_order_relaxed); }
  static void set_samples(unsigned n) { samples_.store(n, std::memory_order_relaxed); }
  // The LFU counter's growth and decay (Redis' lfu-log-factor, lfu-decay-time in minutes).
  static int64_t lfu_log_factor() { return lfu_log_factor_.load(std::memory_order_relaxed); }
  static void set_lfu_log_factor(int64_t f) { lfu_log_factor_.store(f, std::memory_order_relaxed); }
  static int64_t lfu_decay_time() { return lfu_decay_time_.load(std::memory_order_relaxed); }
  static void set_lfu_decay_time(int64_t m) { lfu_decay_time_.store(m, std::memory_order_relaxed); }

  // Set once at start by ShardSet.
  static void set_num_shards(unsigned n) { num_shards_.store(n, std::memory_order_relaxed); }
  static unsigned num_shards() { return num_shards_.load(std::memory_order_relaxed); }

  // maxmemory in a container (docs/memory.md): when maxmemory was derived from the cgroup memory
  // limit, that limit (0 otherwise; an explicit maxmemory, CONFIG SET included, counts
  // used_memory only, as in Redis). Then the process' resident memory, sampled every 100 ms by
  // UpdateResident, lowers the bytes used_memory may reach by what the process holds beyond
  // used_memory (allocator fragmentation, buffers, the binary), so that eviction keeps RSS under
  // kResidentTarget of the limit, down to a floor of half of maxmemory; and while RSS is over
  // kResidentDeny of the limit, writes are refused with the OOM error even after evicting.
  static constexpr double kResidentTarget = 0.9;
  static constexpr double kResidentDeny = 0.95;
  static uint64_t container_limit() { return container_limit_.load(std::memory_order_relaxed); }
  static void set_container_limit(uint64_t bytes);
  // Every 100 ms, on one shard thread: the process' resident bytes and the shards' used_memory.
  static void UpdateResident(uint64_t resident, uint64_t used);
  // What used_memory may reach: maxmemory, or less in a container (above).
  static uint64_t limit() {
    const uint64_t max = maxmemory();
    return std::min(max, resident_limit_.load(std::memory_order_relaxed));
  }
  static bool resident_over_deny() { return resident_over_deny_.load(std::memory_order_relaxed); }
  // A shard's fair part of limit().
  static uint64_t share() { return limit() / std::max(1u, num_shards()); }

  // On shard `sid`'s own thread: its used bytes (a store only when they moved by kPublishSlack,
  // unless `force`).
  static void Publish(unsigned sid, uint64_t used, bool force = false);
  // The last published bytes of one shard, and the sum over every shard but `except` (any
  // thread; pass kMaxShards to sum them all).
  static uint64_t Published(unsigned sid) {
    return published_[sid].bytes.load(std::memory_order_relaxed);
  }
  static uint64_t PublishedTotal(unsigned except = kMaxShards);

  // Some shard is over its share and over the limit with nothing to evict (see the top): the
  // other shards must make up for it. Raised by that shard, lowered by AdmitUnderMaxMemory.
  static bool short_of_victims() { return short_of_victims_.load(std::memory_order_relaxed); }
  static void set_short_of_victims(bool on) {
    short_of_victims_.store(on, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> bytes{0};
  };
  static inline std::atomic<uint64_t> maxmemory_{0};
  static inline std::atomic<EvictionPolicy> policy_{EvictionPolicy::kNoEviction};
  static inline std::atomic<unsigned> samples_{5};
  static inline std::atomic<int64_t> lfu_log_factor_{10};
  static inline std::atomic<int64_t> lfu_decay_time_{1};
  static inline std::atomic<unsigned> num_shards_{1};
  static inline std::atomic<uint64_t> container_limit_{0};
  static inline std::atomic<uint64_t> resident_limit_{UINT64_MAX};  // UINT64_MAX: none
  static inline std::atomic<bool> resident_over_deny_{false};
  static inline std::atomic<bool> short_of_victims_{false};
  static std::array<Slot, kMaxShards> published_;
};

}  // namespace shardis::shard

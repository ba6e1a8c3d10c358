#include "shard/memory_limit.h"

#include "core/string_util.h"

namespace shardis::shard {

std::array<MemoryLimit::Slot, MemoryLimit::kMaxShards> MemoryLimit::published_;

std::optional<EvictionPolicy> ParseEvictionPolicy(std::string_view name) {
  for (size_t i = 0; i < kEvictionPolicyNames.size(); ++i) {
    if (core::EqualsIgnoreCase(kEvictionPolicyNames[i], name)) return EvictionPolicy(i);
  }
  return std::nullopt;
}

void MemoryLimit::Publish(unsigned sid, uint64_t used, bool force) {
  std::atomic<uint64_t>& slot = published_[sid].bytes;
  // Only the owning thread stores: a load and a store, no read-modify-write.
  const uint64_t last = slot.load(std::memory_order_relaxed);
  const uint64_t moved = used > last ? used - last : last - used;
  if (force ? moved != 0 : moved >= kPublishSlack) slot.store(used, std::memory_order_relaxed);
}

void MemoryLimit::set_container_limit(uint64_t bytes) {
  container_limit_.store(bytes, std::memory_order_relaxed);
  resident_limit_.store(UINT64_MAX, std::memory_order_relaxed);
  resident_over_deny_.store(false, std::memory_order_relaxed);
}

void MemoryLimit::UpdateResident(uint64_t resident, uint64_t used) {
  const uint64_t container = container_limit();
  if (container == 0) return;
  // What the process holds beyond used_memory, assumed to stay while eviction frees used bytes
  // (freed blocks are reused by later writes more than they are given back).
  const uint64_t beyond = resident > used ? resident - used : 0;
  const uint64_t target = uint64_t(double(container) * kResidentTarget);
  const uint64_t floor = maxmemory() / 2;
  const uint64_t room = target > beyond ? target - beyond : 0;
  resident_limit_.store(std::max(room, floor), std::memory_order_relaxed);
  resident_over_deny_.store(double(resident) > double(container) * kResidentDeny,
                            std::memory_order_relaxed);
}

uint64_t MemoryLimit::PublishedTotal(unsigned except) {
  uint64_t total = 0;
  const unsigned n = num_shards();
  for (unsigned i = 0; i < n; ++i) {
    if (i != except) total += Published(i);
  }
  return total;
}

}  // namespace shardis::shard

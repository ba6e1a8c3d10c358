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

uint64_t MemoryLimit::PublishedTotal(unsigned except) {
  uint64_t total = 0;
  const unsigned n = num_shards();
  for (unsigned i = 0; i < n; ++i) {
    if (i != except) total += Published(i);
  }
  return total;
}

}  // namespace shardis::shard

#include "core/string_table.h"

#include <glog/logging.h>

#include <bit>

#include "core/sampled_bytes.h"
#include "core/varint.h"

namespace shardis::core {

StringTable::~StringTable() {
  ShardHeap* heap = ShardHeap::Current();
  for (size_t i = 0; i < capacity_; ++i) {
    if (slots_[i] > kTombstone) heap->Free(MutableBlockOf(slots_[i]));
  }
  if (slots_ != nullptr) heap->Free(slots_);
}

size_t StringTable::ReleaseSome(size_t max) {
  // The slots past capacity_ are done with: the destructor stops at capacity_, and nothing else
  // runs on the table any more.
  ShardHeap* heap = ShardHeap::Current();
  size_t released = 0;
  while (released < max && capacity_ > 0) {
    const uint64_t s = slots_[--capacity_];
    if (s > kTombstone) {
      heap->Free(MutableBlockOf(s));
      --size_;
      ++released;
    }
  }
  return released;
}

std::string_view StringTable::Key(const char* block) const {
  uint64_t klen, vlen = 0;
  const char* p = GetVarint(block, &klen);
  if (with_values_) p = GetVarint(p, &vlen);
  return {p, klen};
}

std::string_view StringTable::Value(const char* block) const {
  DCHECK(with_values_);
  uint64_t klen, vlen;
  const char* p = GetVarint(GetVarint(block, &klen), &vlen);
  return {p + klen, vlen};
}

char* StringTable::MakeBlock(std::string_view key, std::string_view value) const {
  size_t n = VarintSize(key.size()) + key.size();
  if (with_values_) n += VarintSize(value.size()) + value.size();
  char* block = static_cast<char*>(ShardHeap::Current()->Allocate(n));
  char* p = PutVarint(block, key.size());
  if (with_values_) p = PutVarint(p, value.size());
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  if (with_values_ && !value.empty()) std::memcpy(p + key.size(), value.data(), value.size());
  // mimalloc never returns blocks above 2^48 on x86-64 Linux, so the tag bits are free.
  DCHECK_EQ(reinterpret_cast<uint64_t>(block) & ~kPtrMask, 0u);
  return block;
}

size_t StringTable::FindSlot(std::string_view key, uint64_t hash) const {
  if (capacity_ == 0) return 0;
  const uint64_t mask = capacity_ - 1;
  const uint64_t tag = Tag(hash);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint64_t s = slots_[i];
    if (s == kEmpty) return capacity_;
    if (s != kTombstone && (s >> kTagShift) == tag && Key(BlockOf(s)) == key) return i;
  }
}

const char* StringTable::Find(std::string_view key) const {
  const size_t i = FindSlot(key, HashBytes(key));
  return i < capacity_ ? BlockOf(slots_[i]) : nullptr;
}

void StringTable::Rehash(size_t new_capacity) {
  uint64_t* old = slots_;
  const size_t old_capacity = capacity_;
  slots_ = static_cast<uint64_t*>(ShardHeap::Current()->Allocate(new_capacity * 8));
  std::memset(slots_, 0, new_capacity * 8);
  capacity_ = new_capacity;
  tombstones_ = 0;
  const uint64_t mask = capacity_ - 1;
  for (size_t j = 0; j < old_capacity; ++j) {
    const uint64_t s = old[j];
    if (s <= kTombstone) continue;
    size_t i = HashBytes(Key(BlockOf(s))) & mask;
    while (slots_[i] != kEmpty) i = (i + 1) & mask;
    slots_[i] = s;
  }
  if (old != nullptr) ShardHeap::Current()->Free(old);
}

size_t StringTable::DefragSlots(BlockMover& mover, size_t first_slot, size_t max_entries) {
  if (first_slot == 0 && slots_ != nullptr) mover.Move(&slots_);
  size_t i = first_slot, entries = 0;
  for (; i < capacity_ && entries < max_entries; ++i) {
    if (slots_[i] <= kTombstone) continue;
    ++entries;
    if (void* moved = mover.MoveBlock(MutableBlockOf(slots_[i]))) {
      slots_[i] = (slots_[i] & ~kPtrMask) | reinterpret_cast<uintptr_t>(moved);
    }
  }
  return i < capacity_ ? i : 0;
}

void StringTable::Reserve(size_t n) {
  // Load factor at most 3/4.
  const size_t want = std::bit_ceil(std::max(kMinCapacity, (n * 4 + 2) / 3));
  if (want > capacity_) Rehash(want);
}

bool StringTable::Insert(std::string_view key, std::string_view value, bool overwrite) {
  const uint64_t hash = HashBytes(key);
  size_t i = FindSlot(key, hash);
  if (i < capacity_) {
    if (overwrite && with_values_) {
      ShardHeap::Current()->Free(MutableBlockOf(slots_[i]));
      slots_[i] = MakeSlot(MakeBlock(key, value), hash);
    }
    return false;
  }
  // Occupied plus deleted slots stay under 3/4 so probes end quickly.
  if ((size_ + tombstones_ + 1) * 4 > capacity_ * 3) {
    Rehash(std::bit_ceil(std::max(kMinCapacity, ((size_ + 1) * 8 + 2) / 3)));
  }
  const uint64_t mask = capacity_ - 1;
  for (i = hash & mask; slots_[i] > kTombstone; i = (i + 1) & mask) {
  }
  if (slots_[i] == kTombstone) --tombstones_;
  slots_[i] = MakeSlot(MakeBlock(key, value), hash);
  ++size_;
  return true;
}

bool StringTable::Erase(std::string_view key) {
  const size_t i = FindSlot(key, HashBytes(key));
  if (i >= capacity_) return false;
  ShardHeap::Current()->Free(MutableBlockOf(slots_[i]));
  // A tombstone unless the run ends right after it (then the slot may become empty: nothing
  // probes past it).
  if (slots_[(i + 1) & (capacity_ - 1)] == kEmpty) {
    slots_[i] = kEmpty;
  } else {
    slots_[i] = kTombstone;
    ++tombstones_;
  }
  --size_;
  MaybeShrink();
  return true;
}

void StringTable::MaybeShrink() {
  // Below 1/8 full: halve (or more), so Random() finds an entry in a few probes and memory
  // follows the size down.
  if (capacity_ > kMinCapacity && size_ * 8 < capacity_) {
    Rehash(std::bit_ceil(std::max(kMinCapacity, (size_ * 8 + 2) / 3)));
  }
}

size_t StringTable::MemoryBytes(size_t samples) const {
  SampledBytes blocks(samples, size_);
  for (size_t i = 0; i < capacity_ && !blocks.Done(); ++i) {
    if (slots_[i] > kTombstone) blocks.Add(ShardHeap::UsableSize(BlockOf(slots_[i])));
  }
  return (slots_ != nullptr ? ShardHeap::UsableSize(slots_) : 0) + blocks.Total();
}

}  // namespace shardis::core

// StringTable: the large encoding of hashes (field -> value) and sets (members): an
// open-addressing table (linear probing) of 8-byte slots, each pointing to ONE heap block that
// holds the entry's bytes: varint(key length) [varint(value length)] key [value].
//
// Per entry that is the block (its size class) plus 8 / load-factor bytes of slots, with no
// per-entry node, hash or length fields beyond the varints. The top 16 bits of a slot hold 16
// bits of the key's hash (x86-64 user pointers fit in 48 bits), so a probe compares bytes only
// when the tags match.
//
// Scan: cursors walk *home buckets* (hash & mask) in reverse-binary order, exactly like Redis'
// dictScan, and emit every entry whose home is that bucket (the run of occupied or deleted slots
// starting there holds them all). So an entry present for the whole scan is returned at least
// once even when the table grows or shrinks between calls.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/compact_value.h"
#include "core/shard_heap.h"
#include "core/sparse_pages.h"

namespace shardis::core {

class StringTable {
 public:
  // with_values: entries are key/value pairs (hashes), else keys only (sets).
  explicit StringTable(bool with_values) : with_values_(with_values) {}
  ~StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  size_t size() const { return size_; }
  bool with_values() const { return with_values_; }
  // Sizes the slots for n entries (before a bulk load).
  void Reserve(size_t n);

  // The entry's block, or null.
  const char* Find(std::string_view key) const;
  // Inserts key (with value, for a table with values). An existing key keeps its place and gets
  // the new value when overwrite. Returns true when the key was new.
  bool Insert(std::string_view key, std::string_view value = {}, bool overwrite = true);
  bool Erase(std::string_view key);

  // The parts of an entry's block.
  std::string_view Key(const char* block) const;
  std::string_view Value(const char* block) const;  // with_values only

  // fn(const char* block) for every entry; fn must not modify the table.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i] > kTombstone) fn(BlockOf(slots_[i]));
    }
  }
  // One SCAN step from cursor: calls fn(block) for the entries of a few home buckets (until at
  // least `count` were emitted or 10*count buckets were visited) and returns the next cursor
  // (0 when done).
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn) const;

  // A uniformly random entry (the table must not be empty); r is any random 64-bit number
  // generator (called as r()).
  template <typename Rng>
  const char* Random(Rng& r) const {
    while (true) {
      const uint64_t s = slots_[r() & (capacity_ - 1)];
      if (s > kTombstone) return BlockOf(s);
    }
  }

  // Frees the blocks of up to `max` entries, from the end of the slot array, and forgets them;
  // returns how many. For a table on its way to destruction, freed in pieces (lazy freeing):
  // between calls nothing may read or change it, only ReleaseSome again and the destructor.
  size_t ReleaseSome(size_t max);

  // Active defragmentation: moves the slot array and the entries' blocks that sit on sparse
  // pages (see sparse_pages.h), keeping each slot's tag.
  void Defrag(BlockMover& mover) { DefragSlots(mover, 0, SIZE_MAX); }
  // The same in steps, for a big table: the slot array when `first_slot` is 0, then the entries
  // of the slots from `first_slot` on, until `max_entries` entries were looked at. Returns the
  // next slot, 0 when the walk reached the end. A rehash between steps only means some entries
  // are looked at twice or not at all (the rehash itself put them on fresh blocks' pages).
  size_t DefragSlots(BlockMover& mover, size_t first_slot, size_t max_entries);

  // Memory of the slots and blocks (usable sizes), the blocks estimated from the first `samples`
  // of them (0 = all; see SampledBytes), for MEMORY USAGE. Not counting this object.
  size_t MemoryBytes(size_t samples = 0) const;

 private:
  static constexpr uint64_t kEmpty = 0, kTombstone = 1;
  static constexpr int kTagShift = 48;
  static constexpr uint64_t kPtrMask = (uint64_t{1} << kTagShift) - 1;
  static constexpr size_t kMinCapacity = 16;

  static const char* BlockOf(uint64_t slot) {
    return reinterpret_cast<const char*>(slot & kPtrMask);
  }
  static char* MutableBlockOf(uint64_t slot) { return reinterpret_cast<char*>(slot & kPtrMask); }
  static uint64_t Tag(uint64_t hash) { return hash >> kTagShift; }
  static uint64_t MakeSlot(const char* block, uint64_t hash) {
    return reinterpret_cast<uint64_t>(block) | (Tag(hash) << kTagShift);
  }
  char* MakeBlock(std::string_view key, std::string_view value) const;
  // The slot holding key, or capacity_ when absent.
  size_t FindSlot(std::string_view key, uint64_t hash) const;
  void Rehash(size_t new_capacity);
  void MaybeShrink();

  uint64_t* slots_ = nullptr;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t size_ = 0;
  size_t tombstones_ = 0;
  bool with_values_;
};

// Reverses the bits of v (Redis' rev()).
inline uint64_t ReverseBits(uint64_t v) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
  v = ((v >> 8) & 0x00FF00FF00FF00FFull) | ((v & 0x00FF00FF00FF00FFull) << 8);
  v = ((v >> 16) & 0x0000FFFF0000FFFFull) | ((v & 0x0000FFFF0000FFFFull) << 16);
  return (v >> 32) | (v << 32);
}

template <typename Fn>
uint64_t StringTable::Scan(uint64_t cursor, size_t count, Fn&& fn) const {
  if (capacity_ == 0) return 0;
  const uint64_t mask = capacity_ - 1;
  size_t emitted = 0, visited = 0;
  do {
    const uint64_t home = cursor & mask;
    for (size_t i = home;; i = (i + 1) & mask) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) break;
      if (s == kTombstone) continue;
      const char* block = BlockOf(s);
      if ((HashBytes(Key(block)) & mask) == home) {
        fn(block);
        ++emitted;
      }
    }
    // Increment the reversed cursor (dictScan).
    cursor |= ~mask;
    cursor = ReverseBits(cursor);
    ++cursor;
    cursor = ReverseBits(cursor);
    ++visited;
  } while (cursor != 0 && emitted < count && visited < count * 10);
  return cursor;
}

}  // namespace shardis::core

// DashTable: the dictionary of a shard. An open-addressing hash table with one control byte per
// slot (Swiss-table style), split into segments under a directory (extendible hashing), so that
// growth rebuilds one segment at a time and never rehashes the whole table. Segments come in four
// size classes (about 20, 24, 28 and 32 KiB: allocator size classes, 1.14-1.25x apart); a full
// segment is rebuilt at the next class, and only the largest class splits, into two halves of the
// smallest. The design, the SCAN cursor argument and measured numbers are in docs/hash_table.md.
//
// Hash bits (the caller computes the 64-bit hash once and passes it to every call):
//   bits 63..40  directory index: the top `global_depth` bits (at most kMaxDepth = 24)
//   bits 25..14  position of the key inside its segment: the top 6 bits (25..20) are its bucket,
//                which no resize or split changes; its home group in a segment of G groups is
//                position * G / 4096
//   bits 13..7   7-bit fingerprint kept in the control byte
//   bits  6..0   unused, so that routing keys to shards by `hash % shards` does not skew the table
//
// Policy: a stateless struct with
//   static uint64_t Hash(const Key& key);               // must equal the hash the caller passes
//   static bool Equal(const Key& key, const Probe& p);  // for every probe type used with Find*
//                                                       // (and Probe = Key, for Insert's DCHECK)
//   static constexpr bool kTriviallyRelocatable = ...;  // optional: move slots with memcpy
//   static constexpr bool kAccessClock = ...;           // optional: a 24-bit clock per slot
//
// Iterators and Buckets are invalidated by any insert (a resize or split may move every entry of
// a segment); Erase invalidates only the erased entry; Find never invalidates anything.
// Not thread-safe: a table belongs to one shard thread.
#pragma once

#include <absl/base/optimization.h>
#include <glog/logging.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/heap_allocator.h"

namespace shardis::core {

namespace dash_internal {

// Control byte values. A full slot holds its 7-bit fingerprint (0..127, high bit clear).
inline constexpr int8_t kEmpty = -128;  // 0x80: never used since the segment was built
inline constexpr int8_t kDeleted = -2;  // 0xFE: a tombstone; probes continue past it

// The 16 control bytes of one group, matched at once. Masks have bit i set for slot i.
class GroupCtrl {
 public:
  static constexpr uint32_t kWidth = 16;

#if defined(__SSE2__)
  explicit GroupCtrl(const int8_t* p)
      : ctrl_(_mm_load_si128(reinterpret_cast<const __m128i*>(p))) {}
  uint32_t Match(uint8_t h2) const {
    return uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_set1_epi8(char(h2)), ctrl_)));
  }
  uint32_t MatchEmpty() const {
    return uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_set1_epi8(kEmpty), ctrl_)));
  }
  // Empty or deleted: exactly the bytes with the high bit set.
  uint32_t MatchAvailable() const { return uint32_t(_mm_movemask_epi8(ctrl_)); }

 private:
  __m128i ctrl_;
#else
  explicit GroupCtrl(const int8_t* p) { std::memcpy(ctrl_, p, kWidth); }
  uint32_t Match(uint8_t h2) const {
    return MaskOf([h2](int8_t c) { return c == int8_t(h2); });
  }
  uint32_t MatchEmpty() const {
    return MaskOf([](int8_t c) { return c == kEmpty; });
  }
  uint32_t MatchAvailable() const {
    return MaskOf([](int8_t c) { return c < 0; });
  }

 private:
  template <typename Pred>
  uint32_t MaskOf(Pred pred) const {
    uint32_t mask = 0;
    for (uint32_t i = 0; i < kWidth; ++i) mask |= uint32_t(pred(ctrl_[i])) << i;
    return mask;
  }
  int8_t ctrl_[kWidth];
#endif

 public:
  uint32_t MatchFull() const { return MatchAvailable() ^ 0xFFFFu; }
};

template <typename Policy, typename = void>
struct PolicyRelocatable : std::false_type {};
template <typename Policy>
struct PolicyRelocatable<Policy, std::void_t<decltype(Policy::kTriviallyRelocatable)>>
    : std::bool_constant<Policy::kTriviallyRelocatable> {};
template <typename Policy, typename = void>
struct PolicyAccessClock : std::false_type {};
template <typename Policy>
struct PolicyAccessClock<Policy, std::void_t<decltype(Policy::kAccessClock)>>
    : std::bool_constant<Policy::kAccessClock> {};

inline constexpr uint32_t kBucketBits = 6;
inline constexpr uint32_t kBucketsPerSegment = 1u << kBucketBits;  // 64

// The head of a segment; its slots follow it, then its control bytes, then (kAccessClock) the
// access clocks.
struct alignas(64) SegmentHeader {
  uint64_t versions[kBucketsPerSegment];  // one per bucket
  uint32_t local_depth;
  uint32_t used;  // full slots + tombstones
  uint32_t size;  // full slots
  uint32_t cls;   // size class, 0..kSegmentClasses-1
};

// The size classes of segments, by the block the allocator gives them: mimalloc's size classes
// are four per doubling, and these four (a segment grows through them, then splits into two of
// the first) are 1.14-1.25x apart. A segment of a class has as many groups as its block holds with
// 64 bytes to spare (an allocation aligned to 64 is over-allocated by 63).
inline constexpr size_t kSegmentClasses = 4;
inline constexpr size_t kClassBlockBytes[kSegmentClasses] = {20 << 10, 24 << 10, 28 << 10,
                                                             32 << 10};
// slot_bytes: what a slot costs besides its control byte (the slot, and its clock if any).
constexpr uint32_t GroupsInBlock(size_t block_bytes, size_t slot_bytes) {
  return uint32_t((block_bytes - 64 - sizeof(SegmentHeader)) /
                  (GroupCtrl::kWidth * (slot_bytes + 1)));
}

// The bytes of a slot's access clock (Policy::kAccessClock): Redis' 24-bit LRU/LFU field.
inline constexpr size_t kAccessClockBytes = 3;
inline constexpr uint32_t kAccessClockMask = (1u << (8 * kAccessClockBytes)) - 1;

}  // namespace dash_internal

template <typename Key, typename Value, typename Policy>
class DashTable {
  struct Segment;

 public:
  static constexpr uint32_t kGroupWidth = dash_internal::GroupCtrl::kWidth;
  // Every segment has 64 buckets (hash bits 25..20), whatever its size: the unit of SCAN and of
  // snapshot versions.
  static constexpr uint32_t kBucketBits = dash_internal::kBucketBits;
  static constexpr uint32_t kBucketsPerSegment = dash_internal::kBucketsPerSegment;
  static constexpr uint32_t kSegmentClasses = dash_internal::kSegmentClasses;
  // Deepest directory: 2^24 segments (~10^10 entries). Bounds the directory a degenerate hash
  // can create, and keeps SCAN cursors within kCursorBits (30).
  static constexpr uint32_t kMaxDepth = 24;
  // Cursors returned by Traverse are below 2^kCursorBits, so callers may put a shard number above.
  static constexpr uint32_t kCursorBits = kBucketBits + kMaxDepth;

  // The geometry of a segment of class c (0 = smallest).
  static constexpr uint32_t GroupsOfClass(uint32_t c) {
    return uint32_t(kGroupsPacked >> (8 * c)) & 0xFF;
  }
  static constexpr uint32_t SlotsOfClass(uint32_t c) { return GroupsOfClass(c) * kGroupWidth; }
  // A segment grows, splits, or is rehashed in place when an insert would take its used slots
  // (full + tombstones) past 7/8 of its slots.
  static constexpr uint32_t MaxUsedOfClass(uint32_t c) { return MaxUsedOfGroups(GroupsOfClass(c)); }

  // An entry. Default-constructed (or end()) it points nowhere.
  class Iterator {
   public:
    Iterator() = default;
    // The key must not be changed in a way that changes its hash or equality.
    Key& key() const { return seg_->slot(slot_).key; }
    Value& value() const { return seg_->slot(slot_).value; }
    // The slot's 24-bit access clock (Policy::kAccessClock only): 0 when inserted, kept while the
    // entry lives (moves included), what the owner stores in it otherwise.
    uint32_t access_clock() const {
      static_assert(kAccessClock, "the Policy has no access clock");
      uint32_t c = 0;
      std::memcpy(&c, seg_->clock(seg_->groups()) + slot_ * kClockBytes, kClockBytes);
      return c;
    }
    void set_access_clock(uint32_t c) const {
      static_assert(kAccessClock, "the Policy has no access clock");
      DCHECK_EQ(c & ~dash_internal::kAccessClockMask, 0u);
      std::memcpy(seg_->clock(seg_->groups()) + slot_ * kClockBytes, &c, kClockBytes);
    }
    bool operator==(const Iterator& o) const { return seg_ == o.seg_ && slot_ == o.slot_; }

   private:
    friend class DashTable;
    Iterator(Segment* seg, uint32_t slot, uint32_t bucket)
        : seg_(seg), slot_(slot), bucket_(bucket) {}
    Segment* seg_ = nullptr;
    uint32_t slot_ = 0;
    uint32_t bucket_ = 0;
  };

  // A bucket: the entries of one segment with the same bucket bits (25..20). It is the unit of a
  // Traverse step and carries the version used by fork-free snapshots. A resize keeps a segment's
  // buckets; a split divides each bucket between the two siblings, and both halves keep its
  // version.
  class Bucket {
   public:
    Bucket() = default;
    bool valid() const { return seg_ != nullptr; }
    uint64_t version() const { return seg_ ? seg_->versions[bucket_] : 0; }
    void set_version(uint64_t v) const {
      if (seg_) seg_->versions[bucket_] = v;
    }
    // fn(Iterator) for every entry of the bucket. fn may Erase the entry it is given, and must not
    // insert or erase anything else.
    template <typename Fn>
    void ForEach(Fn&& fn) const;

   private:
    friend class DashTable;
    Bucket(Segment* seg, uint32_t bucket) : seg_(seg), bucket_(bucket) {}
    Segment* seg_ = nullptr;
    uint32_t bucket_ = 0;
  };

  // Segments and directory come from `heap` (the shard's, so that active defragmentation finds
  // and moves them: DefragSegments), or from malloc when it is null.
  explicit DashTable(ShardHeap* heap = nullptr) : dir_(Alloc(heap)) {}
  ~DashTable() { Clear(); }
  DashTable(const DashTable&) = delete;
  DashTable& operator=(const DashTable&) = delete;
  DashTable(DashTable&& o) noexcept { Swap(o); }
  DashTable& operator=(DashTable&& o) noexcept {
    if (this != &o) {
      Clear();
      Swap(o);
    }
    return *this;
  }

  // Batched lookups: hash every key of the batch and Prefetch it, then PrefetchSlots every key,
  // then look them up. Prefetch fetches the control bytes where the probe starts; PrefetchSlots
  // (once those have had time to land) matches the fingerprint in them (and in the next group, if
  // the home group is full without a match) and prefetches the slot it points at. The second
  // stage is what pays: it turns each lookup's two dependent misses (control bytes, then slot)
  // into independent ones (docs/hash_table.md has the numbers).
  void Prefetch(uint64_t hash) const;
  void PrefetchSlots(uint64_t hash) const;

  // The entry whose key equals `probe`, or end(). `hash` must be Policy::Hash of that key.
  template <typename Probe>
  Iterator Find(uint64_t hash, const Probe& probe);

  // Finds `probe`, or inserts Key(make_key()) with a value-initialised Value, in one probe pass.
  // Returns the entry and whether it was inserted.
  template <typename Probe, typename MakeKey>
  std::pair<Iterator, bool> FindOrInsert(uint64_t hash, const Probe& probe, MakeKey&& make_key);

  // Inserts a key known to be absent (loading a snapshot, RENAME): no key comparisons.
  Iterator Insert(uint64_t hash, Key key, Value value);

  // Sizes an empty table for about `entries` entries at once: the directory and all its
  // segments, so that filling it (loading a snapshot that announces its size) does not rebuild
  // segments through the size classes and split them. A table that has segments is left as is.
  void Reserve(size_t entries);

  void Erase(Iterator it);
  Iterator end() const { return Iterator(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Slots in all segments.
  size_t capacity() const { return capacity_; }
  // The table's own memory: the allocator's blocks of the segments and of the directory (their
  // usable sizes, as the heap counts them), not what keys and values point to.
  size_t memory_bytes() const {
    const size_t dir_bytes = dir_.capacity() == 0 ? 0 : dir_.get_allocator().UsableSize(dir_.data());
    return segment_bytes_ + dir_bytes;
  }
  // The heap the table allocates from (null: malloc).
  ShardHeap* heap() const { return dir_.get_allocator().heap(); }
  // Changes the heap of a table that holds no memory (a Db attached to its shard).
  void set_heap(ShardHeap* heap) {
    DCHECK_EQ(segment_count_, 0u);
    dir_ = Directory(Alloc(heap));
  }
  size_t segment_count() const { return segment_count_; }
  uint32_t global_depth() const { return global_depth_; }
  // The table's load (entries / slots) under which ShrinkStep works.
  static constexpr double kShrinkLoad = 0.5;

  // Destroys every entry and frees all memory. Cursors from before restart from the beginning
  // of whatever is left; scanning across a Clear gives no guarantee.
  void Clear();

  // Gives back the memory of a table most of whose entries are gone, a few segments per call, as
  // Redis' cron shrinks a dict under 10% full. While the table is under 1/2 full (kShrinkLoad) and
  // has not grown since the last step (a table being filled, e.g. after Reserve, is left alone), a
  // step looks at up to `max_segments` segments from where the last step stopped and, moving at
  // most about `max_moves` entries: merges a segment with its buddy (the other half of the hash
  // range they split from) when their entries together fill at most 3/4 of the top class's
  // threshold and their buckets carry the same versions (so a snapshot in progress never sees a
  // bucket half serialised); rebuilds a segment at a smaller class when its entries fit one; halves
  // the directory when no segment is as deep as it; frees the last segment of an empty table.
  // Invalidates iterators and Buckets like an insert. SCAN cursors stay valid: a key present for a
  // whole scan is still visited, but a merge may visit keys again (docs/hash_table.md). Returns
  // the entries moved.
  size_t ShrinkStep(size_t max_segments, size_t max_moves);

  // Active defragmentation (docs/memory.md): looks at up to `max_segments` segments from the
  // hash-space position `cursor` names (0 = start) and returns the next cursor, 0 once every
  // segment was looked at. For each, mover.FreshBlockFor(block, bytes, alignment) returns a
  // fresh block of the table's heap to move the segment to, or null to leave it where it is
  // (core::BlockMover: a block on a sparse page). A segment moves whole: its entries, bucket
  // versions and the directory entries that point at it, so a SCAN or snapshot cursor (a
  // position, not an address) goes on as before. Invalidates iterators and Buckets like an
  // insert. Segments that split or merge between calls may be looked at twice or not at all.
  template <typename Mover>
  uint64_t DefragSegments(uint64_t cursor, size_t max_segments, Mover& mover);

  // SCAN. Visits one bucket per call: fn(Iterator) for each entry of the bucket the cursor names
  // (0 = start), and returns the next cursor, 0 when the scan is complete. A key present for the
  // whole scan is visited, exactly once, whatever inserts, erases, resizes and splits happen
  // between calls (see docs/hash_table.md); across a Clear, keys may repeat. fn may Erase the
  // entry it is given, nothing else.
  template <typename Fn>
  uint64_t Traverse(uint64_t cursor, Fn&& fn) {
    return TraverseBuckets(cursor, [&](const Bucket& b) { b.ForEach(fn); });
  }
  // The same walk by bucket, for snapshots: fn(const Bucket&).
  template <typename Fn>
  uint64_t TraverseBuckets(uint64_t cursor, Fn&& fn);

  // The bucket of an entry, and the bucket a key with `hash` belongs (or would belong) to. The
  // latter is invalid while the table has no segment.
  Bucket BucketOf(Iterator it) const { return Bucket(it.seg_, it.bucket_); }
  Bucket BucketOf(uint64_t hash) const {
    if (segment_count_ == 0) return Bucket();
    return Bucket(SegOf(dir_data_[DirIndex(hash)]), BucketIndex(hash));
  }
  uint64_t BucketVersion(Iterator it) const { return BucketOf(it).version(); }
  void SetBucketVersion(Iterator it, uint64_t v) { BucketOf(it).set_version(v); }
  // The version of the buckets of segments created empty (the first insert into an empty table).
  // Resized segments and split siblings keep their predecessor's versions instead.
  void set_new_bucket_version(uint64_t v) { new_bucket_version_ = v; }

 private:
  using GroupCtrl = dash_internal::GroupCtrl;
  static constexpr int8_t kEmpty = dash_internal::kEmpty;
  static constexpr int8_t kDeleted = dash_internal::kDeleted;
  static constexpr uint32_t kFingerprintShift = 7;
  static constexpr uint32_t kPositionShift = 14;
  static constexpr uint32_t kPositionBits = 12;
  static constexpr uint32_t kTopClass = kSegmentClasses - 1;
  static constexpr uint32_t MaxUsedOfGroups(uint32_t groups) {
    return groups * kGroupWidth / 8 * 7;
  }

  struct Slot {
    template <typename K, typename V>
    Slot(K&& k, V&& v) : key(std::forward<K>(k)), value(std::forward<V>(v)) {}
    Key key;
    Value value;
  };
  static constexpr bool kRelocatable =
      std::is_trivially_copyable_v<Slot> || dash_internal::PolicyRelocatable<Policy>::value;
  static constexpr bool kAccessClock = dash_internal::PolicyAccessClock<Policy>::value;
  static constexpr size_t kClockBytes = kAccessClock ? dash_internal::kAccessClockBytes : 0;
  // What one slot costs in a segment besides its control byte.
  static constexpr size_t kSlotBytes = sizeof(Slot) + kClockBytes;
  static_assert(alignof(Slot) <= 64, "slots are aligned to a cache line at most");
  static_assert(kRelocatable || std::is_nothrow_move_constructible_v<Slot>,
                "a split moves entries: Key and Value need a noexcept move constructor");

  // The group counts of the classes, a byte each, so that a lookup gets a segment's group count
  // from its directory entry with a shift (see DirEntry).
  static constexpr uint64_t kGroupsPacked = [] {
    uint64_t packed = 0;
    for (size_t c = 0; c < kSegmentClasses; ++c) {
      const uint64_t groups =
          dash_internal::GroupsInBlock(dash_internal::kClassBlockBytes[c], kSlotBytes);
      packed |= groups << (8 * c);
    }
    return packed;
  }();
  static_assert(dash_internal::GroupsInBlock(dash_internal::kClassBlockBytes[0], kSlotBytes) >= 8,
                "slots too large for the segment classes");
  static_assert(dash_internal::GroupsInBlock(dash_internal::kClassBlockBytes[kTopClass],
                                             kSlotBytes) <= 255,
                "slots too small for the segment classes (at most 255 groups)");

  // A segment: the header, then its slots ({Key, Value} by value, from a cache-line boundary, so
  // their address needs no group count), then one control byte per slot, then (kAccessClock)
  // kClockBytes per slot: apart from the slots, so that a table with clocks keeps 32-byte slots
  // (two per cache line) and probing reads the same control bytes.
  struct Segment : dash_internal::SegmentHeader {
    uint32_t groups() const { return GroupsOfClass(cls); }
    Slot& slot(uint32_t i) {
      return reinterpret_cast<Slot*>(reinterpret_cast<unsigned char*>(this) +
                                     sizeof(dash_internal::SegmentHeader))[i];
    }
    // `groups` is this segment's (a lookup has it from the directory entry).
    int8_t* ctrl(uint32_t groups) {
      return reinterpret_cast<int8_t*>(reinterpret_cast<unsigned char*>(this) +
                                       sizeof(dash_internal::SegmentHeader) +
                                       size_t(groups) * kGroupWidth * sizeof(Slot));
    }
    unsigned char* clock(uint32_t groups) {
      return reinterpret_cast<unsigned char*>(ctrl(groups)) + size_t(groups) * kGroupWidth;
    }
    GroupCtrl Group(uint32_t groups, uint32_t g) {
      return GroupCtrl(ctrl(groups) + g * kGroupWidth);
    }
  };
  static constexpr size_t SegmentBytes(uint32_t c) {
    const size_t bytes =
        sizeof(dash_internal::SegmentHeader) + size_t(SlotsOfClass(c)) * (kSlotBytes + 1);
    return (bytes + 63) / 64 * 64;
  }

  // A directory entry: the segment's address (64-byte aligned) with 8 * its class in the low 6
  // bits, the shift that takes the class's group count out of kGroupsPacked. So a lookup knows the
  // segment's geometry without reading its header: dir[] -> control bytes -> slot, as with
  // segments of one size.
  using DirEntry = uintptr_t;
  static DirEntry EntryOf(Segment* seg) { return reinterpret_cast<DirEntry>(seg) | seg->cls * 8; }
  static Segment* SegOf(DirEntry e) { return reinterpret_cast<Segment*>(e & ~DirEntry(63)); }
  static uint32_t GroupsOf(DirEntry e) { return uint32_t(kGroupsPacked >> (e & 63)) & 0xFF; }

  static uint32_t Position(uint64_t hash) {
    return uint32_t(hash >> kPositionShift) & ((1u << kPositionBits) - 1);
  }
  static uint32_t BucketIndex(uint64_t hash) {
    return Position(hash) >> (kPositionBits - kBucketBits);
  }
  // The home group of `hash` in a segment of `groups` groups: the positions are spread evenly, and
  // in order, so a bucket's entries have their homes in a run of one to a few groups.
  static uint32_t HomeGroup(uint64_t hash, uint32_t groups) {
    return (Position(hash) * groups) >> kPositionBits;
  }
  static uint8_t Fingerprint(uint64_t hash) { return uint8_t(hash >> kFingerprintShift) & 0x7F; }
  static uint32_t NextGroup(uint32_t g, uint32_t groups) { return g + 1 == groups ? 0 : g + 1; }
  // The top global_depth_ bits; two shifts so that depth 0 needs no special case.
  size_t DirIndex(uint64_t hash) const { return size_t((hash >> 1) >> dir_shift_); }

  // The directory, on the table's heap (its allocator also gives the segments' blocks).
  using Alloc = HeapAllocator<DirEntry>;
  using Directory = std::vector<DirEntry, Alloc>;
  // A segment of class cls in `block` (SegmentBytes(cls), 64-byte aligned), empty.
  static Segment* InitSegment(void* block, uint32_t cls, uint32_t depth, const uint64_t* versions,
                              uint64_t version);
  Segment* NewSegment(uint32_t cls, uint32_t depth, const uint64_t* versions, uint64_t version) {
    return InitSegment(dir_.get_allocator().AllocateBytes(SegmentBytes(cls), alignof(Segment)),
                       cls, depth, versions, version);
  }
  void FreeSegment(Segment* seg) { dir_.get_allocator().FreeBytes(seg); }
  // Moves seg whole into `block` (SegmentBytes of its class) and frees it; returns the moved
  // segment. The caller points the directory at it.
  Segment* MoveSegment(Segment* seg, void* block);
  // The hash-space position where the segment after the one of depth `depth` that covers `pos`
  // starts; 0 after the last.
  static uint64_t NextSegmentPos(uint64_t pos, uint32_t depth) {
    if (depth == 0) return 0;
    const uint64_t next_prefix = (pos >> (64 - depth)) + 1;
    return next_prefix == (uint64_t(1) << depth) ? 0 : next_prefix << (64 - depth);
  }
  // NewSegment and FreeSegment, counted in capacity_, segment_bytes_ and segment_count_.
  Segment* AddSegment(uint32_t cls, uint32_t depth, const uint64_t* versions, uint64_t version);
  void RemoveSegment(Segment* seg);
  // The directory of every table without segments: one read-only segment whose control bytes are
  // all empty and whose `used` is at the limit, so that Find and Prefetch need no emptiness test
  // and the first insert goes to Grow, which replaces it. Allocated once per instantiation.
  static const DirEntry* EmptyDir() {
    static const DirEntry dir[1] = {[] {
      void* block = std::aligned_alloc(alignof(Segment), SegmentBytes(0));
      CHECK(block != nullptr) << "out of memory";
      Segment* seg = InitSegment(block, 0, 0, nullptr, 0);
      seg->used = SlotsOfClass(0);
      return EntryOf(seg);
    }()};
    return dir;
  }
  static void DestroyEntries(Segment* seg);
  // The first empty-or-deleted slot of the probe sequence of `hash` (there is always one).
  static uint32_t FindAvailable(Segment* seg, uint32_t groups, uint64_t hash);
  // Constructs a slot at `i` and marks it full.
  template <typename... Args>
  void Construct(Segment* seg, uint32_t i, uint64_t hash, Args&&... args);
  static void PrefetchGroupSlots(Segment* seg, uint32_t g) {
    const char* p = reinterpret_cast<const char*>(&seg->slot(g * kGroupWidth));
    for (size_t off = 0; off < kGroupWidth * sizeof(Slot); off += 64) __builtin_prefetch(p + off);
  }
  // The hash of every full slot of `seg`, by slot index (other entries are left unset).
  static std::unique_ptr<uint64_t[]> HashEntries(Segment* seg);
  // Moves every entry of the segments `from` into the fresh segment to[pick(hash)] (pick returns 0
  // or 1); frees nothing. `hashes` are the entries' hashes by slot (one source only), or null to
  // compute them.
  template <typename Pick>
  static void MoveEntries(std::initializer_list<Segment*> from, const uint64_t* hashes,
                          Segment* const* to, Pick pick);
  // Makes room for one more entry in the segment of `hash`; returns that segment.
  Segment* Grow(Segment* seg, uint64_t hash);
  // Rebuilds seg at class `cls` without tombstones: the same depth, hash range and directory
  // entries (a resize, or a rehash in place).
  void Rebuild(Segment* seg, uint64_t hash, uint32_t cls);
  void Split(Segment* seg, uint64_t hash);
  // Merges seg (of depth >= 1), whose range starts at directory entry `first`, with its buddy
  // when ShrinkStep's rule allows; false if it did not. `*moved` gets the entries moved.
  bool TryMerge(Segment* seg, size_t first, size_t* moved);
  // Halves the directory while no segment is as deep as it (each entry pair points at one segment).
  void HalveDirectory();
  // A hash whose directory index is i (the low bits zero), for DirRange and Rebuild.
  uint64_t HashOfDirIndex(size_t i) const {
    return global_depth_ == 0 ? 0 : uint64_t(i) << (64 - global_depth_);
  }
  // Whether `entries` are at most eighths/8 of the threshold of class c; the smallest class where
  // they are (the largest class if none).
  static bool Fits(uint32_t entries, uint32_t c, uint32_t eighths) {
    return entries * 8 <= MaxUsedOfClass(c) * eighths;
  }
  static uint32_t ClassFor(uint32_t entries, uint32_t eighths);
  // The directory range [first, first + span) that points at a segment of depth `depth`.
  std::pair<size_t, size_t> DirRange(uint64_t hash, uint32_t depth) const {
    size_t span = size_t(1) << (global_depth_ - depth);
    return {DirIndex(hash) & ~(span - 1), span};
  }
  void PointDir(size_t first, size_t count, Segment* seg) {
    for (size_t i = first; i < first + count; ++i) dir_[i] = EntryOf(seg);
  }
  void Swap(DashTable& o) noexcept {
    std::swap(dir_, o.dir_);
    std::swap(dir_data_, o.dir_data_);
    std::swap(dir_shift_, o.dir_shift_);
    std::swap(global_depth_, o.global_depth_);
    std::swap(segment_count_, o.segment_count_);
    std::swap(capacity_, o.capacity_);
    std::swap(segment_bytes_, o.segment_bytes_);
    std::swap(size_, o.size_);
    std::swap(new_bucket_version_, o.new_bucket_version_);
    std::swap(deepest_segments_, o.deepest_segments_);
    std::swap(shrink_cursor_, o.shrink_cursor_);
    std::swap(size_at_last_shrink_step_, o.size_at_last_shrink_step_);
  }

  Directory dir_;  // 2^global_depth_ entries; a segment of depth d fills 2^(g-d)
  const DirEntry* dir_data_ = EmptyDir();  // dir_.data(), or EmptyDir() while dir_ is empty
  uint32_t dir_shift_ = 63;                // 63 - global_depth_
  uint32_t global_depth_ = 0;
  size_t segment_count_ = 0;
  size_t capacity_ = 0;       // slots
  size_t segment_bytes_ = 0;  // the allocator's blocks
  size_t size_ = 0;
  uint64_t new_bucket_version_ = 0;
  size_t deepest_segments_ = 0;  // segments whose local depth is global_depth_
  size_t shrink_cursor_ = 0;     // the directory index where the next ShrinkStep starts
  int64_t size_at_last_shrink_step_ = 0;  // -1 after Reserve: the next step counts as growth
};

// ---------------------------------------------------------------------------------------------
// Implementation.

#define SHARDIS_DASH_TEMPLATE template <typename Key, typename Value, typename Policy>
#define SHARDIS_DASH DashTable<Key, Value, Policy>

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Prefetch(uint64_t hash) const {
  const DirEntry e = dir_data_[DirIndex(hash)];
  const uint32_t groups = GroupsOf(e);
  __builtin_prefetch(SegOf(e)->ctrl(groups) + HomeGroup(hash, groups) * kGroupWidth);
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::PrefetchSlots(uint64_t hash) const {
  const DirEntry e = dir_data_[DirIndex(hash)];
  Segment* seg = SegOf(e);
  const uint32_t groups = GroupsOf(e);
  uint32_t g = HomeGroup(hash, groups);
  GroupCtrl home = seg->Group(groups, g);
  uint32_t match = home.Match(Fingerprint(hash));
  if (match == 0 && home.MatchEmpty() == 0) {
    // A key displaced from a full home group is most likely in the next one (3-4% of the keys at
    // 80% load), whose control bytes are usually in the same cache line.
    g = NextGroup(g, groups);
    match = seg->Group(groups, g).Match(Fingerprint(hash));
  }
  // Usually one candidate; a second is a fingerprint collision (1 in 128 per full slot).
  for (int n = 0; match && n < 2; ++n, match &= match - 1) {
    const uint32_t i = g * kGroupWidth + __builtin_ctz(match);
    __builtin_prefetch(&seg->slot(i));
    // The access clock the command's lookup will write (Db::Touch).
    if constexpr (kAccessClock) __builtin_prefetch(seg->clock(groups) + i * kClockBytes, 1);
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Probe>
typename SHARDIS_DASH::Iterator SHARDIS_DASH::Find(uint64_t hash, const Probe& probe) {
  const DirEntry e = dir_data_[DirIndex(hash)];
  Segment* seg = SegOf(e);
  const uint32_t groups = GroupsOf(e);
  const int8_t* ctrl = seg->ctrl(groups);
  const uint8_t fp = Fingerprint(hash);
  uint32_t g = HomeGroup(hash, groups);
  while (true) {
    GroupCtrl group(ctrl + g * kGroupWidth);
    for (uint32_t m = group.Match(fp); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (ABSL_PREDICT_TRUE(Policy::Equal(seg->slot(i).key, probe))) {
        return Iterator(seg, i, BucketIndex(hash));
      }
    }
    // Every segment keeps at least one empty slot, so the probe ends.
    if (ABSL_PREDICT_TRUE(group.MatchEmpty())) return end();
    g = NextGroup(g, groups);
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Probe, typename MakeKey>
std::pair<typename SHARDIS_DASH::Iterator, bool> SHARDIS_DASH::FindOrInsert(uint64_t hash,
                                                                            const Probe& probe,
                                                                            MakeKey&& make_key) {
  const DirEntry e = dir_data_[DirIndex(hash)];
  Segment* seg = SegOf(e);
  const uint32_t groups = GroupsOf(e);
  const int8_t* ctrl = seg->ctrl(groups);
  const uint32_t bucket = BucketIndex(hash);
  const uint8_t fp = Fingerprint(hash);
  uint32_t g = HomeGroup(hash, groups);
  uint32_t target = UINT32_MAX;  // the first available slot of the probe sequence
  while (true) {
    GroupCtrl group(ctrl + g * kGroupWidth);
    for (uint32_t m = group.Match(fp); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (Policy::Equal(seg->slot(i).key, probe)) return {Iterator(seg, i, bucket), false};
    }
    if (target == UINT32_MAX) {
      if (uint32_t avail = group.MatchAvailable()) target = g * kGroupWidth + __builtin_ctz(avail);
    }
    if (group.MatchEmpty()) break;
    g = NextGroup(g, groups);
  }
  // Absent. Taking an empty slot (not a tombstone) may need room first.
  if (ctrl[target] == kEmpty && ABSL_PREDICT_FALSE(seg->used >= MaxUsedOfGroups(groups))) {
    seg = Grow(seg, hash);
    target = FindAvailable(seg, seg->groups(), hash);
  }
  Construct(seg, target, hash, std::forward<MakeKey>(make_key)(), Value());
  return {Iterator(seg, target, bucket), true};
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Iterator SHARDIS_DASH::Insert(uint64_t hash, Key key, Value value) {
  DCHECK(Find(hash, key) == end()) << "Insert of a present key";
  const DirEntry e = dir_data_[DirIndex(hash)];
  Segment* seg = SegOf(e);
  const uint32_t groups = GroupsOf(e);
  uint32_t target = FindAvailable(seg, groups, hash);
  if (seg->ctrl(groups)[target] == kEmpty &&
      ABSL_PREDICT_FALSE(seg->used >= MaxUsedOfGroups(groups))) {
    seg = Grow(seg, hash);
    target = FindAvailable(seg, seg->groups(), hash);
  }
  Construct(seg, target, hash, std::move(key), std::move(value));
  return Iterator(seg, target, BucketIndex(hash));
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Erase(Iterator it) {
  Segment* seg = it.seg_;
  DCHECK(seg != nullptr) << "Erase of end()";
  const uint32_t i = it.slot_;
  int8_t* ctrl = seg->ctrl(seg->groups());
  DCHECK(ctrl[i] >= 0) << "Erase of an erased entry";
  seg->slot(i).~Slot();
  // A probe stops at the first group with an empty slot, so no probe passes a group that has
  // one: the slot may become empty again. Otherwise probes may pass it: leave a tombstone.
  if (GroupCtrl(ctrl + i / kGroupWidth * kGroupWidth).MatchEmpty()) {
    ctrl[i] = kEmpty;
    --seg->used;
  } else {
    ctrl[i] = kDeleted;
  }
  --seg->size;
  --size_;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Clear() {
  if (segment_count_ == 0) return;
  // A segment of depth d fills 2^(global-d) consecutive, aligned directory entries.
  for (size_t i = 0; i < dir_.size();) {
    Segment* seg = SegOf(dir_[i]);
    i += size_t(1) << (global_depth_ - seg->local_depth);
    DestroyEntries(seg);
    FreeSegment(seg);
  }
  Directory(dir_.get_allocator()).swap(dir_);
  dir_data_ = EmptyDir();
  dir_shift_ = 63;
  global_depth_ = 0;
  segment_count_ = 0;
  capacity_ = 0;
  segment_bytes_ = 0;
  size_ = 0;
  deepest_segments_ = 0;
  shrink_cursor_ = 0;
}

SHARDIS_DASH_TEMPLATE
template <typename Fn>
void SHARDIS_DASH::Bucket::ForEach(Fn&& fn) const {
  if (!seg_) return;
  // The bucket's entries have their home groups in [first, last] (the images of its first and
  // last positions), and by (P) lie in the probe runs from those groups: from `first` on, up to
  // the first group at or after `last` that has an empty slot. Entries of other buckets in that
  // run are told apart by their hash.
  const uint32_t groups = seg_->groups();
  constexpr uint32_t kSpan = 1u << (kPositionBits - kBucketBits);  // positions per bucket
  const uint32_t first = (bucket_ * kSpan * groups) >> kPositionBits;
  const uint32_t last = ((bucket_ * kSpan + kSpan - 1) * groups) >> kPositionBits;
  uint32_t g = first;
  for (uint32_t n = 0; n < groups; ++n) {
    GroupCtrl group = seg_->Group(groups, g);
    // Read before fn runs: an Erase by fn only empties a slot of a group that has an empty slot.
    const bool end = n >= last - first && group.MatchEmpty() != 0;
    for (uint32_t m = group.MatchFull(); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (BucketIndex(Policy::Hash(seg_->slot(i).key)) == bucket_) fn(Iterator(seg_, i, bucket_));
    }
    if (end) return;
    g = NextGroup(g, groups);
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Fn>
uint64_t SHARDIS_DASH::TraverseBuckets(uint64_t cursor, Fn&& fn) {
  // cursor = bucket << kMaxDepth | (hash-space position >> (64 - kMaxDepth)). The scan goes
  // through every bucket b in order, and for each b through the segments in hash-space order.
  constexpr uint32_t kPosShift = 64 - kMaxDepth;
  const uint64_t bucket = cursor >> kMaxDepth;
  if (segment_count_ == 0 || bucket >= kBucketsPerSegment) return 0;
  const uint64_t pos = (cursor & ((uint64_t(1) << kMaxDepth) - 1)) << kPosShift;
  Segment* seg = SegOf(dir_data_[DirIndex(pos)]);
  const uint32_t depth = seg->local_depth;  // read before fn, which may erase
  fn(Bucket(seg, uint32_t(bucket)));
  // The next segment in hash-space order starts right after this one's prefix; after the last
  // segment, the next bucket from position 0.
  const uint64_t next_pos = NextSegmentPos(pos, depth);
  const uint64_t next_bucket = next_pos == 0 ? bucket + 1 : bucket;
  if (next_bucket == kBucketsPerSegment) return 0;
  return next_bucket << kMaxDepth | next_pos >> kPosShift;
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::InitSegment(void* block, uint32_t cls,
                                                          uint32_t depth, const uint64_t* versions,
                                                          uint64_t version) {
  auto* seg = static_cast<Segment*>(block);
  seg->cls = cls;
  std::memset(seg->ctrl(seg->groups()), kEmpty, SlotsOfClass(cls));
  if (versions) {
    std::memcpy(seg->versions, versions, sizeof(seg->versions));
  } else {
    for (uint64_t& v : seg->versions) v = version;
  }
  seg->local_depth = depth;
  seg->used = 0;
  seg->size = 0;
  return seg;
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::AddSegment(uint32_t cls, uint32_t depth,
                                                         const uint64_t* versions,
                                                         uint64_t version) {
  Segment* seg = NewSegment(cls, depth, versions, version);
  ++segment_count_;
  if (depth == global_depth_) ++deepest_segments_;
  capacity_ += SlotsOfClass(cls);
  segment_bytes_ += dir_.get_allocator().UsableSize(seg);
  return seg;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::RemoveSegment(Segment* seg) {
  --segment_count_;
  if (seg->local_depth == global_depth_) --deepest_segments_;
  capacity_ -= SlotsOfClass(seg->cls);
  segment_bytes_ -= dir_.get_allocator().UsableSize(seg);
  FreeSegment(seg);
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::MoveSegment(Segment* seg, void* block) {
  auto* to = static_cast<Segment*>(block);
  const size_t bytes = SegmentBytes(seg->cls);
  if constexpr (kRelocatable) {
    std::memcpy(block, static_cast<const void*>(seg), bytes);
  } else {
    // The header, then the control bytes and clocks, which follow the slots; then each entry.
    const uint32_t groups = seg->groups();
    std::memcpy(block, static_cast<const void*>(seg), sizeof(dash_internal::SegmentHeader));
    const size_t ctrl_offset = size_t(reinterpret_cast<unsigned char*>(seg->ctrl(groups)) -
                                      reinterpret_cast<unsigned char*>(seg));
    std::memcpy(to->ctrl(groups), seg->ctrl(groups), bytes - ctrl_offset);
    for (uint32_t g = 0; g < groups; ++g) {
      for (uint32_t m = seg->Group(groups, g).MatchFull(); m; m &= m - 1) {
        const uint32_t i = g * kGroupWidth + __builtin_ctz(m);
        new (&to->slot(i)) Slot(std::move(seg->slot(i)));
        seg->slot(i).~Slot();
      }
    }
  }
  const Alloc alloc = dir_.get_allocator();
  segment_bytes_ = segment_bytes_ - alloc.UsableSize(seg) + alloc.UsableSize(to);
  FreeSegment(seg);
  return to;
}

SHARDIS_DASH_TEMPLATE
template <typename Mover>
uint64_t SHARDIS_DASH::DefragSegments(uint64_t cursor, size_t max_segments, Mover& mover) {
  constexpr uint32_t kPosShift = 64 - kMaxDepth;  // the cursor is a position, as Traverse's
  if (segment_count_ == 0) return 0;
  uint64_t pos = cursor << kPosShift;
  for (size_t n = 0; n < max_segments; ++n) {
    Segment* seg = SegOf(dir_[DirIndex(pos)]);
    const uint32_t depth = seg->local_depth;
    if (void* block = mover.FreshBlockFor(seg, SegmentBytes(seg->cls), alignof(Segment))) {
      auto [first, span] = DirRange(pos, depth);
      PointDir(first, span, MoveSegment(seg, block));
    }
    pos = NextSegmentPos(pos, depth);
    if (pos == 0) return 0;
  }
  return pos >> kPosShift;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::DestroyEntries(Segment* seg) {
  if constexpr (std::is_trivially_destructible_v<Slot>) return;
  const uint32_t groups = seg->groups();
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t m = seg->Group(groups, g).MatchFull(); m; m &= m - 1) {
      seg->slot(g * kGroupWidth + __builtin_ctz(m)).~Slot();
    }
  }
}

SHARDIS_DASH_TEMPLATE
uint32_t SHARDIS_DASH::FindAvailable(Segment* seg, uint32_t groups, uint64_t hash) {
  uint32_t g = HomeGroup(hash, groups);
  while (true) {
    if (uint32_t avail = seg->Group(groups, g).MatchAvailable())
      return g * kGroupWidth + __builtin_ctz(avail);
    g = NextGroup(g, groups);
  }
}

SHARDIS_DASH_TEMPLATE
template <typename... Args>
void SHARDIS_DASH::Construct(Segment* seg, uint32_t i, uint64_t hash, Args&&... args) {
  new (&seg->slot(i)) Slot(std::forward<Args>(args)...);
  DCHECK_EQ(Policy::Hash(seg->slot(i).key), hash) << "the hash passed in is not Policy::Hash(key)";
  int8_t* ctrl = seg->ctrl(seg->groups());
  if (ctrl[i] == kEmpty) ++seg->used;
  ctrl[i] = int8_t(Fingerprint(hash));
  if constexpr (kAccessClock) {
    std::memset(seg->clock(seg->groups()) + i * kClockBytes, 0, kClockBytes);
  }
  ++seg->size;
  ++size_;
}

SHARDIS_DASH_TEMPLATE
std::unique_ptr<uint64_t[]> SHARDIS_DASH::HashEntries(Segment* seg) {
  const uint32_t groups = seg->groups();
  std::unique_ptr<uint64_t[]> hashes(new uint64_t[groups * kGroupWidth]);
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t m = seg->Group(groups, g).MatchFull(); m; m &= m - 1) {
      const uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      hashes[i] = Policy::Hash(seg->slot(i).key);
    }
  }
  return hashes;
}

SHARDIS_DASH_TEMPLATE
template <typename Pick>
void SHARDIS_DASH::MoveEntries(std::initializer_list<Segment*> sources, const uint64_t* hashes,
                               Segment* const* to, Pick pick) {
  DCHECK(hashes == nullptr || sources.size() == 1);
  // A fresh segment has no tombstones and fills each group from slot 0 up, so the count of a
  // group's entries is its first available slot: a move reads no control bytes. (Reading them
  // would stall: the entries come in position order, so consecutive moves mostly land in the same
  // group, and a 16-byte load of a group waits for the 1-byte store just made into it to retire.)
  struct Target {
    Segment* seg;
    int8_t* ctrl;
    unsigned char* clock;
    uint32_t groups;
    uint32_t count;
    uint8_t fill[256];  // entries per group
  };
  Target targets[2];
  for (int t = 0; t < 2 && to[t] != nullptr; ++t) {
    Target& target = targets[t];
    target.seg = to[t];
    target.groups = to[t]->groups();
    target.ctrl = to[t]->ctrl(target.groups);
    target.clock = to[t]->clock(target.groups);
    target.count = 0;
    std::memset(target.fill, 0, target.groups);
  }
  for (Segment* from : sources) {
    const uint32_t groups = from->groups();
    [[maybe_unused]] const unsigned char* from_clock = from->clock(groups);
    constexpr uint32_t kAhead = 4;  // groups: the source is cold, read ahead of the moves
    for (uint32_t g = 0; g < kAhead && g < groups; ++g) PrefetchGroupSlots(from, g);
    for (uint32_t g = 0; g < groups; ++g) {
      if (g + kAhead < groups) PrefetchGroupSlots(from, g + kAhead);
      for (uint32_t m = from->Group(groups, g).MatchFull(); m; m &= m - 1) {
        const uint32_t src_i = g * kGroupWidth + __builtin_ctz(m);
        Slot& src = from->slot(src_i);
        const uint64_t hash = hashes != nullptr ? hashes[src_i] : Policy::Hash(src.key);
        Target& target = targets[pick(hash)];
        uint32_t home = HomeGroup(hash, target.groups);
        while (target.fill[home] == kGroupWidth) home = NextGroup(home, target.groups);
        const uint32_t i = home * kGroupWidth + target.fill[home]++;
        if constexpr (kRelocatable) {
          std::memcpy(static_cast<void*>(&target.seg->slot(i)), static_cast<const void*>(&src),
                      sizeof(Slot));
        } else {
          new (&target.seg->slot(i)) Slot(std::move(src));
          src.~Slot();
        }
        target.ctrl[i] = int8_t(Fingerprint(hash));
        if constexpr (kAccessClock) {
          std::memcpy(target.clock + i * kClockBytes, from_clock + src_i * kClockBytes,
                      kClockBytes);
        }
        ++target.count;
      }
    }
  }
  for (int t = 0; t < 2 && to[t] != nullptr; ++t) {
    targets[t].seg->used = targets[t].seg->size = targets[t].count;
  }
}

SHARDIS_DASH_TEMPLATE
uint32_t SHARDIS_DASH::ClassFor(uint32_t entries, uint32_t eighths) {
  uint32_t c = 0;
  while (c < kTopClass && !Fits(entries, c, eighths)) ++c;
  return c;
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::Grow(Segment* seg, uint64_t hash) {
  if (segment_count_ == 0) {  // seg is the shared empty segment: the first real one replaces it
    Segment* first = AddSegment(0, 0, nullptr, new_bucket_version_);
    dir_.assign(1, EntryOf(first));
    dir_data_ = dir_.data();
    return first;
  }
  while (seg->used >= MaxUsedOfClass(seg->cls)) {
    const uint32_t cls = seg->cls;
    if (Fits(seg->size, cls, 6)) {
      // At the threshold because of tombstones, with at least 1/4 of it to go once they are
      // dropped: rebuild at the smallest class that leaves that much (this one, or a smaller one
      // when erases have emptied the segment).
      Rebuild(seg, hash, ClassFor(seg->size, 6));
    } else if (cls < kTopClass) {
      Rebuild(seg, hash, cls + 1);
    } else if (seg->local_depth < kMaxDepth) {
      Split(seg, hash);
    } else {
      // Only a degenerate hash gets here (2^24 segments): fill past the threshold, keeping one
      // empty slot so that probes end.
      CHECK_LT(seg->used, SlotsOfClass(cls) - 1) << "DashTable segment overflow: degenerate hash";
      return seg;
    }
    seg = SegOf(dir_[DirIndex(hash)]);
  }
  return seg;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Reserve(size_t entries) {
  if (segment_count_ != 0 || entries == 0) return;
  // A uniform hash gives each of 2^d segments entries / 2^d on average with a standard deviation
  // of its square root: the depth is the smallest where mean + 4 deviations fits the threshold
  // of the top class, and every segment takes the smallest class where that fits, so almost no
  // segment grows or splits as the entries arrive.
  auto high = [](double mean) { return uint32_t(mean + 4 * std::sqrt(mean)) + 1; };
  uint32_t depth = 0;
  while (depth < kMaxDepth && high(double(entries) / double(size_t(1) << depth)) > MaxUsedOfClass(kTopClass)) {
    ++depth;
  }
  const uint32_t cls = ClassFor(high(double(entries) / double(size_t(1) << depth)), 8);
  Directory dir(dir_.get_allocator());
  dir.reserve(size_t(1) << depth);
  try {
    for (size_t i = 0; i < (size_t(1) << depth); ++i) {
      dir.push_back(EntryOf(AddSegment(cls, depth, nullptr, new_bucket_version_)));
    }
  } catch (...) {
    for (DirEntry e : dir) RemoveSegment(SegOf(e));
    throw;
  }
  dir_.swap(dir);
  dir_data_ = dir_.data();
  global_depth_ = depth;
  dir_shift_ = 63 - depth;
  deepest_segments_ = segment_count_;
  size_at_last_shrink_step_ = -1;  // its entries are on their way: not to be shrunk meanwhile
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Rebuild(Segment* seg, uint64_t hash, uint32_t cls) {
  Segment* to[2] = {AddSegment(cls, seg->local_depth, seg->versions, 0), nullptr};
  MoveEntries({seg}, nullptr, to, [](uint64_t) { return 0; });
  auto [first, span] = DirRange(hash, seg->local_depth);
  PointDir(first, span, to[0]);
  RemoveSegment(seg);
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Split(Segment* seg, uint64_t hash) {
  const uint32_t depth = seg->local_depth;
  // The siblings cover the two halves of seg's hash range, told apart by hash bit 63 - depth.
  // Each takes the smallest class that its entries fill to at most 7/8 of the threshold (the
  // halves of a full segment of the top class fit the smallest). Both inherit seg's bucket
  // versions: an entry keeps its bucket.
  const uint32_t bit_shift = 63 - depth;
  std::unique_ptr<uint64_t[]> hashes = HashEntries(seg);
  uint32_t hi_count = 0;
  const uint32_t groups = seg->groups();
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t m = seg->Group(groups, g).MatchFull(); m; m &= m - 1) {
      hi_count += (hashes[g * kGroupWidth + __builtin_ctz(m)] >> bit_shift) & 1;
    }
  }
  if (depth == global_depth_) {
    // Double the directory: entry i becomes entries 2i and 2i+1.
    Directory dir(dir_.size() * 2, dir_.get_allocator());
    for (size_t i = 0; i < dir_.size(); ++i) dir[2 * i] = dir[2 * i + 1] = dir_[i];
    dir_.swap(dir);
    dir_data_ = dir_.data();
    ++global_depth_;
    --dir_shift_;
    deepest_segments_ = 0;  // none is this deep yet
  }
  Segment* lo = AddSegment(ClassFor(seg->size - hi_count, 7), depth + 1, seg->versions, 0);
  Segment* hi;
  try {
    hi = AddSegment(ClassFor(hi_count, 7), depth + 1, seg->versions, 0);
  } catch (...) {
    RemoveSegment(lo);
    throw;
  }
  Segment* to[2] = {lo, hi};
  MoveEntries({seg}, hashes.get(), to, [bit_shift](uint64_t h) { return (h >> bit_shift) & 1; });
  auto [first, span] = DirRange(hash, depth);
  PointDir(first, span / 2, lo);
  PointDir(first + span / 2, span / 2, hi);
  RemoveSegment(seg);
}

SHARDIS_DASH_TEMPLATE
size_t SHARDIS_DASH::ShrinkStep(size_t max_segments, size_t max_moves) {
  const bool growing = int64_t(size_) > size_at_last_shrink_step_;
  size_at_last_shrink_step_ = int64_t(size_);
  if (growing || segment_count_ == 0 || double(size_) >= kShrinkLoad * double(capacity_)) {
    return 0;
  }
  if (size_ == 0) {  // nothing to move: the last segments go at once (Clear keeps the version
    Clear();          // new segments take, so a snapshot in progress does not see new keys)
    return 0;
  }
  size_t moved = 0;
  for (size_t n = 0; n < max_segments && moved < max_moves; ++n) {
    if (shrink_cursor_ >= dir_.size()) shrink_cursor_ = 0;
    Segment* seg = SegOf(dir_[shrink_cursor_]);
    // The first directory entry of seg's range, and the entry after it.
    const size_t span = size_t(1) << (global_depth_ - seg->local_depth);
    const size_t first = shrink_cursor_ & ~(span - 1);
    shrink_cursor_ = first + span;
    if (seg->local_depth > 0) {
      if (size_t m = 0; TryMerge(seg, first, &m)) {  // seg is gone: it may have had no entries
        moved += m;
        // The merged segment covers the buddies' ranges; go on after them (the directory may
        // have halved, which halves the indexes).
        shrink_cursor_ = (first & ~(2 * span - 1)) + 2 * span;
        if (deepest_segments_ == 0) {
          const uint32_t before = global_depth_;
          HalveDirectory();
          shrink_cursor_ >>= before - global_depth_;
        }
        continue;
      }
    }
    // Entries that a smaller class holds at most 3/4 full (Grow's rule for a rehash in place).
    if (const uint32_t cls = ClassFor(seg->size, 6); cls < seg->cls) {
      moved += seg->size;
      Rebuild(seg, HashOfDirIndex(first), cls);
    }
  }
  return moved;
}

SHARDIS_DASH_TEMPLATE
bool SHARDIS_DASH::TryMerge(Segment* seg, size_t first, size_t* moved) {
  const uint32_t depth = seg->local_depth;
  const size_t span = size_t(1) << (global_depth_ - depth);
  const size_t buddy_first = first ^ span;  // the other half of the range of depth - 1
  Segment* buddy = SegOf(dir_[buddy_first]);
  if (buddy->local_depth != depth) return false;  // the buddy has split further
  const uint32_t entries = seg->size + buddy->size;
  if (!Fits(entries, kTopClass, 6)) return false;
  // A bucket of the merged segment holds both halves of the buckets: they must agree on whether
  // they were serialised by a snapshot (a version per bucket).
  if (std::memcmp(seg->versions, buddy->versions, sizeof(seg->versions)) != 0) return false;
  Segment* merged = AddSegment(ClassFor(entries, 6), depth - 1, seg->versions, 0);
  Segment* to[2] = {merged, nullptr};
  MoveEntries({seg, buddy}, nullptr, to, [](uint64_t) { return 0; });
  PointDir(first & ~(2 * span - 1), 2 * span, merged);
  RemoveSegment(seg);
  RemoveSegment(buddy);
  *moved = entries;
  return true;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::HalveDirectory() {
  while (global_depth_ > 0 && deepest_segments_ == 0) {
    Directory dir(dir_.size() / 2, dir_.get_allocator());
    for (size_t i = 0; i < dir.size(); ++i) {
      DCHECK_EQ(dir_[2 * i], dir_[2 * i + 1]);
      dir[i] = dir_[2 * i];
    }
    dir_.swap(dir);
    dir_data_ = dir_.data();
    --global_depth_;
    ++dir_shift_;
    // Count the segments now as deep as the directory: each fills exactly one entry.
    for (size_t i = 0; i < dir_.size(); ++i) {
      deepest_segments_ += SegOf(dir_[i])->local_depth == global_depth_;
    }
  }
}

#undef SHARDIS_DASH
#undef SHARDIS_DASH_TEMPLATE

}  // namespace shardis::core

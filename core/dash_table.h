// DashTable: the dictionary of a shard. An open-addressing hash table with one control byte per
// slot (Swiss-table style), split into fixed-size segments under a directory (extendible hashing),
// so that growth splits one segment at a time and never rehashes the whole table.
// The design, the SCAN cursor argument and measured numbers are in docs/hash_table.md.
//
// Hash bits (the caller computes the 64-bit hash once and passes it to every call):
//   bits 63..40  directory index: the top `global_depth` bits (at most kMaxDepth = 24)
//   bits 19..14  home group of the key inside its segment (never changes when the segment splits)
//   bits 13..7   7-bit fingerprint kept in the control byte
//   bits  6..0   unused, so that routing keys to shards by `hash % shards` does not skew the table
//
// Policy: a stateless struct with
//   static uint64_t Hash(const Key& key);               // must equal the hash the caller passes
//   static bool Equal(const Key& key, const Probe& p);  // for every probe type used with Find*
//                                                       // (and Probe = Key, for Insert's DCHECK)
//   static constexpr bool kTriviallyRelocatable = ...;  // optional: move slots with memcpy
//
// Iterators and Buckets are invalidated by any insert (a split or in-place rehash may move every
// entry of a segment); Erase invalidates only the erased entry; Find never invalidates anything.
// Not thread-safe: a table belongs to one shard thread.
#pragma once

#include <absl/base/optimization.h>
#include <glog/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

}  // namespace dash_internal

template <typename Key, typename Value, typename Policy>
class DashTable {
  struct Segment;

 public:
  static constexpr uint32_t kGroupWidth = dash_internal::GroupCtrl::kWidth;
  // 1024 slots a segment: a split moves ~900 entries, ~25 us with 32-byte slots (see the doc).
  static constexpr uint32_t kGroupBits = 6;
  static constexpr uint32_t kGroupsPerSegment = 1u << kGroupBits;                // 64
  static constexpr uint32_t kSlotsPerSegment = kGroupsPerSegment * kGroupWidth;  // 1024
  // A segment splits (or is rehashed in place) when an insert would take its used slots (full +
  // tombstones) past 7/8 of its slots.
  static constexpr uint32_t kMaxUsedPerSegment = kSlotsPerSegment / 8 * 7;  // 896
  // Deepest directory: 2^24 segments (~10^10 entries). Bounds the directory a degenerate hash
  // can create, and keeps SCAN cursors within kCursorBits (30).
  static constexpr uint32_t kMaxDepth = 24;
  // Cursors returned by Traverse are below 2^kCursorBits, so callers may put a shard number above.
  static constexpr uint32_t kCursorBits = kGroupBits + kMaxDepth;

  // An entry. Default-constructed (or end()) it points nowhere.
  class Iterator {
   public:
    Iterator() = default;
    // The key must not be changed in a way that changes its hash or equality.
    Key& key() const { return seg_->slot(slot_).key; }
    Value& value() const { return seg_->slot(slot_).value; }
    bool operator==(const Iterator& o) const { return seg_ == o.seg_ && slot_ == o.slot_; }

   private:
    friend class DashTable;
    Iterator(Segment* seg, uint32_t slot, uint32_t home) : seg_(seg), slot_(slot), home_(home) {}
    Segment* seg_ = nullptr;
    uint32_t slot_ = 0;
    uint32_t home_ = 0;  // the entry's home group (its bucket)
  };

  // A bucket: the entries of one segment whose home group is the same. It is the unit of a
  // Traverse step and carries the version used by fork-free snapshots. When a segment splits, each
  // of its buckets is divided between the two siblings and both halves keep the bucket's version.
  class Bucket {
   public:
    Bucket() = default;
    bool valid() const { return seg_ != nullptr; }
    uint64_t version() const { return seg_ ? seg_->versions[group_] : 0; }
    void set_version(uint64_t v) const {
      if (seg_) seg_->versions[group_] = v;
    }
    // fn(Iterator) for every entry of the bucket. fn may Erase the entry it is given, and must not
    // insert or erase anything else.
    template <typename Fn>
    void ForEach(Fn&& fn) const;

   private:
    friend class DashTable;
    Bucket(Segment* seg, uint32_t group) : seg_(seg), group_(group) {}
    Segment* seg_ = nullptr;
    uint32_t group_ = 0;
  };

  DashTable() = default;
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
  // (once those have had time to land) matches the fingerprint in them and prefetches the slot it
  // points at. The second stage is what pays: it turns each lookup's two dependent misses
  // (control bytes, then slot) into independent ones (docs/hash_table.md has the numbers).
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

  void Erase(Iterator it);
  Iterator end() const { return Iterator(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return size_t(segment_count_) * kSlotsPerSegment; }
  // The table's own memory: segments and directory (not what keys and values point to).
  size_t memory_bytes() const {
    return segment_count_ * sizeof(Segment) + dir_.capacity() * sizeof(Segment*);
  }
  size_t segment_count() const { return segment_count_; }
  uint32_t global_depth() const { return global_depth_; }

  // Destroys every entry and frees all memory. Cursors from before restart from the beginning
  // of whatever is left; scanning across a Clear gives no guarantee.
  void Clear();

  // SCAN. Visits one bucket per call: fn(Iterator) for each entry of the bucket the cursor names
  // (0 = start), and returns the next cursor, 0 when the scan is complete. A key present for the
  // whole scan is visited, exactly once, whatever inserts, erases and splits happen between calls
  // (see docs/hash_table.md); across a Clear, keys may repeat. fn may Erase the entry it is
  // given, nothing else.
  template <typename Fn>
  uint64_t Traverse(uint64_t cursor, Fn&& fn) {
    return TraverseBuckets(cursor, [&](const Bucket& b) { b.ForEach(fn); });
  }
  // The same walk by bucket, for snapshots: fn(const Bucket&).
  template <typename Fn>
  uint64_t TraverseBuckets(uint64_t cursor, Fn&& fn);

  // The bucket of an entry, and the bucket a key with `hash` belongs (or would belong) to. The
  // latter is invalid while the table has no segment.
  Bucket BucketOf(Iterator it) const { return Bucket(it.seg_, it.home_); }
  Bucket BucketOf(uint64_t hash) const {
    return segment_count_ == 0 ? Bucket() : Bucket(dir_data_[DirIndex(hash)], HomeGroup(hash));
  }
  uint64_t BucketVersion(Iterator it) const { return BucketOf(it).version(); }
  void SetBucketVersion(Iterator it, uint64_t v) { BucketOf(it).set_version(v); }
  // The version of the buckets of segments created empty (the first insert into an empty table).
  // Split siblings inherit their parent's versions instead.
  void set_new_bucket_version(uint64_t v) { new_bucket_version_ = v; }

 private:
  using GroupCtrl = dash_internal::GroupCtrl;
  static constexpr int8_t kEmpty = dash_internal::kEmpty;
  static constexpr int8_t kDeleted = dash_internal::kDeleted;
  static constexpr uint32_t kGroupMask = kGroupsPerSegment - 1;
  static constexpr uint32_t kFingerprintShift = 7;
  static constexpr uint32_t kHomeShift = 14;
  // A segment with at most this many live entries is rehashed in place rather than split: it is
  // at the threshold because of tombstones, and will take at least 224 more inserts to get back.
  static constexpr uint32_t kRehashInPlaceBelow = kMaxUsedPerSegment / 4 * 3;

  struct Slot {
    template <typename K, typename V>
    Slot(K&& k, V&& v) : key(std::forward<K>(k)), value(std::forward<V>(v)) {}
    Key key;
    Value value;
  };
  static constexpr bool kRelocatable =
      std::is_trivially_copyable_v<Slot> || dash_internal::PolicyRelocatable<Policy>::value;
  static_assert(alignof(Slot) <= 64, "slots are aligned to a cache line at most");
  static_assert(kRelocatable || std::is_nothrow_move_constructible_v<Slot>,
                "a split moves entries: Key and Value need a noexcept move constructor");

  struct alignas(64) Segment {
    int8_t ctrl[kSlotsPerSegment];
    uint64_t versions[kGroupsPerSegment];
    uint32_t local_depth;
    uint32_t used;  // full slots + tombstones
    uint32_t size;  // full slots
    alignas(64) unsigned char storage[kSlotsPerSegment * sizeof(Slot)];

    Slot& slot(uint32_t i) { return reinterpret_cast<Slot*>(storage)[i]; }
    GroupCtrl Group(uint32_t g) const { return GroupCtrl(ctrl + g * kGroupWidth); }
  };

  static uint32_t HomeGroup(uint64_t hash) { return uint32_t(hash >> kHomeShift) & kGroupMask; }
  static uint8_t Fingerprint(uint64_t hash) { return uint8_t(hash >> kFingerprintShift) & 0x7F; }
  // The top global_depth_ bits; two shifts so that depth 0 needs no special case.
  size_t DirIndex(uint64_t hash) const { return size_t((hash >> 1) >> dir_shift_); }

  static Segment* NewSegment(uint32_t depth, const uint64_t* versions, uint64_t version);
  // The directory of every table without segments: one read-only segment whose control bytes are
  // all empty and whose `used` is at the limit, so that Find and Prefetch need no emptiness test
  // and the first insert goes to Grow, which replaces it. Allocated once per instantiation.
  static Segment* const* EmptyDir() {
    static Segment* const dir[1] = {[] {
      Segment* seg = NewSegment(0, nullptr, 0);
      seg->used = kSlotsPerSegment;
      return seg;
    }()};
    return dir;
  }
  static void FreeSegment(Segment* seg);
  static void DestroyEntries(Segment* seg);
  // The first empty-or-deleted slot of the probe sequence of `hash` (there is always one).
  static uint32_t FindAvailable(const Segment* seg, uint64_t hash);
  // Constructs a slot at `i` and marks it full.
  template <typename... Args>
  void Construct(Segment* seg, uint32_t i, uint64_t hash, Args&&... args);
  // Moves every entry of `from` into fresh segments picked by pick(hash); frees nothing.
  template <typename Pick>
  static void MoveEntries(Segment* from, Pick pick);
  // Makes room for one more entry in the segment of `hash`; returns that segment.
  Segment* Grow(Segment* seg, uint64_t hash);
  void Split(Segment* seg, uint64_t hash);
  void RehashInPlace(Segment* seg, uint64_t hash);
  // The directory range [first, first + span) that points at a segment of depth `depth`.
  std::pair<size_t, size_t> DirRange(uint64_t hash, uint32_t depth) const {
    size_t span = size_t(1) << (global_depth_ - depth);
    return {DirIndex(hash) & ~(span - 1), span};
  }
  void Swap(DashTable& o) noexcept {
    std::swap(dir_, o.dir_);
    std::swap(dir_data_, o.dir_data_);
    std::swap(dir_shift_, o.dir_shift_);
    std::swap(global_depth_, o.global_depth_);
    std::swap(segment_count_, o.segment_count_);
    std::swap(size_, o.size_);
    std::swap(new_bucket_version_, o.new_bucket_version_);
  }

  std::vector<Segment*> dir_;  // 2^global_depth_ entries; a segment of depth d fills 2^(g-d)
  Segment* const* dir_data_ = EmptyDir();  // dir_.data(), or EmptyDir() while dir_ is empty
  uint32_t dir_shift_ = 63;                // 63 - global_depth_
  uint32_t global_depth_ = 0;
  size_t segment_count_ = 0;
  size_t size_ = 0;
  uint64_t new_bucket_version_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Implementation.

#define SHARDIS_DASH_TEMPLATE template <typename Key, typename Value, typename Policy>
#define SHARDIS_DASH DashTable<Key, Value, Policy>

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Prefetch(uint64_t hash) const {
  const Segment* seg = dir_data_[DirIndex(hash)];
  __builtin_prefetch(seg->ctrl + HomeGroup(hash) * kGroupWidth);
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::PrefetchSlots(uint64_t hash) const {
  Segment* seg = dir_data_[DirIndex(hash)];
  uint32_t g = HomeGroup(hash);
  uint32_t match = seg->Group(g).Match(Fingerprint(hash));
  // Usually one candidate; a second is a fingerprint collision (1 in 128 per full slot).
  for (int n = 0; match && n < 2; ++n, match &= match - 1) {
    __builtin_prefetch(&seg->slot(g * kGroupWidth + __builtin_ctz(match)));
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Probe>
typename SHARDIS_DASH::Iterator SHARDIS_DASH::Find(uint64_t hash, const Probe& probe) {
  Segment* seg = dir_data_[DirIndex(hash)];
  const uint32_t home = HomeGroup(hash);
  const uint8_t fp = Fingerprint(hash);
  uint32_t g = home;
  while (true) {
    GroupCtrl group = seg->Group(g);
    for (uint32_t m = group.Match(fp); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (ABSL_PREDICT_TRUE(Policy::Equal(seg->slot(i).key, probe))) return Iterator(seg, i, home);
    }
    // Every segment keeps at least one empty slot, so the probe ends.
    if (ABSL_PREDICT_TRUE(group.MatchEmpty())) return end();
    g = (g + 1) & kGroupMask;
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Probe, typename MakeKey>
std::pair<typename SHARDIS_DASH::Iterator, bool> SHARDIS_DASH::FindOrInsert(uint64_t hash,
                                                                            const Probe& probe,
                                                                            MakeKey&& make_key) {
  Segment* seg = dir_data_[DirIndex(hash)];
  const uint32_t home = HomeGroup(hash);
  const uint8_t fp = Fingerprint(hash);
  uint32_t g = home;
  uint32_t target = kSlotsPerSegment;  // the first available slot of the probe sequence
  while (true) {
    GroupCtrl group = seg->Group(g);
    for (uint32_t m = group.Match(fp); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (Policy::Equal(seg->slot(i).key, probe)) return {Iterator(seg, i, home), false};
    }
    if (target == kSlotsPerSegment) {
      if (uint32_t avail = group.MatchAvailable()) target = g * kGroupWidth + __builtin_ctz(avail);
    }
    if (group.MatchEmpty()) break;
    g = (g + 1) & kGroupMask;
  }
  // Absent. Taking an empty slot (not a tombstone) may need room first.
  if (seg->ctrl[target] == kEmpty && ABSL_PREDICT_FALSE(seg->used >= kMaxUsedPerSegment)) {
    seg = Grow(seg, hash);
    target = FindAvailable(seg, hash);
  }
  Construct(seg, target, hash, std::forward<MakeKey>(make_key)(), Value());
  return {Iterator(seg, target, home), true};
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Iterator SHARDIS_DASH::Insert(uint64_t hash, Key key, Value value) {
  DCHECK(Find(hash, key) == end()) << "Insert of a present key";
  Segment* seg = dir_data_[DirIndex(hash)];
  uint32_t target = FindAvailable(seg, hash);
  if (seg->ctrl[target] == kEmpty && ABSL_PREDICT_FALSE(seg->used >= kMaxUsedPerSegment)) {
    seg = Grow(seg, hash);
    target = FindAvailable(seg, hash);
  }
  Construct(seg, target, hash, std::move(key), std::move(value));
  return Iterator(seg, target, HomeGroup(hash));
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Erase(Iterator it) {
  Segment* seg = it.seg_;
  const uint32_t i = it.slot_;
  DCHECK(seg != nullptr && seg->ctrl[i] >= 0) << "Erase of end() or of an erased entry";
  seg->slot(i).~Slot();
  // A probe stops at the first group with an empty slot, so no probe passes a group that has
  // one: the slot may become empty again. Otherwise probes may pass it: leave a tombstone.
  if (seg->Group(i / kGroupWidth).MatchEmpty()) {
    seg->ctrl[i] = kEmpty;
    --seg->used;
  } else {
    seg->ctrl[i] = kDeleted;
  }
  --seg->size;
  --size_;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Clear() {
  if (segment_count_ == 0) return;
  // A segment of depth d fills 2^(global-d) consecutive, aligned directory entries.
  for (size_t i = 0; i < dir_.size();) {
    Segment* seg = dir_[i];
    i += size_t(1) << (global_depth_ - seg->local_depth);
    DestroyEntries(seg);
    FreeSegment(seg);
  }
  std::vector<Segment*>().swap(dir_);
  dir_data_ = EmptyDir();
  dir_shift_ = 63;
  global_depth_ = 0;
  segment_count_ = 0;
  size_ = 0;
}

SHARDIS_DASH_TEMPLATE
template <typename Fn>
void SHARDIS_DASH::Bucket::ForEach(Fn&& fn) const {
  if (!seg_) return;
  // The bucket's entries lie in the probe run from its home group up to the first group with an
  // empty slot (inclusive); entries of other buckets in that run are told apart by their hash.
  uint32_t g = group_;
  for (uint32_t n = 0; n < kGroupsPerSegment; ++n) {
    GroupCtrl group = seg_->Group(g);
    // Read before fn runs: an Erase by fn only empties a slot of a group that has an empty slot.
    const bool last = group.MatchEmpty() != 0;
    for (uint32_t m = group.MatchFull(); m; m &= m - 1) {
      uint32_t i = g * kGroupWidth + __builtin_ctz(m);
      if (HomeGroup(Policy::Hash(seg_->slot(i).key)) == group_) fn(Iterator(seg_, i, group_));
    }
    if (last) return;
    g = (g + 1) & kGroupMask;
  }
}

SHARDIS_DASH_TEMPLATE
template <typename Fn>
uint64_t SHARDIS_DASH::TraverseBuckets(uint64_t cursor, Fn&& fn) {
  // cursor = home group << kMaxDepth | (hash-space position >> (64 - kMaxDepth)). The scan goes
  // through every group g in order, and for each g through the segments in hash-space order.
  constexpr uint32_t kPosShift = 64 - kMaxDepth;
  const uint64_t group = cursor >> kMaxDepth;
  if (segment_count_ == 0 || group >= kGroupsPerSegment) return 0;
  const uint64_t pos = (cursor & ((uint64_t(1) << kMaxDepth) - 1)) << kPosShift;
  Segment* seg = dir_data_[DirIndex(pos)];
  const uint32_t depth = seg->local_depth;  // read before fn, which may erase
  fn(Bucket(seg, uint32_t(group)));
  // The next segment in hash-space order starts right after this one's prefix.
  uint64_t next_pos = 0;
  uint64_t next_group = group;
  if (depth == 0 || (pos >> (64 - depth)) + 1 == (uint64_t(1) << depth)) {
    ++next_group;  // this was the last segment: next group, from position 0
  } else {
    next_pos = ((pos >> (64 - depth)) + 1) << (64 - depth);
  }
  if (next_group == kGroupsPerSegment) return 0;
  return next_group << kMaxDepth | next_pos >> kPosShift;
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::NewSegment(uint32_t depth, const uint64_t* versions,
                                                         uint64_t version) {
  auto* seg = static_cast<Segment*>(::operator new (sizeof(Segment), std::align_val_t{64}));
  std::memset(seg->ctrl, kEmpty, sizeof(seg->ctrl));
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
void SHARDIS_DASH::FreeSegment(Segment* seg) {
  ::operator delete (seg, sizeof(Segment), std::align_val_t{64});
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::DestroyEntries(Segment* seg) {
  if constexpr (std::is_trivially_destructible_v<Slot>) return;
  for (uint32_t g = 0; g < kGroupsPerSegment; ++g) {
    for (uint32_t m = seg->Group(g).MatchFull(); m; m &= m - 1) {
      seg->slot(g * kGroupWidth + __builtin_ctz(m)).~Slot();
    }
  }
}

SHARDIS_DASH_TEMPLATE
uint32_t SHARDIS_DASH::FindAvailable(const Segment* seg, uint64_t hash) {
  uint32_t g = HomeGroup(hash);
  while (true) {
    if (uint32_t avail = seg->Group(g).MatchAvailable())
      return g * kGroupWidth + __builtin_ctz(avail);
    g = (g + 1) & kGroupMask;
  }
}

SHARDIS_DASH_TEMPLATE
template <typename... Args>
void SHARDIS_DASH::Construct(Segment* seg, uint32_t i, uint64_t hash, Args&&... args) {
  new (&seg->slot(i)) Slot(std::forward<Args>(args)...);
  DCHECK_EQ(Policy::Hash(seg->slot(i).key), hash) << "the hash passed in is not Policy::Hash(key)";
  if (seg->ctrl[i] == kEmpty) ++seg->used;
  seg->ctrl[i] = int8_t(Fingerprint(hash));
  ++seg->size;
  ++size_;
}

SHARDIS_DASH_TEMPLATE
template <typename Pick>
void SHARDIS_DASH::MoveEntries(Segment* from, Pick pick) {
  for (uint32_t g = 0; g < kGroupsPerSegment; ++g) {
    for (uint32_t m = from->Group(g).MatchFull(); m; m &= m - 1) {
      Slot& src = from->slot(g * kGroupWidth + __builtin_ctz(m));
      const uint64_t hash = Policy::Hash(src.key);
      Segment* to = pick(hash);
      // A fresh segment has no tombstones: the first available slot is an empty one.
      const uint32_t i = FindAvailable(to, hash);
      if constexpr (kRelocatable) {
        std::memcpy(static_cast<void*>(&to->slot(i)), static_cast<const void*>(&src), sizeof(Slot));
      } else {
        new (&to->slot(i)) Slot(std::move(src));
        src.~Slot();
      }
      to->ctrl[i] = int8_t(Fingerprint(hash));
      ++to->used;
      ++to->size;
    }
  }
}

SHARDIS_DASH_TEMPLATE
typename SHARDIS_DASH::Segment* SHARDIS_DASH::Grow(Segment* seg, uint64_t hash) {
  if (segment_count_ == 0) {  // seg is the shared empty segment: the first real one replaces it
    dir_.assign(1, NewSegment(0, nullptr, new_bucket_version_));
    dir_data_ = dir_.data();
    segment_count_ = 1;
    return dir_[0];
  }
  while (seg->used >= kMaxUsedPerSegment) {
    if (seg->size <= kRehashInPlaceBelow) {
      RehashInPlace(seg, hash);
    } else if (seg->local_depth < kMaxDepth) {
      Split(seg, hash);
    } else {
      // Only a degenerate hash gets here (2^24 segments): fill past the threshold, keeping one
      // empty slot so that probes end.
      CHECK_LT(seg->used, kSlotsPerSegment - 1) << "DashTable segment overflow: degenerate hash";
      return seg;
    }
    seg = dir_[DirIndex(hash)];
  }
  return seg;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::Split(Segment* seg, uint64_t hash) {
  const uint32_t depth = seg->local_depth;
  if (depth == global_depth_) {
    // Double the directory: entry i becomes entries 2i and 2i+1.
    std::vector<Segment*> dir(dir_.size() * 2);
    for (size_t i = 0; i < dir_.size(); ++i) dir[2 * i] = dir[2 * i + 1] = dir_[i];
    dir_.swap(dir);
    dir_data_ = dir_.data();
    ++global_depth_;
    --dir_shift_;
  }
  // The siblings cover the two halves of seg's hash range, told apart by hash bit 63 - depth.
  // Both inherit seg's bucket versions: a bucket's entries keep their home group.
  Segment* lo = NewSegment(depth + 1, seg->versions, 0);
  Segment* hi;
  try {
    hi = NewSegment(depth + 1, seg->versions, 0);
  } catch (...) {
    FreeSegment(lo);
    throw;
  }
  const uint32_t bit_shift = 63 - depth;
  MoveEntries(seg, [&](uint64_t h) { return (h >> bit_shift) & 1 ? hi : lo; });
  auto [first, span] = DirRange(hash, depth);
  for (size_t i = 0; i < span / 2; ++i) dir_[first + i] = lo;
  for (size_t i = span / 2; i < span; ++i) dir_[first + i] = hi;
  FreeSegment(seg);
  ++segment_count_;
}

SHARDIS_DASH_TEMPLATE
void SHARDIS_DASH::RehashInPlace(Segment* seg, uint64_t hash) {
  // "In place" for the table: the same hash range and depth, rebuilt without tombstones.
  Segment* fresh = NewSegment(seg->local_depth, seg->versions, 0);
  MoveEntries(seg, [fresh](uint64_t) { return fresh; });
  auto [first, span] = DirRange(hash, seg->local_depth);
  for (size_t i = 0; i < span; ++i) dir_[first + i] = fresh;
  FreeSegment(seg);
}

#undef SHARDIS_DASH
#undef SHARDIS_DASH_TEMPLATE

}  // namespace shardis::core

// SparsePages: the pages of a ShardHeap that active defragmentation empties, and BlockMover, which
// moves a block off such a page to a fresh allocation.
//
// mimalloc serves each size class from pages (64 KiB for small blocks) and gives a page back only
// when its last block is freed. After churn many pages hold a few live blocks each: the memory is
// resident, used_memory does not count it. Build() asks mimalloc for the heap's pages
// (mi_heap_visit_blocks over areas: one area per page, with its block size, used and reserved
// blocks) and keeps those less than 80% used (Dragonfly's default threshold). A block on such a
// page, copied to a fresh allocation (mimalloc takes it from the page it currently allocates
// from, then from the next page of the class with room), leaves its page emptier; an empty page
// returns to mimalloc's segment and, after a purge, to the OS. Comparing a page with the average
// of its size class, as Redis does with jemalloc's hint, kept almost nothing: the page mimalloc
// allocates from, nearly empty, pulls the average below every other page.
//
// Without mimalloc (ASan builds) Build() finds no pages: nothing is ever moved. FromRanges()
// builds the set from given address ranges, for tests on either build.
//
// Single-threaded: build, query and move on the heap's own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/shard_heap.h"

namespace shardis::core {

// What the heap's pages hold, from the same walk (for the fragmentation measure).
struct HeapPageTotals {
  size_t page_bytes = 0;  // bytes of the heap's pages (reserved blocks x block size)
  size_t used_bytes = 0;  // bytes of the live blocks on them (used blocks x block size)
  size_t pages = 0;
  size_t sparse_pages = 0;
  size_t sparse_bytes = 0;  // bytes of the sparse pages
};

class SparsePages {
 public:
  // A page is sparse below this share of its blocks in use.
  static constexpr size_t kSparseNumerator = 4, kSparseDenominator = 5;

  // Rebuilds the set from heap's pages: Visit, then Sort. Cost: one visit per page, no block is
  // touched.
  void Build(const ShardHeap& heap) {
    Visit(heap);
    Sort();
  }
  // Build in two steps, for a caller that lets its thread's clients in between (the visit of a
  // 300 MB heap's 4,600 pages takes about 0.5 ms, most of it cache misses on mimalloc's page
  // records; the sort of their ranges 0.2 ms more). Visit fills totals() and the set; Contains
  // and PageOf need the set sorted.
  void Visit(const ShardHeap& heap);
  void Sort();
  bool sorted() const { return sorted_; }
  // For tests: the pages are exactly these [start, end) ranges (need not be sorted).
  static SparsePages FromRanges(std::vector<std::pair<uintptr_t, uintptr_t>> ranges);

  // Whether p lies on a sparse page. O(log pages). After Sort.
  bool Contains(const void* p) const { return PageOf(p) != kNone; }
  // Index of p's sparse page, or kNone: two blocks on the same page have the same index.
  static constexpr size_t kNone = ~size_t{0};
  size_t PageOf(const void* p) const;

  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  const HeapPageTotals& totals() const { return totals_; }

 private:
  // Disjoint; sorted by start once Sort ran. Cleared, not freed, by the next Visit.
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;
  HeapPageTotals totals_;
  bool sorted_ = true;
};

// Moves blocks off sparse pages, counting as Redis' INFO does: a hit is a block moved, a miss a
// block looked at and left (not on a sparse page, or its copy landed on the same page).
class BlockMover {
 public:
  BlockMover(ShardHeap* heap, const SparsePages* pages) : heap_(heap), pages_(pages) {}

  // If *p sits on a sparse page: copies the block (its whole usable size) to a fresh block of
  // the same size class, frees the old one and stores the new address in *p. Returns whether it
  // moved. The caller fixes every other pointer to the block.
  template <typename T>
  bool Move(T** p) {
    void* moved = MoveBlock(*p);
    if (moved == nullptr) return false;
    *p = static_cast<T*>(moved);
    return true;
  }
  // The same for a block whose address the caller keeps elsewhere: the new address, or null
  // when the block stays.
  void* MoveBlock(void* p);
  // For a block the caller moves itself (a hash table's segment, which must be aligned and whose
  // entries may need more than a copy): when p sits on a sparse page, a fresh block of `bytes`
  // aligned to `align` on the heap and not on p's page, counted as a hit; the caller moves p's
  // contents there, repoints every reference to p and frees p (on the same heap). Otherwise
  // null, a miss.
  void* FreshBlockFor(const void* p, size_t bytes, size_t align);

  // A value copied whole (CloneObject) to get off sparse pages: one hit.
  void NoteCopied() { ++hits_; }

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  // A fresh block of `bytes` (a hit), or null when it would land on `page` too (a miss).
  void* FreshBlockOff(size_t page, size_t bytes, size_t align);

  ShardHeap* heap_;
  const SparsePages* pages_;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace shardis::core

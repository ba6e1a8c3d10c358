#include "core/sparse_pages.h"

#include <glog/logging.h>
#include <mimalloc.h>

#include <algorithm>

namespace shardis::core {

namespace {

struct VisitState {
  HeapPageTotals* totals;
  std::vector<std::pair<uintptr_t, uintptr_t>>* ranges;
};

bool VisitPage(const mi_heap_t*, const mi_heap_area_t* area, void* block, size_t, void* arg) {
  // Called once per page with block == null (visit_all_blocks is false).
  if (block != nullptr || area->full_block_size == 0) return true;
  const VisitState& state = *static_cast<VisitState*>(arg);
  const uintptr_t start = reinterpret_cast<uintptr_t>(area->blocks);
  const size_t capacity = area->reserved / area->full_block_size;  // blocks
  const size_t used = area->used;  // a count of blocks in mimalloc 2.0.9 (its #553)
  state.totals->page_bytes += area->reserved;
  state.totals->used_bytes += used * area->full_block_size;  // with padding: the page's stride
  ++state.totals->pages;
  if (used * SparsePages::kSparseDenominator < capacity * SparsePages::kSparseNumerator) {
    state.ranges->emplace_back(start, start + area->reserved);
    ++state.totals->sparse_pages;
    state.totals->sparse_bytes += area->reserved;
  }
  return true;
}

}  // namespace

void SparsePages::Visit(const ShardHeap& heap) {
  ranges_.clear();
  totals_ = {};
  sorted_ = false;
  if (heap.mi_heap() == nullptr) return;  // no mimalloc (ASan): nothing to move
  VisitState state{&totals_, &ranges_};
  mi_heap_visit_blocks(heap.mi_heap(), /*visit_all_blocks=*/false, VisitPage, &state);
}

SparsePages SparsePages::FromRanges(std::vector<std::pair<uintptr_t, uintptr_t>> ranges) {
  SparsePages pages;
  pages.ranges_ = std::move(ranges);
  pages.Sort();
  return pages;
}

void SparsePages::Sort() {
  std::sort(ranges_.begin(), ranges_.end());
  sorted_ = true;
}

size_t SparsePages::PageOf(const void* p) const {
  DCHECK(sorted_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  // The last page starting at or before a.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), a,
                             [](uintptr_t x, const std::pair<uintptr_t, uintptr_t>& r) {
                               return x < r.first;
                             });
  if (it == ranges_.begin()) return kNone;
  --it;
  return a < it->second ? size_t(it - ranges_.begin()) : kNone;
}

void* BlockMover::MoveBlock(void* p) {
  const size_t page = pages_->PageOf(p);
  if (page == SparsePages::kNone) {
    ++misses_;
    return nullptr;
  }
  // The usable size asks for the same size class, and the copy carries every byte the owner may
  // use (a block may hold more than its owner last asked for: strings grown by APPEND).
  const size_t n = ShardHeap::UsableSize(p);
  void* q = FreshBlockOff(page, n, alignof(void*));
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, n);
  heap_->Free(p);
  return q;
}

void* BlockMover::FreshBlockFor(const void* p, size_t bytes, size_t align) {
  const size_t page = pages_->PageOf(p);
  if (page == SparsePages::kNone) {
    ++misses_;
    return nullptr;
  }
  return FreshBlockOff(page, bytes, align);
}

void* BlockMover::FreshBlockOff(size_t page, size_t bytes, size_t align) {
  void* q = heap_->AllocateAligned(bytes, align);
  if (q == nullptr || pages_->PageOf(q) == page) {
    // Out of memory, or mimalloc allocates from this very page (it is the class' current page):
    // moving gains nothing.
    if (q != nullptr) heap_->Free(q);
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return q;
}

}  // namespace shardis::core

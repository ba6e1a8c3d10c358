// HeapAllocator<T>: a standard allocator on a ShardHeap it is handed, or on malloc when that is
// null (structures outside a shard: unit tests, benchmarks). For structures given their shard's
// heap when they are made (DashTable) rather than taking ShardHeap::Current() as the values'
// containers do (ShardAllocator, value_object.h). Besides allocate/deallocate for containers it
// gives aligned raw blocks and their usable size, on the same heap and counted the same way.
#pragma once

#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

#include "core/shard_heap.h"

namespace shardis::core {

template <typename T>
class HeapAllocator {
 public:
  using value_type = T;
  // The heap goes with the memory it gave: a container moved or swapped takes it along.
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;

  explicit HeapAllocator(ShardHeap* heap = nullptr) noexcept : heap_(heap) {}
  template <typename U>
  HeapAllocator(const HeapAllocator<U>& o) noexcept : heap_(o.heap()) {}

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(AllocateBytes(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, size_t) noexcept { FreeBytes(p); }

  // A block of at least n bytes aligned to `align` (a power of two). Throws std::bad_alloc.
  void* AllocateBytes(size_t n, size_t align) const {
    void* p = heap_ != nullptr ? heap_->AllocateAligned(n, align)
                               : std::aligned_alloc(align, (n + align - 1) / align * align);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void FreeBytes(void* p) const noexcept {
    if (heap_ != nullptr) {
      heap_->Free(p);
    } else {
      std::free(p);
    }
  }
  // What a block of this allocator holds (its size class).
  size_t UsableSize(const void* p) const {
    return heap_ != nullptr ? ShardHeap::UsableSize(p) : malloc_usable_size(const_cast<void*>(p));
  }

  ShardHeap* heap() const { return heap_; }
  template <typename U>
  bool operator==(const HeapAllocator<U>& o) const noexcept {
    return heap_ == o.heap();
  }

 private:
  ShardHeap* heap_;
};

}  // namespace shardis::core

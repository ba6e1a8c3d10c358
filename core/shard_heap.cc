#include "core/shard_heap.h"

#include <glog/logging.h>
#include <malloc.h>
#include <mimalloc.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace shardis::core {

namespace internal {
constinit thread_local ShardHeap* tl_current_heap = nullptr;
}  // namespace internal

namespace {

// The per-thread fallback lives in trivially destructible thread-local storage: it owns nothing
// (it allocates from the thread's backing heap), so it is never destroyed, and the thread_local
// needs no initialisation guard or exit-time destructor.
struct alignas(ShardHeap) FallbackStorage {
  unsigned char bytes[sizeof(ShardHeap)];
};
constinit thread_local FallbackStorage tl_fallback_storage{};
constinit thread_local ShardHeap* tl_fallback = nullptr;

[[noreturn, gnu::cold, gnu::noinline]] void OutOfMemory(size_t n) {
  LOG(FATAL) << "out of memory allocating " << n << " bytes";
  std::abort();
}

}  // namespace

ShardHeap::ShardHeap() : owned_(true), owner_(pthread_self()) {
  if constexpr (kUsesMimalloc) {
    heap_ = mi_heap_new();
    CHECK(heap_ != nullptr) << "mi_heap_new failed";
  }
}

ShardHeap::ShardHeap(FallbackTag) : owned_(false), owner_(pthread_self()) {
  if constexpr (kUsesMimalloc) heap_ = mi_heap_get_backing();
}

ShardHeap::~ShardHeap() {
  DCHECK(pthread_equal(owner_, pthread_self())) << "ShardHeap destroyed off its thread";
  DCHECK_EQ(used_bytes(), 0u) << "ShardHeap destroyed with " << live_blocks() << " live blocks";
  if (internal::tl_current_heap == this) internal::tl_current_heap = nullptr;
  // mi_heap_delete (not mi_heap_destroy): blocks still live move to the backing heap and stay
  // valid rather than being freed under whoever still points at them.
  if (kUsesMimalloc && owned_) mi_heap_delete(heap_);
}

void ShardHeap::Install() {
  DCHECK(owned_);
  DCHECK(pthread_equal(owner_, pthread_self())) << "ShardHeap installed off its thread";
  DCHECK(internal::tl_current_heap == nullptr || internal::tl_current_heap == tl_fallback)
      << "another ShardHeap is installed on this thread";
  internal::tl_current_heap = this;
}

void ShardHeap::Uninstall() {
  DCHECK(internal::tl_current_heap == this);
  internal::tl_current_heap = nullptr;  // the next Current() reinstalls the fallback
}

ShardHeap* ShardHeap::InstallFallback() {
  if (tl_fallback == nullptr) tl_fallback = new (&tl_fallback_storage) ShardHeap(FallbackTag{});
  internal::tl_current_heap = tl_fallback;
  return tl_fallback;
}

void* ShardHeap::Allocate(size_t n) {
  DCHECK(pthread_equal(owner_, pthread_self())) << "ShardHeap used off its thread";
  void* p;
  if constexpr (kUsesMimalloc) {
    p = mi_heap_malloc(heap_, n);
  } else {
    p = std::malloc(n);
  }
  if (p == nullptr) [[unlikely]] {
    OutOfMemory(n);
  }
  Count(p);
  return p;
}

void* ShardHeap::AllocateAligned(size_t n, size_t align) {
  DCHECK(pthread_equal(owner_, pthread_self())) << "ShardHeap used off its thread";
  DCHECK(align != 0 && (align & (align - 1)) == 0) << "alignment " << align;
  void* p;
  if constexpr (kUsesMimalloc) {
    // Every mimalloc block is aligned to a word; for those alignments its aligned path would
    // still over-allocate by align - 1 bytes, which may take a larger size class.
    p = align <= alignof(void*) ? mi_heap_malloc(heap_, n)
                                : mi_heap_malloc_aligned(heap_, n, align);
  } else {
    p = align <= alignof(std::max_align_t)
            ? std::malloc(n)
            : std::aligned_alloc(align, (n + align - 1) / align * align);  // C11: a multiple
  }
  if (p != nullptr) Count(p);
  return p;
}

void ShardHeap::Count(void* p) {
  // Owner-only writers: a relaxed load and store, no read-modify-write (see the header).
  used_.store(used_.load(std::memory_order_relaxed) + UsableSize(p), std::memory_order_relaxed);
  blocks_.store(blocks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void ShardHeap::Free(void* p) {
  DCHECK(p != nullptr);
  DCHECK(pthread_equal(owner_, pthread_self())) << "ShardHeap used off its thread";
  if constexpr (kUsesMimalloc) {
    DCHECK(mi_heap_contains_block(heap_, p))
        << "block freed on a heap that did not allocate it (a value crossed shards?)";
  }
  const int64_t used = used_.load(std::memory_order_relaxed) - UsableSize(p);
  const int64_t blocks = blocks_.load(std::memory_order_relaxed) - 1;
  DCHECK_GE(used, 0) << "ShardHeap byte count went negative: block from another heap?";
  DCHECK_GE(blocks, 0) << "ShardHeap block count went negative: block from another heap?";
  used_.store(used, std::memory_order_relaxed);
  blocks_.store(blocks, std::memory_order_relaxed);
  if constexpr (kUsesMimalloc) {
    mi_free(p);
  } else {
    std::free(p);
  }
}

size_t ShardHeap::UsableSize(const void* p) {
  if constexpr (kUsesMimalloc) {
    return mi_usable_size(p);
  } else {
    return malloc_usable_size(const_cast<void*>(p));
  }
}

size_t ShardHeap::GoodSize(size_t n) {
  if constexpr (kUsesMimalloc) {
    return mi_good_size(n);
  } else {
    return n;  // ASan's malloc_usable_size is the requested size
  }
}

}  // namespace shardis::core

// ShardHeap: the memory of one shard on its own mimalloc heap, with an exact count of the bytes
// in use, so that INFO memory and maxmemory eviction are exact per shard and cost nothing to read.
//
// Each shard thread creates one ShardHeap and installs it; from then on everything that stores
// data in the shard (CompactValue now, the data types later) allocates with
// ShardHeap::Current()->Allocate(n) and frees with ShardHeap::Current()->Free(p); the keyspace
// tables are handed the shard's heap instead (HeapAllocator, core/heap_allocator.h). A thread
// with no heap installed (the main thread, unit tests) gets a per-thread fallback on mimalloc's
// default (backing) heap of that thread, with its own per-thread counter.
//
// Counting: Allocate adds mi_usable_size(p) and Free subtracts it, so used_bytes() is exactly the
// usable size of the live blocks (size classes included; mimalloc's page metadata and free space
// in its pages are not counted: that is fragmentation, visible as RSS - used).
//
// Threads: a heap belongs to the thread that created it; only that thread may Allocate, Free, or
// destroy it (mimalloc heaps are not thread-safe). The counters are written only by the owner and
// may be read from any thread (relaxed atomics: a load and a store, never a read-modify-write).
//
// Cross-shard frees: a block allocated on shard A must be freed on shard A. shardis never moves a
// value across shards (messages carry views and copies), so this does not happen. If it did,
// mimalloc itself would cope (mi_free of a block owned by another thread's heap queues it for the
// owner), but B's counter would be charged for A's bytes. Debug builds catch this: Free DCHECKs
// that the block belongs to this heap, and that the counters never go below zero. Release builds
// report a negative balance as 0.
//
// AddressSanitizer: ASan cannot see inside mimalloc's pages, so under ASan ShardHeap allocates
// with malloc/free (kUsesMimalloc == false) and ASan checks every block for overflows,
// use-after-free and leaks. The counting is the same with malloc_usable_size.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/sanitizers.h"

// mimalloc's heap type (as declared in <mimalloc.h>), so that this header does not need it.
struct mi_heap_s;
typedef struct mi_heap_s mi_heap_t;

namespace shardis::core {

class ShardHeap;
namespace internal {
// The calling thread's installed heap, or null before the first Current() on that thread.
extern constinit thread_local ShardHeap* tl_current_heap;
}  // namespace internal

class ShardHeap {
 public:
#if SHARDIS_ASAN
  static constexpr bool kUsesMimalloc = false;
#else
  static constexpr bool kUsesMimalloc = true;
#endif

  // A new heap (mi_heap_new) owned by the calling thread. Not installed.
  ShardHeap();
  // On the owning thread. Uninstalls itself if installed. Blocks still live are moved to the
  // thread's backing heap (mi_heap_delete) and stay valid; debug builds DCHECK there are none.
  ~ShardHeap();
  ShardHeap(const ShardHeap&) = delete;
  ShardHeap& operator=(const ShardHeap&) = delete;

  // Makes this heap the calling (owning) thread's current heap, replacing the fallback.
  void Install();
  // Back to the thread's fallback heap. DCHECKs that this heap is the current one.
  void Uninstall();

  // The calling thread's heap: the installed ShardHeap, or the thread's fallback. Never null.
  static ShardHeap* Current() {
    ShardHeap* heap = internal::tl_current_heap;
    return heap != nullptr ? heap : InstallFallback();
  }

  // A block of at least n bytes (n > 0) from this heap. Aborts when out of memory.
  void* Allocate(size_t n);
  // A block of at least n bytes aligned to `align` (a power of two), counted as Allocate's; null
  // when out of memory, for callers that report it (a hash table's segments and directory throw
  // std::bad_alloc, which loading a snapshot's size hint catches). Free it with Free.
  void* AllocateAligned(size_t n, size_t align);
  // Frees a block that this heap allocated. p must not be null.
  void Free(void* p);

  // What a block really holds (its size class), and what Allocate(n) would give.
  static size_t UsableSize(const void* p);
  static size_t GoodSize(size_t n);

  // Sum of UsableSize over the live blocks of this heap, and their number. Exact; any thread.
  size_t used_bytes() const { return Clamp(used_.load(std::memory_order_relaxed)); }
  size_t live_blocks() const { return Clamp(blocks_.load(std::memory_order_relaxed)); }

  // True for a thread's fallback heap (no ShardHeap installed).
  bool is_fallback() const { return !owned_; }
  // The underlying mimalloc heap (null when kUsesMimalloc is false).
  mi_heap_t* mi_heap() const { return heap_; }

 private:
  struct FallbackTag {};
  explicit ShardHeap(FallbackTag);
  static ShardHeap* InstallFallback();
  static size_t Clamp(int64_t v) { return v > 0 ? static_cast<size_t>(v) : 0; }
  // Adds a new block to the counters.
  void Count(void* p);

  mi_heap_t* heap_ = nullptr;
  bool owned_ = false;
  pthread_t owner_;
  // Written only by the owning thread (load + store, no RMW): relaxed is enough for readers that
  // only want a recent value for INFO/metrics.
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> blocks_{0};
};

}  // namespace shardis::core

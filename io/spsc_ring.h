// SpscRing<T>: a bounded single-producer/single-consumer queue, the only channel between threads.
// One producer thread calls TryPush, one consumer thread calls TryPop/Empty; no locks, no RMW
// atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace shardis::io {

inline constexpr size_t kCacheLine = 64;

template <typename T>
class SpscRing {
 public:
  // capacity is rounded up to a power of two so that index -> slot is a mask.
  explicit SpscRing(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    slots_ = std::make_unique<T[]>(cap);
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer side. Returns false when the ring is full (the caller decides how to back off).
  bool TryPush(T value) {
    const size_t tail = tail_.load(std::memory_order_relaxed);  // only the producer writes tail_
    if (tail - head_cache_ > mask_) {
      // Looks full with our stale view of head: refresh it. acquire pairs with the consumer's
      // release store of head_, so the slot it freed is no longer being read.
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail - head_cache_ > mask_) return false;
    }
    slots_[tail & mask_] = std::move(value);
    // release publishes the slot contents before the consumer can see the new tail.
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer side. Returns false when the ring is empty.
  bool TryPop(T* out) {
    const size_t head = head_.load(std::memory_order_relaxed);  // only the consumer writes head_
    if (head == tail_cache_) {
      // acquire pairs with the producer's release store of tail_: the slot contents are visible.
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head == tail_cache_) return false;
    }
    *out = std::move(slots_[head & mask_]);
    // release: the producer may overwrite this slot only after we finished reading it.
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Either side, for statistics: how many items were in the ring a moment ago (the two indexes
  // are read one after the other, so the figure is approximate but never negative).
  size_t SizeApprox() const {
    const size_t head = head_.load(std::memory_order_relaxed);
    const size_t tail = tail_.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

  // Consumer side: true when nothing is visible to pop. Used before parking, after a seq_cst fence.
  bool Empty() const {
    return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_acquire);
  }

 private:
  // Producer-owned line: the tail it advances and its cached copy of the consumer's head.
  alignas(kCacheLine) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;
  // Consumer-owned line: the head it advances and its cached copy of the producer's tail.
  alignas(kCacheLine) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;
  // Read-mostly line.
  alignas(kCacheLine) size_t mask_ = 0;
  std::unique_ptr<T[]> slots_;
};

}  // namespace shardis::io

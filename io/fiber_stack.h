// FiberStack: the stack allocator of our fibers: an mmap'd region with a guard page below it, so
// that an overflow faults instead of corrupting the heap, committed lazily by the kernel.
// Under AddressSanitizer, a stack's shadow memory is cleared before the region is unmapped: ASan
// does not see fiber switches, and poison left behind by a dead fiber's frames would otherwise be
// blamed on whatever the kernel maps at that address next.
#pragma once

#include <sys/mman.h>

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <new>

#include "core/sanitizers.h"

#if SHARDIS_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace shardis::io {

class FiberStack {
 public:
  explicit FiberStack(size_t size) : size_(size) {}

  boost::context::stack_context allocate() {
    const size_t total = size_ + kGuard;
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    mprotect(base, kGuard, PROT_NONE);  // stacks grow down: the guard sits at the low end
    boost::context::stack_context sc;
    sc.size = size_;
    sc.sp = static_cast<char*>(base) + total;
    return sc;
  }

  void deallocate(boost::context::stack_context& sc) {
    void* base = static_cast<char*>(sc.sp) - sc.size - kGuard;
#if SHARDIS_ASAN
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    munmap(base, sc.size + kGuard);
  }

 private:
  static constexpr size_t kGuard = 4096;
  size_t size_;
};

}  // namespace shardis::io

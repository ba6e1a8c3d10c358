// PageAlignedString: a std::string-like buffer whose bytes start on a 4 KiB boundary, for
// buffers handed to direct I/O (O_DIRECT wants the memory aligned as the file's blocks are).
// The bytes are on the heap, hence aligned, once its capacity is past the short-string
// optimisation (15 bytes): reserve more than that first, and do not shrink it.
#pragma once

#include <cstddef>
#include <new>
#include <string>

namespace shardis::core {

template <typename T, size_t kAlign>
class AlignedAllocator {
 public:
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, kAlign>;
  };

  AlignedAllocator() noexcept = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, kAlign>&) noexcept {}

  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlign)));
  }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t(kAlign)); }

  template <typename U>
  bool operator==(const AlignedAllocator<U, kAlign>&) const noexcept {
    return true;
  }
};

inline constexpr size_t kPageAlign = 4096;
using PageAlignedString =
    std::basic_string<char, std::char_traits<char>, AlignedAllocator<char, kPageAlign>>;

}  // namespace shardis::core

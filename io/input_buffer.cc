#include "io/input_buffer.h"

#include <algorithm>
#include <cstring>

namespace shardis::io {

void InputBuffer::MakeRoom(size_t needed) {
  if (parse_start_ == filled_) {
    // Everything was consumed: start over at the front of the buffer.
    parse_start_ = filled_ = 0;
    if (size_ > kKeepSize) {
      data_.reset();
      size_ = 0;
    }
  }
  // Make room for the request in progress: move it to the front, then grow if it is still short
  // of what the parser knows it needs.
  needed = std::max(needed, filled_ - parse_start_ + 1);
  if (size_ - parse_start_ < needed || filled_ == size_) {
    if (size_ < needed || filled_ - parse_start_ == size_ || size_ == 0) {
      // Grow without zero-filling: only the unconsumed bytes are copied over.
      const size_t size = std::max({needed, size_ * 2, kInitialSize});
      auto bigger = std::make_unique_for_overwrite<char[]>(size);
      if (filled_ > parse_start_) {
        std::memcpy(bigger.get(), data_.get() + parse_start_, filled_ - parse_start_);
      }
      data_ = std::move(bigger);
      size_ = size;
    } else {
      std::memmove(data_.get(), data_.get() + parse_start_, filled_ - parse_start_);
    }
    filled_ -= parse_start_;
    parse_start_ = 0;
  }
}

void InputBuffer::ReleaseIfIdle() {
  if (parse_start_ != filled_ || size_ <= kKeepSize) return;
  data_.reset();
  size_ = parse_start_ = filled_ = 0;
}

int InputBuffer::Read(Proactor* proactor, int fd, size_t needed) {
  MakeRoom(needed);
  const size_t room = size_ - filled_;
  const int n = proactor->Recv(fd, data_.get() + filled_, room, drained_);
  drained_ = n > 0 && size_t(n) < room;
  if (n > 0) filled_ += size_t(n);
  return n;
}

void InputBuffer::Append(const char* data, size_t n) {
  if (size_ - filled_ < n) MakeRoom(filled_ - parse_start_ + n);
  std::memcpy(data_.get() + filled_, data, n);
  filled_ += n;
}

}  // namespace shardis::io

// MEMORY USAGE's estimate of a large collection, as Redis' objectComputeSize: the heap bytes of
// the first `samples` elements (0 = every one) stand for all `total` of them, so that asking about
// a huge key stays cheap.
#pragma once

#include <cstddef>

namespace shardis::core {

class SampledBytes {
 public:
  SampledBytes(size_t samples, size_t total) : samples_(samples), total_(total) {}

  // Whether enough elements were seen; the caller stops walking then.
  bool Done() const { return samples_ != 0 && seen_ >= samples_; }
  void Add(size_t bytes) {
    sum_ += bytes;
    ++seen_;
  }
  // The estimate for all elements.
  size_t Total() const {
    return seen_ == 0 ? 0 : static_cast<size_t>(double(sum_) / double(seen_) * double(total_));
  }

 private:
  size_t samples_;
  size_t total_;
  size_t seen_ = 0;
  size_t sum_ = 0;
};

}  // namespace shardis::core

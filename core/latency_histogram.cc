#include "core/latency_histogram.h"

#include <cmath>

namespace shardis::core {

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
}

uint64_t LatencyHistogram::BucketHigh(size_t b) {
  if (b < kSubBuckets) return b;
  const uint64_t shift = (b - kSubBuckets) / kSubBuckets;
  const uint64_t sub = (b - kSubBuckets) % kSubBuckets;
  const uint64_t low = (kSubBuckets + sub) << shift;
  return low + (uint64_t(1) << shift) - 1;
}

uint64_t LatencyHistogram::CountBelow(uint64_t bound) const {
  if (bound > kMaxValue) return total_;
  uint64_t n = 0;
  for (size_t b = 0; b < BucketOf(bound); ++b) n += counts_[b];
  return n;
}

uint64_t LatencyHistogram::ValueAtPercentile(double percentile) const {
  if (total_ == 0) return 0;
  if (percentile > 100) percentile = 100;
  // The rank of the value sought, counted from 1 (at least the first value).
  uint64_t rank = uint64_t(std::ceil(percentile / 100.0 * double(total_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += counts_[b];
    if (seen >= rank) return BucketHigh(b);
  }
  return BucketHigh(kBuckets - 1);
}

}  // namespace shardis::core

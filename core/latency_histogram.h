// LatencyHistogram: a fixed-size histogram of durations in nanoseconds with log-linear buckets
// (every power of two split into 16 equal buckets, so a bucket is within 1/16 = 6.25% of its
// values), for INFO latencystats. Recording is an index computation and one increment; two
// histograms merge by adding their counts, which is how per-thread histograms are summed.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace shardis::core {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr uint64_t kSubBuckets = 1 << kSubBits;  // per power of two
  static constexpr int kMaxBits = 40;                      // values up to 2^40 ns (~18 minutes)
  static constexpr uint64_t kMaxValue = (uint64_t(1) << kMaxBits) - 1;  // larger ones clamp here
  // Values below kSubBuckets get a bucket each; every power of two from there on gets 16.
  static constexpr size_t kBuckets = kSubBuckets + (kMaxBits - kSubBits) * kSubBuckets;

  void Add(uint64_t value) {
    ++counts_[BucketOf(value)];
    ++total_;
  }
  void Merge(const LatencyHistogram& other);
  void Reset() { *this = LatencyHistogram(); }
  uint64_t count() const { return total_; }

  // The smallest bucket bound below which at least `percentile` % of the values fall: the
  // highest value of that bucket (as HdrHistogram's hdr_value_at_percentile reports it).
  // 0 when the histogram is empty.
  uint64_t ValueAtPercentile(double percentile) const;
  // How many values are below `bound`, a power of two of at least kSubBuckets (a bucket boundary
  // then, so the count is exact): the cumulative power-of-two buckets of LATENCY HISTOGRAM.
  uint64_t CountBelow(uint64_t bound) const;

  static size_t BucketOf(uint64_t value) {
    if (value > kMaxValue) value = kMaxValue;
    if (value < kSubBuckets) return size_t(value);
    const int msb = std::bit_width(value) - 1;  // >= kSubBits
    const int shift = msb - kSubBits;
    return size_t(kSubBuckets + uint64_t(shift) * kSubBuckets +
                  ((value >> shift) - kSubBuckets));
  }
  // The largest value that falls in bucket `b`.
  static uint64_t BucketHigh(size_t b);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

}  // namespace shardis::core

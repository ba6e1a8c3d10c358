// A value CONFIG SET may change while shard threads read it on the data path (an encoding
// threshold, a node size). Relaxed: each setting is independent of every other and a reader needs
// only a recent value, so a read costs one plain load and takes no lock.
#pragma once

#include <atomic>

namespace shardis::core {

template <typename T>
class RuntimeSetting {
 public:
  explicit constexpr RuntimeSetting(T initial) : value_(initial) {}

  T get() const { return value_.load(std::memory_order_relaxed); }
  void set(T value) { value_.store(value, std::memory_order_relaxed); }

 private:
  std::atomic<T> value_;
};

}  // namespace shardis::core

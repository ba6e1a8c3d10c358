// ProactorPool: N pinned threads, each running a Proactor, joined by an N x N mesh of rings.
#pragma once

#include <absl/status/status.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "io/proactor.h"

namespace shardis::io {

class ProactorPool {
 public:
  // ring_capacity: slots per (from, to) ring; tasks are two words, so 512 slots cost 8 KiB a pair.
  explicit ProactorPool(unsigned num_threads, size_t ring_capacity = 512);
  ~ProactorPool();

  // Starts the threads, each pinned to one CPU of the process' affinity mask, and creates their
  // io_urings. Fails (and leaves no thread running) when io_uring cannot be used.
  absl::Status Start();
  // Stops every loop (each waits for its fibers to finish) and joins the threads.
  void Stop();

  unsigned size() const { return unsigned(proactors_.size()); }
  Proactor* at(unsigned i) { return proactors_[i]; }

  // Runs fn(proactor) in a new fiber on every thread and blocks the calling thread until all have
  // returned. For non-proactor threads (main, tests); fibers use shard-level hops instead.
  void AwaitOnAll(const std::function<void(Proactor*)>& fn);
  void AwaitOn(unsigned index, const std::function<void(Proactor*)>& fn);

 private:
  Mesh mesh_;
  std::vector<Proactor*> proactors_;
  std::vector<std::unique_ptr<Proactor>> owned_;
  std::vector<std::thread> threads_;
  bool started_ = false;
};

}  // namespace shardis::io

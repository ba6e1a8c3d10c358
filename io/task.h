// Task: the message that travels on the rings between threads. Two words, no allocation: the
// receiver calls fn(arg) on its own thread. What arg points to is owned by the sender.
#pragma once

namespace shardis::io {

struct Task {
  void (*fn)(void* arg) = nullptr;
  void* arg = nullptr;
};

// A unit of work that goes to another thread and comes back: Run() executes on the target thread
// (inline in its loop, so it must not block), then Done() executes on the origin thread.
class Hop {
 public:
  virtual void Run() = 0;
  virtual void Done() = 0;

 protected:
  ~Hop() = default;

 private:
  friend class Proactor;
  unsigned origin_ = 0;  // set by Proactor::SendHop
};

}  // namespace shardis::io

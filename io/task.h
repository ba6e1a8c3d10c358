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
// A Run() may hand the hop on to a third thread (ForwardTo) instead of returning: Run() then
// executes there next, and Done() still comes home to the origin at the end. A chain of work on
// several threads thus costs one message per step, not two.
class Hop {
 public:
  virtual void Run() = 0;
  virtual void Done() = 0;

 protected:
  ~Hop() = default;
  // From Run(): after it returns, go on to thread `to` (any thread but the one running it)
  // instead of home.
  void ForwardTo(unsigned to) { forward_to_ = int(to); }

 private:
  friend class Proactor;
  unsigned origin_ = 0;  // set by Proactor::SendHop
  int forward_to_ = -1;  // set by ForwardTo during Run(); -1: home
};

}  // namespace shardis::io

// UringScheduler: the boost.fibers scheduling algorithm of a Proactor thread. A plain FIFO ready
// queue, plus the two hooks that tie fibers to io_uring:
//  - once per pass over the ready queue (each time the dispatcher fiber picks), the proactor
//    polls: one io_uring_enter to submit and reap, then the inbox rings are drained;
//  - when nothing is ready, suspend_until parks the thread in io_uring_enter until a completion,
//    a wake-up or the next timer.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/scheduler.hpp>

namespace shardis::io {

class Proactor;

class UringScheduler : public boost::fibers::algo::algorithm {
 public:
  explicit UringScheduler(Proactor* proactor) : proactor_(proactor) {}

  void awakened(boost::fibers::context* ctx) noexcept override;
  boost::fibers::context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override;
  void suspend_until(std::chrono::steady_clock::time_point const& deadline) noexcept override;
  // Only boost's remote-ready path calls this, which we never use; the eventfd covers it anyway.
  void notify() noexcept override;

 private:
  boost::fibers::scheduler::ready_queue_type ready_;
  Proactor* proactor_;
  // Set when suspend_until just reaped completions: the fibers it woke run before the next poll,
  // so a wake-up costs one io_uring_enter, not two.
  bool just_parked_ = false;
};

}  // namespace shardis::io

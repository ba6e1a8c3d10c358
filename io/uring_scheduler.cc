#include "io/uring_scheduler.h"

#include <boost/fiber/context.hpp>

#include "io/proactor.h"

namespace shardis::io {

using boost::fibers::context;

void UringScheduler::awakened(context* ctx) noexcept {
  ctx->ready_link(ready_);
  proactor_->CountQueuedFiber();
}

context* UringScheduler::pick_next() noexcept {
  // The dispatcher re-queues itself behind every fiber it resumes, so it picks exactly once per
  // pass over the ready queue: that is the loop iteration where I/O and inboxes are serviced.
  if (context::active()->is_context(boost::fibers::type::dispatcher_context) && !ready_.empty()) {
    if (just_parked_) {
      just_parked_ = false;
    } else {
      proactor_->Poll();
    }
  }
  if (ready_.empty()) return nullptr;
  context* ctx = &ready_.front();
  ready_.pop_front();
  proactor_->CountPickedFiber();
  return ctx;
}

bool UringScheduler::has_ready_fibers() const noexcept { return !ready_.empty(); }

void UringScheduler::suspend_until(std::chrono::steady_clock::time_point const& deadline) noexcept {
  proactor_->Park(deadline);
  just_parked_ = true;
}

void UringScheduler::notify() noexcept {
  proactor_->PostExternal([] {});
}

}  // namespace shardis::io

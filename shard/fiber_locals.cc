#include "shard/fiber_locals.h"

#include <boost/fiber/fss.hpp>

namespace shardis::shard {

namespace {

// The default cleanup deletes the fiber's FiberLocals when the fiber ends.
boost::fibers::fiber_specific_ptr<FiberLocals> g_fiber_locals;

}  // namespace

FiberLocals& CurrentFiberLocals() {
  FiberLocals* locals = g_fiber_locals.get();
  if (locals == nullptr) [[unlikely]] {
    locals = new FiberLocals;
    g_fiber_locals.reset(locals);
  }
  return *locals;
}

}  // namespace shardis::shard

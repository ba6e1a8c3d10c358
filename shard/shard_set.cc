#include "shard/shard_set.h"

#include "io/cgroup_limits.h"

#include <boost/fiber/context.hpp>
#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <utility>
#include <vector>

#include "core/cycle_clock.h"
#include "io/proactor.h"
#include "shard/eviction.h"
#include "shard/memory_limit.h"

namespace shardis::shard {

using boost::fibers::context;
using io::Proactor;

ShardSet* shard_set = nullptr;

namespace {

// Active expiry: how many keys a shard removes per step before yielding to its connections. How
// often it looks is the hz.
constexpr size_t kExpiryChunk = 512;
// Lazy freeing: the length of one slice of freeing, between which the shard serves its
// connections (Redis' active expiry and defragmentation work in slices of about this).
constexpr uint64_t kLazyFreeSliceUs = 1000;
// The pace of the periodic hook and of the tracking broadcasts, whatever the hz.
constexpr auto kTickPeriod = std::chrono::milliseconds(100);

// Redis' CONFIG_DEFAULT_HZ and the bounds it clamps the configured value to.
constexpr int kDefaultHz = 10;
constexpr int kMinHz = 1;
constexpr int kMaxHz = 500;
// Relaxed: one independent setting, read once per expiry period.
std::atomic<int> g_hz{kDefaultHz};

// Set on each thread by Stop(); read by that thread's expiry fiber. Per thread, so that no
// variable is shared between threads.
thread_local bool tl_stopping = false;
// True while this thread's expiry fiber runs its periodic hook, which may fan out to every shard
// (SaveCron sums their dirty counters): no shard may go away before it returns.
thread_local bool tl_in_periodic_hook = false;

// Fan-out bookkeeping of one waiting fiber: the hops it sent and how many are still out.
struct HopWaiter {
  int outstanding = 0;
  context* fiber = nullptr;
  // The fiber may yield while hops are out (full ring, a local part that yields): it is scheduled
  // only while it is actually suspended in Wait, never a second time while it sits in the ready
  // queue.
  bool suspended = false;
  void Wait() {
    while (outstanding > 0) {
      suspended = true;
      fiber->suspend();
      suspended = false;
    }
  }
  void OneDone() {
    if (--outstanding == 0 && suspended) context::active()->schedule(fiber);
  }
};

class FnHop final : public io::Hop {
 public:
  FnHop(absl::FunctionRef<void(Shard&)> fn, HopWaiter* waiter) : fn_(fn), waiter_(waiter) {}
  void Run() override { fn_(*Shard::current()); }
  void Done() override { waiter_->OneDone(); }

 private:
  absl::FunctionRef<void(Shard&)> fn_;
  HopWaiter* waiter_;
};

// A job for a worker fiber of another thread, and the worker pool of each thread. A worker takes
// jobs from its thread's queue until the queue is empty, then waits in `idle` until a job comes.
struct WorkerJob {
  absl::FunctionRef<void(Shard&)> fn;
  HopWaiter* waiter;
  unsigned origin;
};
struct WorkerPool {
  std::deque<WorkerJob*> jobs;
  std::vector<context*> idle;
};
thread_local WorkerPool tl_workers;

void WorkerJobDone(void* arg) { static_cast<WorkerJob*>(arg)->waiter->OneDone(); }

void WorkerLoop() {
  WorkerPool& pool = tl_workers;
  for (;;) {
    while (pool.jobs.empty()) {
      if (tl_stopping) return;
      pool.idle.push_back(context::active());
      context::active()->suspend();
    }
    WorkerJob* job = pool.jobs.front();
    pool.jobs.pop_front();
    job->fn(*Shard::current());
    Proactor::current()->Post(job->origin, io::Task{&WorkerJobDone, job});
  }
}

// In the target's loop: queue the job and wake an idle worker, or start one.
void WorkerJobArrive(void* arg) {
  WorkerPool& pool = tl_workers;
  pool.jobs.push_back(static_cast<WorkerJob*>(arg));
  if (!pool.idle.empty()) {
    context* worker = pool.idle.back();
    pool.idle.pop_back();
    context::active()->schedule(worker);
  } else if (!Proactor::current()->Launch(WorkerLoop)) {
    LOG(FATAL) << "no memory for a worker fiber's stack";
  }
}

// At stop, on each thread: idle workers end (running ones end when their job is done).
void StopWorkers() {
  WorkerPool& pool = tl_workers;
  for (context* worker : std::exchange(pool.idle, {})) context::active()->schedule(worker);
}

}  // namespace

ShardSet::ShardSet(io::ProactorPool* pool) : pool_(pool) {}
ShardSet::~ShardSet() = default;

void ShardSet::Start() {
  CHECK_LE(pool_->size(), MemoryLimit::kMaxShards);
  MemoryLimit::set_num_shards(pool_->size());
  shards_.resize(pool_->size());
  pool_->AwaitOnAll([this](Proactor* p) {
    shards_[p->index()] = std::make_unique<Shard>(p->index());
    Shard* shard = shards_[p->index()].get();
    Shard::set_current(shard);
    p->Launch([this, shard] { ExpiryLoop(shard); });
    p->Launch([shard] { TrackingLoop(shard); });
  });
}

void ShardSet::Stop() {
  // Two passes: first no thread starts new periodic work and each waits for what it started (it
  // may have hops out to other shards); only then does any shard go.
  pool_->AwaitOnAll([](Proactor* p) {
    tl_stopping = true;
    while (tl_in_periodic_hook) p->SleepFor(std::chrono::milliseconds(1));
  });
  pool_->AwaitOnAll([this](Proactor* p) {
    StopWorkers();
    // Values are freed on the heap of the thread that allocated them.
    Shard::set_current(nullptr);
    shards_[p->index()].reset();
  });
}

int Hz() { return g_hz.load(std::memory_order_relaxed); }
void SetHz(int hz) { g_hz.store(std::clamp(hz, kMinHz, kMaxHz), std::memory_order_relaxed); }

void ShardSet::ExpiryLoop(Shard* shard) {
  Proactor* p = Proactor::current();
  auto next_hook = std::chrono::steady_clock::now() + kTickPeriod;
  while (!tl_stopping) {
    p->SleepFor(std::chrono::milliseconds(1000 / Hz()));
    if (tl_stopping) break;  // the shard is gone
    if (const auto now = std::chrono::steady_clock::now(); now >= next_hook) {
      next_hook = now + kTickPeriod;
      // Keeps the used bytes other threads see for maxmemory fresh even on a shard with no
      // writes, and lets reads evict after writes that grew it without a measure (MSET, ...).
      NoteUsedMemory(*shard, shard->used_memory_for_limit(), /*force_publish=*/true);
      // In a container, one thread samples the process' resident memory for all (see
      // MemoryLimit::UpdateResident); the others' used bytes are at most a tick old.
      if (shard->id() == 0 && MemoryLimit::container_limit() != 0) {
        MemoryLimit::UpdateResident(io::ProcessResidentBytes(), MemoryLimit::PublishedTotal());
      }
      if (periodic_hook_ != nullptr) {
        tl_in_periodic_hook = true;
        periodic_hook_();
        tl_in_periodic_hook = false;
      }
    }
    shard->ShrinkTables();
    // Active defragmentation, when on and the heap is fragmented (shard/defrag.h). It yields
    // between slices: after each it asks whether the thread is stopping (the shard goes then).
    shard->defrag().Cron(*shard, Hz(), [] { return tl_stopping; });
    if (tl_stopping) break;
    FreeLazily(*shard);
    if (tl_stopping) break;
    if (!active_expire_.load(std::memory_order_relaxed)) continue;
    // Keep removing while whole chunks come back, yielding between chunks: expired keys do not
    // pile up, and connections on this thread still get their turn.
    // As Redis: go on while more than a tenth of what was looked at had expired.
    // Removed keys are offered to their blocked clients (an XREADGROUP waiter fails when its
    // stream expires, as in Redis).
    // The cycle's "expire-cycle" latency sample is its work so far, recorded before each yield
    // too: a client served in between that sees a key gone (Redis runs the cycle in one go) sees
    // the sample. The monitor keeps one sample a second, the largest, so the cycle's total wins.
    size_t examined = 0;
    std::chrono::steady_clock::duration worked{};
    auto sample = [&] {
      if (latency_hook_ != nullptr) {
        latency_hook_("expire-cycle",
                      std::chrono::duration_cast<std::chrono::microseconds>(worked).count());
      }
    };
    for (;;) {
      if (tl_stopping) break;
      const auto start = std::chrono::steady_clock::now();
      const size_t removed = shard->ExpireStep(NowMs(), kExpiryChunk, &examined);
      shard->ServeBlocked();
      worked += std::chrono::steady_clock::now() - start;
      if (removed * 10 <= examined) break;
      sample();
      io::YieldBetweenSlices();
    }
    if (!tl_stopping) sample();
  }
}

void ShardSet::FreeLazily(Shard& shard) {
  // Slices of kLazyFreeSliceUs, the clock checked between values, yielding to the connections
  // between slices, for at most a quarter of the period (Redis' bio thread frees on a CPU of its
  // own; here the shard's thread shares its time, as active expiry does).
  const auto period_us = 1000000 / Hz();
  const int max_slices = std::max(1, period_us / 4 / int(kLazyFreeSliceUs));
  const uint64_t slice = core::CycleClock::FromNs(kLazyFreeSliceUs * 1000);
  for (int i = 0; i < max_slices && !shard.lazy_free().empty(); ++i) {
    if (shard.lazy_free().FreeUntil(core::CycleClock::Now() + slice)) break;
    io::YieldBetweenSlices();
    if (tl_stopping) return;  // the shard may be gone
  }
}

void ShardSet::TrackingLoop(Shard* shard) {
  // The nap lives here, not in the shard, which is gone when the last sleep ends.
  Proactor::Nap nap;
  shard->tracking().set_flush_nap(&nap);
  while (!tl_stopping) {
    nap.SleepFor(kTickPeriod);
    if (tl_stopping) break;  // the shard is gone
    // A transaction at work here (an EXEC, a multi-key command) may write more keys in its next
    // hop: its keys go out together, as Redis sends what one event-loop pass wrote. Not for long.
    for (int i = 0; i < 10 && shard->tx_queue().any_locks(); ++i) {
      nap.SleepFor(std::chrono::milliseconds(1));
      if (tl_stopping) return;
    }
    shard->tracking().FlushBroadcasts();
    // A lowered tracking-table-max-keys takes effect here, as in Redis' cron.
    shard->tracking().EnforceLimit();
  }
}

uint64_t ShardSet::RoutingHash(std::string_view key, uint64_t key_hash) {
  // Redis Cluster's rule: hash only what is between the first '{' and the next '}', if non-empty.
  size_t open = key.find('{');
  if (open == std::string_view::npos) return key_hash;
  size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key_hash;
  return core::HashBytes(key.substr(open + 1, close - open - 1));
}

void ShardSet::Await(unsigned sid, absl::FunctionRef<void(Shard&)> fn) {
  Proactor* self = Proactor::current();
  if (sid == self->index()) {
    fn(*Shard::current());
    return;
  }
  HopWaiter waiter{1, context::active(), false};
  FnHop hop(fn, &waiter);
  self->SendHop(sid, &hop);
  waiter.Wait();
}

void ShardSet::AwaitShards(const std::vector<unsigned>& sids, absl::FunctionRef<void(Shard&)> fn,
                           io::HopStart start) {
  Proactor* self = Proactor::current();
  HopWaiter waiter{0, context::active(), false};
  std::vector<FnHop> hops;
  hops.reserve(sids.size());
  bool run_local = false;
  for (unsigned sid : sids) {
    if (sid == self->index()) {
      run_local = true;
      continue;
    }
    hops.emplace_back(fn, &waiter);
    ++waiter.outstanding;
    self->SendHop(sid, &hops.back(), start);
  }
  // The local part runs while the remote shards work on theirs.
  if (run_local) fn(*Shard::current());
  waiter.Wait();
}

void ShardSet::AwaitAll(absl::FunctionRef<void(Shard&)> fn, io::HopStart start) {
  std::vector<unsigned> all(size());
  for (unsigned i = 0; i < size(); ++i) all[i] = i;
  AwaitShards(all, fn, start);
}

namespace {

// A job run in a fiber on a remote shard; its fiber posts `done` back to the origin at the end.
struct FiberJob {
  const std::function<void(Shard&)>* fn;
  HopWaiter* waiter;
  unsigned origin;
};

void FiberJobDone(void* arg) { static_cast<FiberJob*>(arg)->waiter->OneDone(); }

void FiberJobStart(void* arg) {
  Proactor::current()->Launch([job = static_cast<FiberJob*>(arg)] {
    (*job->fn)(*Shard::current());
    Proactor::current()->Post(job->origin, io::Task{&FiberJobDone, job});
  });
}

}  // namespace

void ShardSet::AwaitInWorker(unsigned sid, absl::FunctionRef<void(Shard&)> fn) {
  Proactor* self = Proactor::current();
  if (sid == self->index()) {
    fn(*Shard::current());
    return;
  }
  HopWaiter waiter{1, context::active(), false};
  WorkerJob job{fn, &waiter, self->index()};
  self->Post(sid, io::Task{&WorkerJobArrive, &job});
  waiter.Wait();
}

void ShardSet::AwaitAllInFibers(const std::function<void(Shard&)>& fn) {
  Proactor* self = Proactor::current();
  HopWaiter waiter{0, context::active(), false};
  std::vector<FiberJob> jobs(size(), FiberJob{&fn, &waiter, self->index()});
  for (unsigned sid = 0; sid < size(); ++sid) {
    if (sid == self->index()) continue;
    ++waiter.outstanding;
    self->Post(sid, io::Task{&FiberJobStart, &jobs[sid]});
  }
  fn(*Shard::current());
  waiter.Wait();
}

}  // namespace shardis::shard

#include "server/pipeline_runs.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <boost/fiber/context.hpp>

#include <algorithm>

#include "shard/shard_set.h"

DEFINE_string(pipeline_order, "strict",
              "strict: a connection's commands take effect in the order it sent them, across "
              "shards, as in Redis; relaxed: a pipeline's commands for different shards run in "
              "parallel, so other clients may see a later one's effect first");

namespace {

bool ValidPipelineOrder(const char* /*flag*/, const std::string& value) {
  return value == "strict" || value == "relaxed";
}
const bool pipeline_order_checked =
    gflags::RegisterFlagValidator(&FLAGS_pipeline_order, &ValidPipelineOrder);

}  // namespace

namespace shardis::server {

using boost::fibers::context;

bool RelaxedPipelineOrder() {
  // Read once the flags are final (the first connection): the order is fixed for the process.
  static const bool relaxed = FLAGS_pipeline_order == "relaxed";
  return relaxed;
}

void PipelineRuns::Executor::RunItemsInFiber(unsigned sid, size_t begin, size_t end) {
  const size_t ran = RunItems(*shard::Shard::current(), begin, end);
  if (begin + ran < end) RunLockedItems(sid, begin + ran, end);
}

PipelineRuns::PipelineRuns(io::Proactor* proactor, Executor* executor,
                           shard::HandedOffWork* handed_off)
    : proactor_(proactor), executor_(executor), handed_off_(handed_off) {
  chain_.runs = this;
}

void PipelineRuns::Add(unsigned sid, bool in_fiber) {
  if (runs_.empty() || runs_.back().shard != sid) {
    const size_t at = size();
    runs_.push_back({sid, at, at, false});
  }
  ++runs_.back().end;
  runs_.back().in_fiber |= in_fiber;
}

void PipelineRuns::RunAll() {
  if (runs_.empty()) return;
  fiber_ = context::active();
  if (RelaxedPipelineOrder()) {
    RunRelaxed();
  } else {
    RunStrict();
  }
  WaitMoves();  // those a worker's or the relaxed order's runs woke
  runs_.clear();
}

void PipelineRuns::RunHere(const Run& run) {
  const size_t ran = executor_->RunItems(*shard::Shard::current(), run.begin, run.end);
  if (run.begin + ran < run.end) executor_->RunLockedItems(run.shard, run.begin + ran, run.end);
}

void PipelineRuns::RunInWorker(const Run& run) {
  shard::shard_set->AwaitInWorker(run.shard, [&](shard::Shard&) {
    executor_->RunItemsInFiber(run.shard, run.begin, run.end);
  });
}

void PipelineRuns::RunStrict() {
  const unsigned self = proactor_->index();
  size_t r = 0;
  while (r < runs_.size()) {
    if (runs_[r].in_fiber) {
      RunInWorker(runs_[r++]);
      WaitMoves();
      continue;
    }
    if (runs_[r].shard == self) {
      RunHere(runs_[r++]);
      WaitMoves();
      continue;
    }
    // The chain runs r and every following run up to the next one of ours, or one that goes to a
    // worker fiber (or the end).
    chain_.next = r;
    chain_.locked = false;
    outstanding_ = 1;
    proactor_->SendHop(runs_[r].shard, &chain_);
    WaitHops();
    r = chain_.next;
    if (chain_.locked) {
      // Stopped at a key a transaction holds: the rest of that run waits for it here, and the
      // chain goes on after it.
      const Run& run = runs_[r++];
      executor_->RunLockedItems(run.shard, run.begin + chain_.ran, run.end);
    }
    WaitMoves();  // the chain came home after a run that woke moves
  }
}

void PipelineRuns::ChainHop::Run() {
  // On the shard of run `next`.
  shard::Shard& shard = *shard::Shard::current();
  const std::vector<PipelineRuns::Run>& all = runs->runs_;
  const PipelineRuns::Run& run = all[next];
  DCHECK_EQ(run.shard, shard.id());
  ran = runs->executor_->RunItems(shard, run.begin, run.end);
  if (run.begin + ran < run.end) {
    locked = true;  // home: the origin waits for the transaction
    return;
  }
  ++next;
  if (runs->MovesPending()) return;  // home: the origin waits for them before the next run
  if (next < all.size() && all[next].shard != runs->proactor_->index() && !all[next].in_fiber) {
    ForwardTo(all[next].shard);
  }
}

void PipelineRuns::ChainHop::Done() { runs->HopDone(); }

void PipelineRuns::RunRelaxed() {
  const unsigned self = proactor_->index();
  DCHECK(std::none_of(runs_.begin(), runs_.end(), [](const Run& r) { return r.in_fiber; }));
  if (shard_hops_.empty()) {
    shard_hops_.resize(shard::shard_set->size());
    for (unsigned i = 0; i < shard_hops_.size(); ++i) {
      shard_hops_[i].runs = this;
      shard_hops_[i].shard = i;
    }
  }
  // One hop per remote shard, all in flight at once; our own runs meanwhile, here.
  for (ShardHop& hop : shard_hops_) hop.sent = false;
  outstanding_ = 0;
  for (const Run& run : runs_) {
    ShardHop& hop = shard_hops_[run.shard];
    if (run.shard == self || hop.sent) continue;
    hop.sent = true;
    hop.stopped_run = SIZE_MAX;
    ++outstanding_;
    proactor_->SendHop(run.shard, &hop);
  }
  for (const Run& run : runs_) {
    if (run.shard == self) RunHere(run);
  }
  WaitHops();
  // What locked keys stopped runs in order behind the transactions, shard by shard.
  for (unsigned sid = 0; sid < shard_hops_.size(); ++sid) {
    const ShardHop& hop = shard_hops_[sid];
    if (!hop.sent || hop.stopped_run == SIZE_MAX) continue;
    for (size_t r = hop.stopped_run; r < runs_.size(); ++r) {
      const Run& run = runs_[r];
      if (run.shard != sid) continue;
      const size_t from = r == hop.stopped_run ? run.begin + hop.ran : run.begin;
      executor_->RunLockedItems(sid, from, run.end);
    }
  }
}

void PipelineRuns::ShardHop::Run() {
  shard::Shard& s = *shard::Shard::current();
  const std::vector<PipelineRuns::Run>& all = runs->runs_;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].shard != shard) continue;
    ran = runs->executor_->RunItems(s, all[r].begin, all[r].end);
    if (all[r].begin + ran < all[r].end) {
      stopped_run = r;
      return;
    }
  }
}

void PipelineRuns::ShardHop::Done() { runs->HopDone(); }

void PipelineRuns::WaitHops() {
  while (outstanding_ > 0) {
    waiting_ = true;
    fiber_->suspend();
    waiting_ = false;
  }
}

void PipelineRuns::HopDone() {
  // Back on the connection's thread, in its loop.
  if (--outstanding_ == 0 && waiting_) context::active()->schedule(fiber_);
}

}  // namespace shardis::server

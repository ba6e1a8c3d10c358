// PipelineRuns: the commands of one connection that wait for their turn on their shards, in the
// order the client sent them, cut into runs of consecutive commands for the same shard, and the
// hops that execute them (docs/pipelines.md).
//
// Redis' order (--pipeline_order=strict, the default): a run starts only after the run before it
// has finished, so no command of a connection takes effect before the commands it sent earlier,
// whatever shards they are on. One message per run: the shard that finishes a run hands the rest
// of the chain straight to the next run's shard (io::Hop::ForwardTo); only a run on the
// connection's own thread, or the end, brings the chain home.
//
// The relaxed order (--pipeline_order=relaxed, Dragonfly's pipeline squashing): every shard gets
// one hop with all of its runs, the shards run in parallel, and the connection's own commands are
// not queued at all. Each shard still runs the connection's commands in their order, but other
// clients can see a later command's effect before an earlier one's on another shard.
//
// A run with an item that may block (a script: it waits for its transaction, and a busy one
// yields) runs in a worker fiber on its shard's thread instead (ShardSet::AwaitInWorker), still
// one hop for the whole run. Only the strict order has such runs.
//
// A command whose write woke a BLMOVE that moves across shards (shard/blocking.h, HandedOffWork)
// ends its run there: the connection waits for the move before the rest runs, so that its next
// commands see the move done, as in Redis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/proactor.h"
#include "shard/shard.h"

namespace boost::fibers {
class context;
}

namespace shardis::server {

// --pipeline_order=relaxed (strict or relaxed; the start stops on anything else).
bool RelaxedPipelineOrder();

class PipelineRuns {
 public:
  // Runs the items, which belong to the caller (arguments, reply slots): PipelineRuns knows them
  // only by index, in the order they were added.
  class Executor {
   public:
    // On shard `s`'s thread (inline in its loop when it is not the connection's, so it must not
    // block): runs items [begin, end) in order. Returns how many ran: it stops before an item
    // whose key a transaction holds, or after one that woke moves (the rest go to
    // RunLockedItems).
    virtual size_t RunItems(shard::Shard& s, size_t begin, size_t end) = 0;
    // In the connection's fiber: runs items [begin, end), all for shard `sid`, behind the
    // transaction that holds their keys and the moves that earlier items woke (it may wait).
    virtual void RunLockedItems(unsigned sid, size_t begin, size_t end) = 0;
    // In a fiber on shard `sid`'s thread (a worker, or the connection's own fiber when it is that
    // shard's): runs items [begin, end), all for shard `sid`, in order; any may block. This one
    // runs items that do not block: RunItems, then RunLockedItems for what a transaction holds.
    virtual void RunItemsInFiber(unsigned sid, size_t begin, size_t end);

   protected:
    ~Executor() = default;
  };

  // moves: where the items' writes count the moves across shards they wake (nullptr: they wake
  // none, e.g. memcached commands).
  PipelineRuns(io::Proactor* proactor, Executor* executor,
               shard::HandedOffWork* handed_off = nullptr);
  PipelineRuns(const PipelineRuns&) = delete;
  PipelineRuns& operator=(const PipelineRuns&) = delete;

  bool empty() const { return runs_.empty(); }
  // Items added since the last RunAll.
  size_t size() const { return runs_.empty() ? 0 : runs_.back().end; }
  // Appends the next item, for shard `sid`; in_fiber: it may block (its run goes to a worker fiber,
  // see the top of the file; strict order only).
  void Add(unsigned sid, bool in_fiber = false);
  // Runs every item added, in the configured order, and returns once all have run and the moves
  // they woke are done; then starts empty again. Call from the connection's fiber.
  void RunAll();

 private:
  struct Run {
    unsigned shard;
    size_t begin, end;  // items
    bool in_fiber;      // an item may block: the run goes to a worker fiber
  };

  // Strict order: the one hop of the chain, carried from run to run.
  class ChainHop final : public io::Hop {
   public:
    PipelineRuns* runs = nullptr;
    size_t next = 0;    // the run to execute next
    size_t ran = 0;     // items of run `next` that ran when the chain stopped at a locked key
    bool locked = false;
    void Run() override;
    void Done() override;
  };
  // Relaxed order: one hop per shard with all of that shard's runs.
  class ShardHop final : public io::Hop {
   public:
    PipelineRuns* runs = nullptr;
    unsigned shard = 0;
    bool sent = false;       // part of this RunAll
    size_t stopped_run = 0;  // the run where a locked key stopped it (SIZE_MAX: none)
    size_t ran = 0;          // items of that run that ran
    void Run() override;
    void Done() override;
  };

  void RunStrict();
  void RunRelaxed();
  // Runs run r on the calling (connection's) thread, locked items included.
  void RunHere(const Run& run);
  // Runs an in_fiber run in a fiber on its shard's thread, and returns once it has run.
  void RunInWorker(const Run& run);
  // Suspends the connection's fiber until every hop in flight is back.
  void WaitHops();
  void HopDone();
  // The moves the items woke: whether any is pending (on the thread running them) / waits for them.
  bool MovesPending() const { return handed_off_ != nullptr && handed_off_->pending(); }
  void WaitMoves() {
    if (handed_off_ != nullptr) handed_off_->Wait();
  }

  io::Proactor* proactor_;
  Executor* executor_;
  shard::HandedOffWork* handed_off_;
  std::vector<Run> runs_;
  ChainHop chain_;
  std::vector<ShardHop> shard_hops_;  // by shard id, for the relaxed order
  int outstanding_ = 0;               // hops in flight
  bool waiting_ = false;              // the fiber is suspended in WaitHops
  boost::fibers::context* fiber_ = nullptr;
};

}  // namespace shardis::server

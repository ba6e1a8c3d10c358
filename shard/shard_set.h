// ShardSet: which shard owns a key, and the hops that run code on other shards. A hop reads like a
// function call: `shard_set->Await(sid, [&](Shard& s) { ... })` runs the lambda on the owner's
// thread and resumes the calling fiber when it is done.
#pragma once

#include <absl/functional/function_ref.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/compact_value.h"
#include "io/proactor_pool.h"
#include "shard/shard.h"

namespace shardis::shard {

class ShardSet {
 public:
  explicit ShardSet(io::ProactorPool* pool);
  ~ShardSet();

  // Creates each thread's Shard on its own thread and starts its active-expiry fiber.
  void Start();
  // Stops the background fibers and destroys each Shard on its own thread (call before the pool
  // stops).
  void Stop();

  unsigned size() const { return unsigned(shards_.size()); }
  // The shard that owns `key`: a hash of the key, or of its {hashtag} when it has a non-empty one,
  // so that users can place related keys on one shard.
  unsigned ShardOf(std::string_view key) const { return ShardOf(key, core::HashBytes(key)); }
  // The same when the caller already has key_hash = core::HashBytes(key) (the table lookup needs
  // it anyway): a key without a hashtag is routed by that very hash.
  unsigned ShardOf(std::string_view key, uint64_t key_hash) const {
    if (shards_.size() == 1) return 0;
    return unsigned(RoutingHash(key, key_hash) % shards_.size());
  }
  // The hash that routes a key: of its {hashtag} when it has a non-empty one, else key_hash.
  static uint64_t RoutingHash(std::string_view key, uint64_t key_hash);
  static uint64_t HashKey(std::string_view key) { return RoutingHash(key, core::HashBytes(key)); }

  // --- Hops. Call from a fiber on a proactor thread. fn runs inline in the target's loop, so it
  // must not block; writes it makes to caller memory must not overlap between shards.
  void Await(unsigned sid, absl::FunctionRef<void(Shard&)> fn);
  // Runs fn on every shard in parallel (the local one inline) and waits for all. `start`: work
  // that looks at or delivers to the connections of each thread (pub/sub) passes
  // kAfterArrivedInput, so that on each remote thread it follows the input that reached the
  // thread before it (io::Proactor::RunAfterArrivedInput). The local part runs at once: input
  // that reached this thread before the caller's own was taken in no later, and the fibers it
  // woke ran before the caller's (the ready queue is FIFO).
  void AwaitAll(absl::FunctionRef<void(Shard&)> fn, io::HopStart start = io::HopStart::kOnArrival);
  // Runs fn on the listed shards in parallel and waits for all (`start` as in AwaitAll).
  void AwaitShards(const std::vector<unsigned>& sids, absl::FunctionRef<void(Shard&)> fn,
                   io::HopStart start = io::HopStart::kOnArrival);
  // Runs fn in a new fiber on every shard, so it may block or yield (long jobs such as
  // DEBUG POPULATE), and waits for all of them.
  void AwaitAllInFibers(const std::function<void(Shard&)>& fn);
  // Runs fn in a fiber on shard sid, so that it may wait for other shards itself (a script run
  // on its keys' shard), and waits for it; in the calling fiber when sid is the local shard.
  // Per request: the fibers come from a pool each thread keeps (started as needed, never more
  // than the jobs that wait at once), not from a new stack each time.
  void AwaitInWorker(unsigned sid, absl::FunctionRef<void(Shard&)> fn);

  io::ProactorPool* pool() { return pool_; }
  // Shard sid, from any thread: only what it says may be read from other threads may be touched
  // (ShardJournal::seq).
  Shard& shard(unsigned sid) { return *shards_[sid]; }

  // A function every shard thread calls on its own thread every 100 ms (next to active expiry, but
  // at that pace whatever the hz), for
  // the server's periodic work (INFO's instantaneous_ops_per_sec samples, closing idle clients).
  // Set once before Start().
  using PeriodicHook = void (*)();
  void set_periodic_hook(PeriodicHook hook) { periodic_hook_ = hook; }

  // Called on a shard's thread with the time an active expiry cycle worked (not counting its
  // yields), for Redis' latency event "expire-cycle" (the server's latency monitor decides
  // whether it is a sample). Set once before Start().
  using LatencyHook = void (*)(const char* event, uint64_t duration_us);
  void set_latency_hook(LatencyHook hook) { latency_hook_ = hook; }

  // DEBUG SET-ACTIVE-EXPIRE: whether the active expiry cycle runs (on by default; tests turn it
  // off to see keys expire lazily, on access).
  void set_active_expire(bool on) { active_expire_.store(on, std::memory_order_relaxed); }

 private:
  void ExpiryLoop(Shard* shard);
  // One tick's share of freeing the shard's lazy-free queue (shard/lazy_free.h), from ExpiryLoop.
  static void FreeLazily(Shard& shard);
  // CLIENT TRACKING's BCAST messages and table limit, on each shard (tracking_table.h).
  static void TrackingLoop(Shard* shard);
  PeriodicHook periodic_hook_ = nullptr;
  LatencyHook latency_hook_ = nullptr;
  std::atomic<bool> active_expire_{true};

  io::ProactorPool* pool_;
  std::vector<std::unique_ptr<Shard>> shards_;  // shards_[i] is only touched by thread i
};

// Redis' hz: how many times a second each shard looks for expired keys. SetHz clamps it to
// 1..500, as Redis does with CONFIG SET hz. Any thread may read or set it.
int Hz();
void SetHz(int hz);

// The process' shard set (set by main before serving).
extern ShardSet* shard_set;

}  // namespace shardis::shard

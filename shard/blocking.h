// Blocking commands (BLPOP, BLMOVE, BZPOPMIN, ...), the shard's side: which clients wait for which
// keys of this shard, in the order they blocked, and serving them when a write makes a key ready.
// See docs/transactions.md ("Blocking commands").
//
// A blocked client is a Waiter that lives in its command's fiber (on the client's thread) and is
// registered with the shard of each of its keys. A write to a key that has waiters marks the key
// ready (Db::NoteModified); once the write's command or transaction is over on this shard and no
// transaction holds the key, ServeReady offers the key to its waiters in blocking order. A waiter
// that can use the key claims itself (one atomic compare-and-swap, so that a client blocked on
// keys of several shards is served once) and is served right there, on the owner's thread, in
// the same loop iteration as the write: nobody can take the element in between.
//
// A BLMOVE whose destination lives on another shard cannot be served there: it reserves the
// element and its client runs the move as a transaction of its own. Redis completes such moves
// (and the moves they trigger in turn) before the next command of any client runs; here the
// command whose write woke it waits for them before it replies (HandedOffWork).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::fibers {
class context;
}

namespace shardis::shard {

class Shard;
class Db;

// The work one client's command handed to other clients to finish in their own fibers, which the
// client waits for before that command replies and before its next command runs, as Redis has it
// done by then: the moves its writes handed to BLMOVE clients (see the top of the file), and the
// command a CLIENT UNBLOCK ended (which reports once it has replied and been counted,
// server/blocked_client.h). One per connection, on its thread. A shard adds to it while the client
// waits for that shard's step (the rings order the two); each other client reports its part done
// on the client's thread (a moving client once the moves its move woke are done too).
class HandedOffWork {
 public:
  HandedOffWork() = default;
  HandedOffWork(const HandedOffWork&) = delete;
  HandedOffWork& operator=(const HandedOffWork&) = delete;

  // The client's thread, set once before any use.
  void set_thread(unsigned thread) { thread_ = thread; }
  // On the shard that hands a move over, or the thread of the client CLIENT UNBLOCK ends.
  void Add() { pending_.fetch_add(1, std::memory_order_relaxed); }
  // On the moving (or unblocked) client's thread, once its move (or command) is done.
  void Done();
  bool pending() const { return pending_.load(std::memory_order_relaxed) > 0; }
  // In the client's fiber: returns once all the work handed off is done. Inline: every command
  // calls it, and almost never has anything to wait for.
  void Wait() {
    if (pending()) [[unlikely]] WaitForPending();
  }

 private:
  void WaitForPending();
  static void Completed(void* arg);  // on the client's thread

  unsigned thread_ = 0;
  // Atomic: in the relaxed pipeline order, several shards run the client's commands at once.
  std::atomic<int> pending_{0};
  boost::fibers::context* waiting_ = nullptr;  // the fiber in Wait
};

class Waiter {
 public:
  enum State : int {
    kWaiting,  // registered, may be claimed
    kClaimed,  // a shard is serving it
    kServed,   // the shard wrote the outcome; the client's thread is being woken
    kGaveUp,   // timed out, disconnected, or served by its first attempt: claims fail
  };
  // What a waiter does with a ready key.
  // kReserved: it claimed the key's next element without taking it (it takes it in a
  // transaction of its own, right after): the key is not offered to later waiters meanwhile. The
  // registry then wakes it (FinishReserved) rather than TryServe.
  enum class Offer { kServed, kReserved, kNotServable, kGone };

  virtual ~Waiter() = default;

  // On the key's shard: uses the ready key (in db) if it can. kNotServable: it cannot use this
  // key now (wrong type, nothing to take); kGone: it was claimed elsewhere or gave up. A waiter
  // that can use the key calls Claim() before changing anything, then Finish() (unless it
  // returns kReserved).
  virtual Offer TryServe(Shard& shard, Db& db, std::string_view key) = 0;

  // Any thread: kWaiting -> kClaimed. False when another shard claimed it or it gave up.
  bool Claim() {
    int expected = kWaiting;
    // acq_rel: the claimer sees the waiter's setup; the client's thread sees what the claimer
    // wrote once it observes kServed (release in Finish).
    return state_.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel);
  }
  // The client's thread: kWaiting -> kGaveUp. False when a shard claimed it first (the client
  // must then wait for the wake-up that the claimer sends).
  bool GiveUp() {
    int expected = kWaiting;
    return state_.compare_exchange_strong(expected, kGaveUp, std::memory_order_acq_rel);
  }
  State state() const { return State(state_.load(std::memory_order_acquire)); }
  // The client's thread, once no shard holds a registration any more: waits again.
  void Rearm() { state_.store(kWaiting, std::memory_order_relaxed); }

  // The claimer, after writing the outcome: marks it served and wakes the client's fiber (a task
  // posted to the client's thread, or a direct wake-up when that is this thread).
  void Finish();
  // The registry, after kReserved: the writes of `by`'s client woke the waiter (nullptr: no
  // client's, e.g. expiry), which reports its move done to `by` (ReportMoved). Then Finish().
  void FinishReserved(HandedOffWork* by);
  // The client's thread, once the move it reserved is done (moved, or the element was gone).
  void ReportMoved() {
    if (reserved_by_ != nullptr) std::exchange(reserved_by_, nullptr)->Done();
  }

  // Set by the client's thread before registering.
  unsigned origin = 0;          // the client's thread
  // The key's deletion ends the wait (XREADGROUP; Redis 7.2's unblock_on_nokey), counted by
  // INFO's total_blocking_keys_on_nokey.
  bool unblock_on_nokey = false;
  void (*wake)(void*) = nullptr;  // runs on `origin` with wake_arg once served
  void* wake_arg = nullptr;

 private:
  std::atomic<int> state_{kWaiting};
  HandedOffWork* reserved_by_ = nullptr;  // written before Finish, read after the wake-up
};

// One shard's blocked clients. Only the shard's thread touches it.
class BlockingRegistry {
 public:
  // Whether any client waits on this shard (the check every write makes).
  bool has_waiters() const { return !waiters_.empty(); }
  bool has_ready() const { return !ready_.empty(); }

  void Add(int db, std::string_view key, Waiter* w);
  // Removes w from key's queue (no-op when it is not there).
  void Remove(int db, std::string_view key, Waiter* w);
  // A write to key: its waiters get a chance once the write is over.
  void NoteReady(int db, std::string_view key);
  // Every key of database db that has waiters (SWAPDB brought new values in).
  void NoteDbReady(int db);
  // Offers every ready key that no transaction holds to its waiters, in blocking order. The moves
  // that waiters reserve are handed to `by` (the client whose writes made the keys ready).
  void ServeReady(Shard& shard, HandedOffWork* by);
  // The keys clients wait for here, and those of them at least one waiter of which ends its wait
  // when the key is deleted (INFO's total_blocking_keys and total_blocking_keys_on_nokey).
  size_t blocking_keys() const { return waiters_.size(); }
  size_t blocking_keys_on_nokey() const;

 private:
  using DbKey = std::pair<int, std::string>;
  absl::flat_hash_map<DbKey, std::deque<Waiter*>> waiters_;
  std::vector<DbKey> ready_;
  bool serving_ = false;  // ServeReady is on the stack (serving writes re-mark keys ready)
};

}  // namespace shardis::shard

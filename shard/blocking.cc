#include "shard/blocking.h"

#include <algorithm>
#include <glog/logging.h>

#include <boost/fiber/context.hpp>

#include "io/proactor.h"
#include "shard/shard.h"

namespace shardis::shard {

void Waiter::Finish() {
  state_.store(kServed, std::memory_order_release);
  io::Proactor* self = io::Proactor::current();
  if (self->index() == origin) {
    wake(wake_arg);
  } else {
    self->Post(origin, io::Task{wake, wake_arg});
  }
}

void Waiter::FinishReserved(HandedOffWork* by) {
  if (by != nullptr) by->Add();
  reserved_by_ = by;  // the release in Finish publishes it to the client's thread
  Finish();
}

void HandedOffWork::Done() {
  io::Proactor* self = io::Proactor::current();
  if (self->index() == thread_) {
    Completed(this);
  } else {
    self->Post(thread_, io::Task{&HandedOffWork::Completed, this});
  }
}

void HandedOffWork::Completed(void* arg) {
  auto* work = static_cast<HandedOffWork*>(arg);
  if (work->pending_.fetch_sub(1, std::memory_order_relaxed) == 1 && work->waiting_ != nullptr) {
    boost::fibers::context::active()->schedule(work->waiting_);
  }
}

void HandedOffWork::WaitForPending() {
  DCHECK_EQ(io::Proactor::current()->index(), thread_)
      << "handed-off work reports to the client's thread";
  while (pending()) {
    waiting_ = boost::fibers::context::active();
    waiting_->suspend();
    waiting_ = nullptr;
  }
}

void BlockingRegistry::Add(int db, std::string_view key, Waiter* w) {
  waiters_[DbKey(db, std::string(key))].push_back(w);
}

void BlockingRegistry::Remove(int db, std::string_view key, Waiter* w) {
  auto it = waiters_.find(DbKey(db, std::string(key)));
  if (it == waiters_.end()) return;
  auto& q = it->second;
  q.erase(std::remove(q.begin(), q.end(), w), q.end());
  if (q.empty()) waiters_.erase(it);
}

void BlockingRegistry::NoteReady(int db, std::string_view key) {
  DbKey k(db, std::string(key));
  if (!waiters_.contains(k)) return;
  if (std::find(ready_.begin(), ready_.end(), k) == ready_.end()) ready_.push_back(std::move(k));
}

void BlockingRegistry::NoteDbReady(int db) {
  for (const auto& [k, q] : waiters_) {
    if (k.first == db) NoteReady(k.first, k.second);
  }
}

void BlockingRegistry::ServeReady(Shard& shard, HandedOffWork* by) {
  // Serving pops, and a pop is a write that marks its key ready again: the outer call's loop
  // picks that up.
  if (serving_) return;
  serving_ = true;
  std::vector<DbKey> held;  // locked by a transaction: served when it releases them
  while (!ready_.empty()) {
    DbKey k = std::move(ready_.back());
    ready_.pop_back();
    if (shard.tx_queue().Conflicts(k.first, k.second, /*write=*/true)) {
      held.push_back(std::move(k));
      continue;
    }
    auto it = waiters_.find(k);
    if (it == waiters_.end()) continue;
    Db& db = shard.db(k.first);
    // In blocking order. A served or dead waiter leaves the queue; one that cannot use the key
    // (another type's waiter) keeps its place. Each offer either serves one waiter or moves on,
    // so this ends.
    std::deque<Waiter*>& q = it->second;
    for (size_t i = 0; i < q.size();) {
      const Waiter::Offer offer = q[i]->TryServe(shard, db, k.second);
      if (offer == Waiter::Offer::kNotServable) {
        ++i;
        continue;
      }
      Waiter* served = q[i];
      q.erase(q.begin() + long(i));
      if (offer == Waiter::Offer::kReserved) {
        served->FinishReserved(by);
        break;
      }
      // The serve may have emptied the key; the next waiters are offered it anyway and decline.
    }
    if (q.empty()) waiters_.erase(it);
  }
  ready_ = std::move(held);
  serving_ = false;
}

size_t BlockingRegistry::blocking_keys_on_nokey() const {
  size_t n = 0;
  for (const auto& [key, q] : waiters_) {
    n += std::any_of(q.begin(), q.end(), [](const Waiter* w) { return w->unblock_on_nokey; });
  }
  return n;
}

}  // namespace shardis::shard

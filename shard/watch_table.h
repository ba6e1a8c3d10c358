// WatchTable: the WATCHed keys of one database of one shard, and who watches them. A write to a
// watched key (by a command, a transaction, expiry or FLUSHDB) marks every watcher dirty, and the
// watcher's EXEC then fails; as in Redis 7, a key already expired (not yet removed) when WATCHed
// is no change when expiry removes it, nor when FLUSHDB or SWAPDB leave it gone or expired.
// Owned by the shard's thread; only the dirty flag crosses threads: it is read by the watcher's
// EXEC after a hop to this shard, which orders it after the write.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <utility>

#include "core/string_util.h"

namespace shardis::shard {

// One connection's WATCH state (it lives in the connection and outlives its registrations: the
// connection unwatches, with a hop to each shard, before it is destroyed).
struct WatchState {
  std::atomic<bool> dirty{false};
};

class WatchTable {
 public:
  bool empty() const { return watchers_.empty(); }

  // `expired`: the key was in the database with its deadline passed when WATCHed (Redis 7's
  // watchedKey.expired): its removal by expiry is no change for this watcher.
  void Add(std::string_view key, WatchState* w, bool expired) {
    auto& list = watchers_[key];
    for (const Watcher& x : list) {
      if (x.state == w) return;
    }
    list.push_back({w, expired});
  }
  void Remove(std::string_view key, WatchState* w) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    auto& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [w](const Watcher& x) { return x.state == w; }),
               list.end());
    if (list.empty()) watchers_.erase(it);
  }
  bool Contains(std::string_view key) const { return watchers_.contains(key); }
  // A write to key; `removed`: expiry or eviction took it out of the database (Redis'
  // touchWatchedKey after the delete), which a watcher that saw it expired already ignores, once.
  void Touch(std::string_view key, bool removed) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    for (Watcher& w : it->second) {
      if (std::exchange(w.expired, false) && removed) continue;
      w.state->dirty.store(true, std::memory_order_relaxed);
    }
  }
  // Every watched key: fn(key, bool& expired) says whether the watcher's EXEC must fail, and may
  // change what it knows of the key (FLUSHDB, SWAPDB: Redis' touchAllWatchedKeysInDb).
  template <typename Fn>
  void TouchEach(Fn&& fn) {
    for (auto& [key, list] : watchers_) {
      for (Watcher& w : list) {
        if (fn(std::string_view(key), w.expired)) {
          w.state->dirty.store(true, std::memory_order_relaxed);
        }
      }
    }
  }

 private:
  struct Watcher {
    WatchState* state;
    bool expired;
  };
  absl::flat_hash_map<std::string, absl::InlinedVector<Watcher, 2>, core::StringHash,
                      core::StringEq>
      watchers_;
};

}  // namespace shardis::shard

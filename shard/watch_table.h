// WatchTable: the WATCHed keys of one database of one shard, and who watches them. A write to a
// watched key (by a command, a transaction, expiry or FLUSHDB) marks every watcher dirty, and the
// watcher's EXEC then fails. Owned by the shard's thread; only the dirty flag crosses threads: it
// is read by the watcher's EXEC after a hop to this shard, which orders it after the write.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>

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

  void Add(std::string_view key, WatchState* w) {
    auto& list = watchers_[key];
    if (std::find(list.begin(), list.end(), w) == list.end()) list.push_back(w);
  }
  void Remove(std::string_view key, WatchState* w) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), w), list.end());
    if (list.empty()) watchers_.erase(it);
  }
  bool Contains(std::string_view key) const { return watchers_.contains(key); }
  // A write to key.
  void Touch(std::string_view key) {
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    for (WatchState* w : it->second) w->dirty.store(true, std::memory_order_relaxed);
  }
  // Touches the watched keys for which pred(key) is true (FLUSHDB: those that exist).
  template <typename Pred>
  void TouchIf(Pred&& pred) {
    for (auto& [key, list] : watchers_) {
      if (!pred(std::string_view(key))) continue;
      for (WatchState* w : list) w->dirty.store(true, std::memory_order_relaxed);
    }
  }

 private:
  absl::flat_hash_map<std::string, absl::InlinedVector<WatchState*, 2>, core::StringHash,
                      core::StringEq>
      watchers_;
};

}  // namespace shardis::shard

// One logical database (SELECT 0..15) of one shard: a key table plus an expiry index.
// Single-threaded: only the owning shard's thread touches it.
#pragma once

#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/string_util.h"

namespace shardis::shard {

// The kind of value a key holds (TYPE, WRONGTYPE). The foundation stores strings only; the data-type
// work adds the others.
enum class ObjType : uint8_t { kString };

struct Entry {
  std::string value;
  int64_t expire_at_ms = 0;  // absolute Unix time in ms; 0 = no expiry
  ObjType type = ObjType::kString;
};

class Db {
 public:
  // Looks a key up, deleting it first when it has expired by now_ms (lazy expiry).
  // Returns nullptr when the key is missing or expired.
  Entry* Find(std::string_view key, int64_t now_ms);

  // Finds a live key or inserts an empty string entry with no expiry. `inserted` tells which.
  // An expired entry found on the way is reset and reported as inserted.
  Entry* FindOrInsert(std::string_view key, int64_t now_ms, bool* inserted);

  // Removes a live key. Returns false when it was missing or had expired (an expired one is
  // removed too, but does not count, as in Redis).
  bool Erase(std::string_view key, int64_t now_ms);

  // Sets or clears (at_ms == 0) the expiry of an entry found through this Db.
  void SetExpire(std::string_view key, Entry* entry, int64_t at_ms);

  // Active expiry: deletes up to `max_keys` keys whose deadline is <= now_ms, oldest deadline first.
  // Returns how many it deleted.
  size_t ExpireSome(int64_t now_ms, size_t max_keys);

  size_t size() const { return table_.size(); }
  // Keys removed because their deadline passed (lazily or by the active cycle), for INFO.
  uint64_t expired_keys() const { return expired_keys_; }
  size_t expires_count() const { return deadlines_.size(); }
  // Sum of remaining TTLs of keys with expiry (for INFO's avg_ttl), in ms. O(1): it comes from a
  // running sum of the deadlines.
  int64_t SumTtlMs(int64_t now_ms) const;
  void Clear();

  // Calls fn(key, const Entry&) for each live key (KEYS). Expired keys are skipped, not deleted.
  template <typename Fn>
  void ForEachLive(int64_t now_ms, Fn&& fn) const {
    for (const auto& [key, entry] : table_) {
      if (entry.expire_at_ms != 0 && entry.expire_at_ms <= now_ms) continue;
      fn(std::string_view(key), entry);
    }
  }

 private:
  // Foundation representation; the performance issue replaces it with the segmented table.
  absl::flat_hash_map<std::string, Entry, core::StringHash, core::StringEq> table_;
  // (deadline, key) for every key with an expiry: the active cycle pops from the front, so expired
  // keys never pile up however large the table is.
  absl::btree_set<std::pair<int64_t, std::string>> deadlines_;
  __int128 deadline_sum_ = 0;  // sum of deadlines_' deadlines (may exceed 64 bits)
  uint64_t expired_keys_ = 0;

  void AddDeadline(int64_t at_ms, std::string_view key);
  void RemoveDeadline(int64_t at_ms, const std::string& key);
};

}  // namespace shardis::shard

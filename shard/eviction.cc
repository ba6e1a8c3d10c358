#include "shard/eviction.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "shard/shard.h"
#include "shard/shard_set.h"

namespace shardis::shard {

namespace {

// At most this many keys are evicted before one write, so that a write that lands on a shard far
// over its share (after CONFIG SET maxmemory lowered it) does not stall the thread; the next
// writes continue.
constexpr int kMaxEvictionsPerWrite = 1024;
// Random picks that may land on keys locked by a transaction before EvictOne gives up.
constexpr int kMaxAttempts = 16;

uint64_t RandomBits() {
  thread_local std::mt19937_64 gen(std::random_device{}());
  return gen();
}

// The key to evict from db under policy, or false when it has none to offer.
bool PickVictim(Db& db, EvictionPolicy policy, int64_t now_ms, std::string* key) {
  switch (policy) {
    case EvictionPolicy::kVolatileTtl: {
      // The nearest deadline among `samples` keys with a TTL (Redis samples the same way).
      int64_t best = 0;
      bool found = false;
      std::string candidate;
      int64_t deadline = 0;
      for (unsigned i = 0, n = std::min(MemoryLimit::samples(), 64u); i < n; ++i) {
        if (!db.SampleVolatileKey(RandomBits(), &candidate, &deadline)) break;
        if (!found || deadline < best) {
          best = deadline;
          *key = candidate;
          found = true;
        }
      }
      return found;
    }
    // No access clock lives in a value cell yet: the LRU/LFU policies evict a random key of the
    // same population (see README, "maxmemory and eviction").
    case EvictionPolicy::kVolatileLru:
    case EvictionPolicy::kVolatileLfu:
    case EvictionPolicy::kVolatileRandom: {
      int64_t deadline = 0;
      return db.SampleVolatileKey(RandomBits(), key, &deadline);
    }
    case EvictionPolicy::kAllKeysLru:
    case EvictionPolicy::kAllKeysLfu:
    case EvictionPolicy::kAllKeysRandom: {
      std::optional<std::string> k = db.RandomKey(RandomBits(), now_ms);
      if (!k) return false;
      *key = std::move(*k);
      return true;
    }
    case EvictionPolicy::kNoEviction:
      return false;
  }
  return false;
}

}  // namespace

bool EvictOne(Shard& s, EvictionPolicy policy, int64_t now_ms) {
  if (policy == EvictionPolicy::kNoEviction) return false;
  const bool volatile_only = IsVolatilePolicy(policy);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // A database picked with a probability proportional to its candidates.
    uint64_t total = 0;
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      total += volatile_only ? s.db(i).expires_count() : s.db(i).size();
    }
    if (total == 0) return false;
    uint64_t r = RandomBits() % total;
    int index = 0;
    for (; index < Shard::kNumDbs; ++index) {
      const uint64_t n = volatile_only ? s.db(index).expires_count() : s.db(index).size();
      if (r < n) break;
      r -= n;
    }
    Db& db = s.db(index);
    std::string key;
    if (!PickVictim(db, policy, now_ms, &key)) continue;
    // A key a transaction holds stays: the transaction counts on it between its hops.
    if (s.tx_queue().any_locks() && s.tx_queue().Conflicts(index, key, /*write=*/true)) continue;
    if (db.Erase(key, core::HashBytes(key), now_ms)) {
      db.NoteModified(key, /*writer=*/0);  // WATCHers fail their EXEC, trackers hear
      db.JournalDel(key);    // replayed, the key goes as it went here
      ++s.stats().evicted_keys;
      return true;
    }
  }
  return false;
}

bool MakeRoomForWrite(Shard& s, int64_t now_ms) {
  const uint64_t max = MemoryLimit::maxmemory();
  if (max == 0) return true;
  uint64_t used = s.used_memory();
  const EvictionPolicy policy = MemoryLimit::policy();
  if (policy != EvictionPolicy::kNoEviction) {
    const uint64_t share = MemoryLimit::share();
    bool stuck = false;
    for (int n = 0; used > share && n < kMaxEvictionsPerWrite; ++n) {
      if (!EvictOne(s, policy, now_ms)) {
        stuck = true;
        break;
      }
      used = s.used_memory();
    }
    MemoryLimit::Publish(s.id(), used);
    // Under the share, or still shedding after a full batch (the next writes go on, as Redis
    // accepts a command while its eviction is still running): the write may go ahead. Only a
    // shard with nothing left to evict falls back to the global test.
    if (!stuck) return true;
  } else {
    MemoryLimit::Publish(s.id(), used);
  }
  return used + MemoryLimit::PublishedTotal(s.id()) <= max;
}

bool AdmitUnderMaxMemory() {
  const uint64_t max = MemoryLimit::maxmemory();
  if (max == 0) return true;
  Shard* local = Shard::current();
  uint64_t total = 0;
  if (local != nullptr) {
    const uint64_t used = local->used_memory();
    MemoryLimit::Publish(local->id(), used);
    total = used + MemoryLimit::PublishedTotal(local->id());
  } else {
    total = MemoryLimit::PublishedTotal();
  }
  if (total <= max) return true;
  if (MemoryLimit::policy() == EvictionPolicy::kNoEviction) return false;
  // Slow path, over the limit only: the shards over their share make room on their threads.
  const uint64_t share = MemoryLimit::share();
  std::vector<unsigned> over;
  for (unsigned i = 0; i < shard_set->size(); ++i) {
    if (local != nullptr && i == local->id()) {
      if (local->used_memory() > share) over.push_back(i);
    } else if (MemoryLimit::Published(i) > share) {
      over.push_back(i);
    }
  }
  bool all_ok = true;
  std::vector<char> ok(shard_set->size(), 1);
  shard_set->AwaitShards(over, [&](Shard& s) {
    // Each shard writes only its own element.
    ok[s.id()] = MakeRoomForWrite(s, NowMs()) ? 1 : 0;
  });
  for (unsigned sid : over) all_ok = all_ok && ok[sid];
  if (all_ok) return true;
  const uint64_t after = local != nullptr ? local->used_memory() + MemoryLimit::PublishedTotal(
                                                                      local->id())
                                          : MemoryLimit::PublishedTotal();
  return after <= max;
}

}  // namespace shardis::shard

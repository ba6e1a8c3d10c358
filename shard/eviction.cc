#include "shard/eviction.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "shard/access_clock.h"
#include "shard/keyspace_events.h"
#include "shard/shard.h"
#include "shard/shard_set.h"

namespace shardis::shard {

namespace {

// At most this many keys are evicted before one command, so that a command that lands on a shard
// far over its share (after CONFIG SET maxmemory lowered it) does not stall the thread; the next
// commands continue.
constexpr int kMaxEvictionsPerCommand = 1024;
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
    case EvictionPolicy::kVolatileRandom: {
      int64_t deadline = 0;
      return db.SampleVolatileKey(RandomBits(), key, &deadline);
    }
    case EvictionPolicy::kAllKeysRandom: {
      std::optional<std::string> k = db.RandomKey(RandomBits(), now_ms);
      if (!k) return false;
      *key = std::move(*k);
      return true;
    }
    default:  // noeviction; the LRU and LFU policies go through the pool
      return false;
  }
}

// Removes key from db as an eviction; false when it is gone already or a transaction holds it
// (the transaction counts on it between its hops).
bool EvictKey(Shard& s, int index, const std::string& key, int64_t now_ms) {
  if (s.tx_queue().any_locks() && s.tx_queue().Conflicts(index, key, /*write=*/true)) return false;
  Db& db = s.db(index);
  if (!db.Erase(key, core::HashBytes(key), now_ms, LazyFreeOn(LazyFreePath::kEviction))) {
    return false;
  }
  db.NoteModified(key, /*writer=*/0, /*removed=*/true);  // WATCHers, trackers hear
  db.JournalDel(key);                  // replayed, the key goes as it went here
  NotifyKeyspaceEvent(kNotifyEvicted, "evicted", key, index);
  ++s.stats().evicted_keys;
  return true;
}

// Redis' eviction pool: the best candidates seen by the samples of this and earlier evictions,
// by ascending score (EvictionScore: idle time or 255 - LFU counter), at most kPoolSize. Entries
// may be stale (the key was read, deleted or its database flushed since): a pick re-checks that
// the key is there, as Redis does, but not its score. One pool per shard thread.
constexpr size_t kPoolSize = 16;
struct PoolEntry {
  uint64_t score;
  int db;
  std::string key;
};
thread_local std::vector<PoolEntry> eviction_pool;
// The policy the pool's scores were computed under: a new policy starts a new pool (idle times in
// ms and LFU scores do not compare).
thread_local EvictionPolicy eviction_pool_policy = EvictionPolicy::kNoEviction;

void PoolInsert(uint64_t score, int db, std::string_view key) {
  std::vector<PoolEntry>& pool = eviction_pool;
  if (pool.size() == kPoolSize && score <= pool.front().score) return;
  for (const PoolEntry& e : pool) {
    if (e.db == db && e.key == key) return;  // sampled again: keep one slot per key
  }
  auto at = std::upper_bound(pool.begin(), pool.end(), score,
                             [](uint64_t v, const PoolEntry& e) { return v < e.score; });
  pool.insert(at, PoolEntry{score, db, std::string(key)});
  if (pool.size() > kPoolSize) pool.erase(pool.begin());
}

// The LRU and LFU policies: sample every database with candidates into the pool, then evict the
// best candidate still present (Redis' performEvictions).
bool EvictFromPool(Shard& s, EvictionPolicy policy, int64_t now_ms) {
  const bool volatile_only = IsVolatilePolicy(policy);
  const bool lfu = IsLfuPolicy(policy);
  const unsigned samples = MemoryLimit::samples();
  if (eviction_pool_policy != policy) {
    eviction_pool.clear();
    eviction_pool_policy = policy;
  }
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    uint64_t total = 0;
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      Db& db = s.db(i);
      const size_t n = volatile_only ? db.expires_count() : db.size();
      if (n == 0) continue;
      total += n;
      db.SampleKeys(RandomBits(), samples, volatile_only, [&](std::string_view key, uint32_t c) {
        PoolInsert(EvictionScore(c, now_ms, lfu), i, key);
      });
    }
    if (total == 0) return false;
    while (!eviction_pool.empty()) {
      PoolEntry best = std::move(eviction_pool.back());
      eviction_pool.pop_back();
      if (volatile_only) {
        Db& db = s.db(best.db);
        const uint64_t hash = core::HashBytes(best.key);
        Db::Iterator it = db.Peek(best.key, hash, now_ms);
        if (!Db::Found(it) || db.ExpireAt(it, best.key, hash) == 0) continue;
      }
      if (EvictKey(s, best.db, best.key, now_ms)) return true;
    }
  }
  return false;
}

}  // namespace

bool EvictOne(Shard& s, EvictionPolicy policy, int64_t now_ms) {
  switch (policy) {
    case EvictionPolicy::kNoEviction:
      return false;
    case EvictionPolicy::kVolatileLru:
    case EvictionPolicy::kVolatileLfu:
    case EvictionPolicy::kAllKeysLru:
    case EvictionPolicy::kAllKeysLfu:
      return EvictFromPool(s, policy, now_ms);
    default:
      break;
  }
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
    if (EvictKey(s, index, key, now_ms)) return true;
  }
  return false;
}

namespace {

// Whether s has keys that policy may evict (the volatile policies take only keys with a TTL).
bool HasVictims(Shard& s, EvictionPolicy policy) {
  if (policy == EvictionPolicy::kNoEviction) return false;
  for (int i = 0; i < Shard::kNumDbs; ++i) {
    if ((IsVolatilePolicy(policy) ? s.db(i).expires_count() : s.db(i).size()) != 0) return true;
  }
  return false;
}

// s is over its share with nothing to evict and the process is over the limit: the other shards
// must evict for it.
void NoteIfShortOfVictims(Shard& s, uint64_t used) {
  const EvictionPolicy policy = MemoryLimit::policy();
  if (policy == EvictionPolicy::kNoEviction || used <= MemoryLimit::share()) return;
  if (used + MemoryLimit::PublishedTotal(s.id()) <= MemoryLimit::limit()) return;
  if (!HasVictims(s, policy)) MemoryLimit::set_short_of_victims(true);
}

// On shard s's thread: evicts by the policy while the process is over the limit (by s's exact
// bytes and what the others published), whatever s's share (AdmitUnderMaxMemory, for a shard
// that cannot). True when the process is under the limit afterwards, as far as s can tell.
bool EvictForOthers(Shard& s, int64_t now_ms) {
  const uint64_t max = MemoryLimit::limit();
  const uint64_t others = MemoryLimit::PublishedTotal(s.id());
  uint64_t used = s.used_memory_for_limit();
  for (int n = 0; used + others > max && n < kMaxEvictionsPerCommand; ++n) {
    if (!EvictOne(s, MemoryLimit::policy(), now_ms)) break;
    used = s.used_memory_for_limit();
  }
  NoteUsedMemory(s, used, /*force_publish=*/true);
  return used + others <= max;
}

}  // namespace

bool EvictOverShare(Shard& s, int64_t now_ms) {
  uint64_t used = s.used_memory_for_limit();
  const EvictionPolicy policy = MemoryLimit::policy();
  bool shed = policy != EvictionPolicy::kNoEviction;
  if (shed) {
    const uint64_t share = MemoryLimit::share();
    for (int n = 0; used > share && n < kMaxEvictionsPerCommand; ++n) {
      if (!EvictOne(s, policy, now_ms)) {
        shed = false;
        NoteIfShortOfVictims(s, used);
        break;
      }
      used = s.used_memory_for_limit();
    }
  }
  NoteUsedMemory(s, used, /*force_publish=*/false);
  return shed;
}

void EvictBeforeCommand(Shard& s, int64_t now_ms) {
  if (s.may_exceed_share() && MemoryLimit::policy() != EvictionPolicy::kNoEviction) {
    EvictOverShare(s, now_ms);
  }
}

void NoteWriteGrowth(Shard& s) {
  const uint64_t used = s.used_memory_for_limit();
  NoteUsedMemory(s, used, /*force_publish=*/false);
  NoteIfShortOfVictims(s, used);
}

void NoteUsedMemory(Shard& s, uint64_t used, bool force_publish) {
  MemoryLimit::Publish(s.id(), used, force_publish);
  s.set_may_exceed_share(used > MemoryLimit::share());
}

bool MakeRoomForWrite(Shard& s, int64_t now_ms) {
  const uint64_t max = MemoryLimit::limit();
  if (max == 0) return true;
  // Under the share, or still shedding after a full batch (the next writes go on, as Redis
  // accepts a command while its eviction is still running): the write may go ahead. Only a
  // shard with nothing left to evict, or under noeviction, falls back to the global test.
  const bool shed = EvictOverShare(s, now_ms);
  s.set_may_exceed_share(true);  // what the write adds is measured before the next command
  if (MemoryLimit::resident_over_deny()) [[unlikely]] return false;
  if (shed) return true;
  return s.used_memory_for_limit() + MemoryLimit::PublishedTotal(s.id()) <= max;
}

void EvictOverMaxMemory() {
  if (MemoryLimit::maxmemory() == 0) return;
  shard_set->AwaitAll([](Shard& s) { MakeRoomForWrite(s, NowMs()); });
}

bool AdmitUnderMaxMemory() {
  const uint64_t max = MemoryLimit::limit();
  if (max == 0) return true;
  if (MemoryLimit::resident_over_deny()) [[unlikely]] return false;
  Shard* local = Shard::current();
  uint64_t total = 0;
  if (local != nullptr) {
    const uint64_t used = local->used_memory_for_limit();
    NoteUsedMemory(*local, used, /*force_publish=*/false);
    total = used + MemoryLimit::PublishedTotal(local->id());
  } else {
    total = MemoryLimit::PublishedTotal();
  }
  if (total <= max) {
    MemoryLimit::set_short_of_victims(false);
    return true;
  }
  if (MemoryLimit::policy() == EvictionPolicy::kNoEviction) return false;
  // Slow path, over the limit only: the shards over their share make room on their threads.
  const uint64_t share = MemoryLimit::share();
  std::vector<unsigned> over;
  for (unsigned i = 0; i < shard_set->size(); ++i) {
    if (local != nullptr && i == local->id()) {
      if (local->used_memory_for_limit() > share) over.push_back(i);
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
  if (all_ok && !MemoryLimit::short_of_victims()) return true;
  // Some shard has nothing left to evict: the others evict past their share, one after the
  // other (each sees what the one before freed), until the process is under the limit.
  MemoryLimit::set_short_of_victims(false);
  for (unsigned sid = 0; sid < shard_set->size(); ++sid) {
    const bool failed = std::find(over.begin(), over.end(), sid) != over.end() && !ok[sid];
    if (failed) continue;  // nothing to evict there
    bool under = false;
    shard_set->Await(sid, [&](Shard& s) { under = EvictForOthers(s, NowMs()); });
    if (under) return true;
  }
  const uint64_t after = local != nullptr ? local->used_memory_for_limit() + MemoryLimit::PublishedTotal(
                                                                      local->id())
                                          : MemoryLimit::PublishedTotal();
  return after <= max;
}

}  // namespace shardis::shard

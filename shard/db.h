// One logical database (SELECT 0..15) of one shard: the prime table (key cell -> value cell) and
// the expire table (key cell -> deadline) for the keys that have a TTL. Single-threaded: only the
// owning shard's thread touches it.
//
// Every key operation takes the key's 64-bit hash (core::HashBytes), computed once per command
// by the connection (it also picked the shard with it) and reused for both tables.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/compact_value.h"
#include "core/dash_table.h"
#include "core/sparse_pages.h"
#include "shard/access_clock.h"
#include "shard/blocking.h"
#include "shard/journal.h"
#include "shard/tracking_table.h"
#include "shard/watch_table.h"

namespace shardis::shard {

class ShardSnapshot;
class LazyFreeQueue;

struct KeyPolicy {
  static uint64_t Hash(const core::CompactValue& key) { return key.Hash(); }
  static bool Equal(const core::CompactValue& key, std::string_view probe) {
    return key.EqualsString(probe);
  }
  static bool Equal(const core::CompactValue& key, const core::CompactValue& other) {
    return key == other;
  }
  // A cell is 16 plain bytes plus ownership of what it points to: moving it is a memcpy.
  static constexpr bool kTriviallyRelocatable = true;
};
// The prime table's keys also carry Redis' 24-bit LRU/LFU clock (shard/access_clock.h).
struct PrimeKeyPolicy : KeyPolicy {
  static constexpr bool kAccessClock = true;
};

using PrimeTable = core::DashTable<core::CompactValue, core::CompactValue, PrimeKeyPolicy>;
using ExpireTable = core::DashTable<core::CompactValue, int64_t, KeyPolicy>;

// What the memcached protocol keeps per key besides the value: the client's 32-bit flags and the
// 64-bit CAS unique. It lives in a side table of the Db (McMetaTable), like the expire table, and
// only for the keys that need it: those stored by memcached with non-zero flags, and those whose
// CAS unique a client has seen (gets/gats) or set (cas). A key without an entry has flags 0 and
// no CAS (one is assigned when gets first reads it). So RESP-only keys cost nothing: the table
// stays empty (no segment allocated), and the only price on the RESP path is one emptiness test
// in the write paths that drop an entry (RunShardCommand, NoteModified, Erase, Take, Store).
// A memcached key with metadata costs one 32-byte slot (~40 bytes with the table's slack) and a
// second probe on memcached reads. Any RESP write to the key drops its entry (even a write that
// turns out a no-op: conservative), so a later `cas` with the old unique answers EXISTS, and its
// flags read 0 afterwards.
struct McMeta {
  uint64_t cas = 0;
  uint32_t flags = 0;
};
using McMetaTable = core::DashTable<core::CompactValue, McMeta, KeyPolicy>;

// Set in a value cell when its key has an entry in the expire table, so that a lookup of a key
// without TTL never probes the expire table.
inline constexpr uint8_t kHasExpireFlag = core::CompactValue::kFlag0;

// CLIENT PAUSE (WRITE or ALL) holds expiry, as Redis 7.2 does (PAUSE_ACTION_EXPIRE): until this
// Unix ms a key past its deadline reads as missing but stays where it is, and active expiry does
// not run, so a paused server changes no data. Any thread sets it (relaxed: a lookup racing a
// PAUSE may see either, as it could have come a moment earlier or later); lookups read it only
// on their expired path.
namespace detail {
inline std::atomic<int64_t> expiry_paused_until_ms{0};
}  // namespace detail
inline void PauseExpiryUntil(int64_t end_ms) {
  detail::expiry_paused_until_ms.store(end_ms, std::memory_order_relaxed);
}
inline bool ExpiryPaused(int64_t now_ms) {
  return now_ms < detail::expiry_paused_until_ms.load(std::memory_order_relaxed);
}

class Db {
 public:
  using Iterator = PrimeTable::Iterator;  // key(), value(); invalidated by inserts into this Db

  static bool Found(Iterator it) { return !(it == Iterator()); }

  // Starts loading what a lookup of `hash` will touch (see DashTable::Prefetch).
  void Prefetch(uint64_t hash) const { prime_.Prefetch(hash); }
  void PrefetchSlots(uint64_t hash) const { prime_.PrefetchSlots(hash); }
  // Sizes the tables of an empty database for `keys` keys, `expires` of them with a deadline
  // (a snapshot's RESIZEDB), so that loading them does not grow the tables step by step.
  void Reserve(size_t keys, size_t expires) {
    prime_.Reserve(keys);
    expire_.Reserve(expires);
  }

  // The live entry of key, deleting it first when it has expired by now_ms (lazy expiry). An
  // entry found counts as accessed (Touch).
  Iterator Find(std::string_view key, uint64_t hash, int64_t now_ms) {
    Iterator it = FindLive(key, hash, now_ms);
    if (Found(it)) Touch(it, now_ms);
    return it;
  }
  // Find without the access (Redis' LOOKUP_NOTOUCH: OBJECT, TYPE, EXISTS, internal lookups).
  Iterator Peek(std::string_view key, uint64_t hash, int64_t now_ms) {
    return FindLive(key, hash, now_ms);
  }
  // Finds the live entry or inserts an empty string with no TTL; `inserted` tells which. An
  // expired entry found on the way is reset and reported as inserted. A new entry's access clock
  // starts now; an entry found counts as accessed.
  Iterator FindOrInsert(std::string_view key, uint64_t hash, int64_t now_ms, bool* inserted);
  // Records an access to an entry: its clock gets the time (LRU) or a counter increment (LFU),
  // unless the command runs for a CLIENT NO-TOUCH client. One store into the clock array of the
  // entry's segment.
  void Touch(Iterator it, int64_t now_ms) {
    if (!CurrentCommandClient().no_touch) [[likely]] {
      it.set_access_clock(TouchedAccessClock(it.access_clock(), now_ms));
    }
  }
  // Sets an entry's clock (RESTORE ... IDLETIME / FREQ, a snapshot's IDLE / FREQ).
  void SetAccessClock(Iterator it, uint32_t clock) { it.set_access_clock(clock); }
  uint32_t AccessClock(Iterator it) const { return it.access_clock(); }
  // Removes a live key; false when it was missing or had expired (an expired one is removed too
  // but does not count, as in Redis). `lazy` (UNLINK, DEL under lazyfree-lazy-user-del,
  // eviction under lazyfree-lazy-eviction): a value costly to free goes to the shard's lazy-free
  // queue (shard/lazy_free.h) instead of being freed here.
  bool Erase(std::string_view key, uint64_t hash, int64_t now_ms, bool lazy = false);
  // Removes an entry found through this Db (and its TTL).
  void Erase(Iterator it, std::string_view key, uint64_t hash, bool lazy = false);
  // A command is about to replace the whole value of an entry (SET over a key of any type): with
  // lazyfree-lazy-server-del, an old value costly to free goes to the lazy-free queue first, as
  // Redis' dbSetValue does. Strings cost one test.
  void ReleaseOldValue(Iterator it) {
    if (!it.value().IsString()) [[unlikely]] ReleaseOldObject(it);
  }

  // Removes an entry found through this Db and hands over its value and deadline (0: none), for
  // RENAME and MOVE. The value keeps no flags.
  core::CompactValue Take(Iterator it, std::string_view key, uint64_t hash, int64_t* expire_at_ms);
  // Sets key to value with the deadline expire_at_ms (0: none), replacing any live or expired
  // entry (RENAME, COPY, *STORE, loading). Returns the entry; *replaced, when given, tells
  // whether a live key was there.
  Iterator Store(std::string_view key, uint64_t hash, core::CompactValue value,
                 int64_t expire_at_ms, int64_t now_ms, bool* replaced = nullptr);
  // A live key picked at random (RANDOMKEY), starting the search at the bucket `random_bits`
  // names; empty when the Db has no live key. Expired keys met on the way are removed.
  std::optional<std::string> RandomKey(uint64_t random_bits, int64_t now_ms);
  // A key with a TTL picked at random (for volatile-* eviction) and its deadline, starting at the
  // expire-table bucket `random_bits` names; false when no key has a TTL. Removes nothing.
  bool SampleVolatileKey(uint64_t random_bits, std::string* key, int64_t* deadline_ms);
  // Eviction sampling (Redis' dictGetSomeKeys): fn(std::string_view key, uint32_t access_clock)
  // for the keys of whole buckets from the one `random_bits` names on, until at least n keys
  // (keys with a TTL only when volatile_only) or 10 n buckets. Removes nothing, touches nothing.
  template <typename Fn>
  void SampleKeys(uint64_t random_bits, size_t n, bool volatile_only, Fn&& fn);
  // SCAN over this Db: visits buckets from `cursor` (0 = start) until at least `count` keys were
  // handed to fn(std::string_view key, Iterator) or the walk is complete; returns the next cursor
  // (0 when complete; always below 2^PrimeTable::kCursorBits). Expired keys are removed, not
  // handed over. Every key present for the whole scan is handed over at least once.
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, int64_t now_ms, Fn&& fn);
  // Exchanges the keys (and TTLs) of two databases of this shard (SWAPDB). Watchers stay with
  // their database and key; the caller touches them.
  void SwapContents(Db& other);

  // The deadline (absolute Unix ms) of an entry, 0 when it has none.
  int64_t ExpireAt(Iterator it, std::string_view key, uint64_t hash);
  // Sets (at_ms > 0) or clears (0) the deadline of an entry found through this Db.
  void SetExpire(Iterator it, std::string_view key, uint64_t hash, int64_t at_ms);

  // Active expiry: looks at up to `budget` keys with a TTL, continuing where the last call
  // stopped, and deletes those whose deadline is <= now_ms. Returns how many it deleted;
  // `*examined` gets how many it looked at.
  size_t ExpireSome(int64_t now_ms, size_t budget, size_t* examined);

  // One step of giving back the memory of tables most of whose keys are gone (after a mass
  // expiry or deletion): DashTable::ShrinkStep on the key, expire and memcached tables. Returns
  // the entries moved.
  size_t ShrinkTables(size_t max_segments, size_t max_moves) {
    size_t moved = prime_.ShrinkStep(max_segments, max_moves);
    moved += expire_.ShrinkStep(max_segments, max_moves);
    return moved + mc_meta_.ShrinkStep(max_segments, max_moves);
  }

  size_t size() const { return prime_.size(); }
  size_t expires_count() const { return expire_.size(); }
  // Keys removed because their deadline passed (lazily or by the active cycle), for INFO.
  uint64_t expired_keys() const { return expired_keys_; }
  void ResetStats() { expired_keys_ = 0; }  // CONFIG RESETSTAT
  // Sum of the remaining TTLs of the keys with a TTL (INFO's avg_ttl), in ms. O(1): a running sum
  // of the deadlines is kept; saturates at INT64_MAX.
  int64_t SumTtlMs(int64_t now_ms) const;
  // Memory of the tables themselves (slots and directories), not of what the cells point to.
  size_t expire_table_bytes() const { return expire_.memory_bytes(); }
  size_t table_bytes() const {
    return prime_.memory_bytes() + expire_.memory_bytes() + mc_meta_.memory_bytes();
  }
  // Removes every key (FLUSHDB); watched keys that existed are touched. `lazy` (FLUSHDB ASYNC,
  // Redis' emptyDbAsync): the tables go to the lazy-free queue whole, and this Db starts new ones.
  void Clear(bool lazy = false);

  // The WATCHed keys of this database (see watch_table.h). Writes touch them: command handlers
  // through the connection's dispatch, expiry and Clear here.
  WatchTable& watches() { return watches_; }
  // A write changed key (Redis' signalModifiedKey): its watchers' EXEC will fail, and clients
  // that track it hear of it. Every command that modifies a key calls it (single-key commands
  // through RunShardCommand); expiry and Clear call it here. `writer`: the client whose command
  // it was (NOLOOP tracking), 0 when no command did it (expiry, eviction).
  // `removed`: expiry or eviction takes the key out (see WatchTable::Touch).
  void NoteModified(std::string_view key, uint64_t writer = CurrentCommandClient().id,
                    bool removed = false) {
    if (!watches_.empty()) [[unlikely]] watches_.Touch(key, removed);
    if (tracking_->active()) [[unlikely]] tracking_->Invalidate(key, writer);
    if (!mc_meta_.empty()) [[unlikely]] DropMcMetaSlow(key, core::HashBytes(key));
    NoteReady(key);
  }
  // A write that may have added data to key: blocked clients get a look (cheaper than being
  // exact; a waiter checks for itself). Watchers are not touched.
  void NoteReady(std::string_view key) {
    if (blocking_->has_waiters()) [[unlikely]] blocking_->NoteReady(index_, key);
  }
  // Records DEL key in the shard's journal (an expired or evicted key), when the AOF is on.
  void JournalDel(std::string_view key) {
    if (journal_ != nullptr && journal_->on()) [[unlikely]] {
      const std::string_view args[] = {"DEL", key};
      journal_->AppendCommand(index_, args);
    }
  }
  // Whether a write to key must find out if it changed the key, to call NoteModified: the key is
  // WATCHed, or clients track keys on this shard.
  bool WantsModifiedSignal(std::string_view key) const {
    return (!watches_.empty() && watches_.Contains(key)) || tracking_->active();
  }
  // Set once by the Shard, before any key: this database's index, the shard's heap (which the
  // tables' segments come from, so that active defragmentation moves them too), its blocked
  // clients, its journal, its tracking table and its lazy-free queue.
  void Attach(int index, core::ShardHeap* heap, BlockingRegistry* blocking, ShardJournal* journal,
              TrackingTable* tracking, LazyFreeQueue* lazy_free) {
    index_ = index;
    prime_.set_heap(heap);
    expire_.set_heap(heap);
    mc_meta_.set_heap(heap);
    blocking_ = blocking;
    journal_ = journal;
    tracking_ = tracking;
    lazy_free_ = lazy_free;
  }
  int index() const { return index_; }

  // --- Point-in-time snapshots (shard/snapshot.h). While one is attached, every change to the
  // table first hands the bucket it touches to the snapshot (BeforeChange), which serializes the
  // bucket's contents as of the cut unless it already has. Segments created from now on take the
  // snapshot's version: they hold only keys inserted after the cut.
  void AttachSnapshot(ShardSnapshot* snapshot);
  void DetachSnapshot(ShardSnapshot* snapshot) {
    if (snapshot_ == snapshot) snapshot_ = nullptr;
  }
  // The table's buckets in SCAN order, one per call: fn(PrimeTable::Bucket). For the snapshot.
  template <typename Fn>
  uint64_t TraverseBuckets(uint64_t cursor, Fn&& fn) {
    return prime_.TraverseBuckets(cursor, fn);
  }

  // --- memcached metadata (see McMeta). The caller has found the key live in this Db.
  // The entry of key, or nullptr.
  McMeta* FindMcMeta(std::string_view key, uint64_t hash) {
    if (mc_meta_.empty()) return nullptr;
    auto it = mc_meta_.Find(hash, key);
    return it == McMetaTable::Iterator() ? nullptr : &it.value();
  }
  // The entry of key, created (flags 0, CAS 0) if missing.
  McMeta& MutableMcMeta(std::string_view key, uint64_t hash) {
    return mc_meta_.FindOrInsert(hash, key, [&] { return core::CompactValue::FromKey(key); })
        .first.value();
  }
  // Forgets key's flags and CAS (a write that did not come with them).
  void DropMcMeta(std::string_view key, uint64_t hash) {
    if (!mc_meta_.empty()) [[unlikely]] DropMcMetaSlow(key, hash);
  }
  // A fresh CAS unique: increasing, so a unique never comes back for another version of a key.
  uint64_t NextCas() { return ++cas_counter_; }
  size_t mc_meta_count() const { return mc_meta_.size(); }

  // Redis' touchAllWatchedKeysInDb, before this database's contents go (FLUSHDB: `replaced_with`
  // null) or are swapped with replaced_with's (SWAPDB): a watched key that exists in either is
  // modified, unless it stays expired or gone for a watcher that saw it expired.
  void TouchWatchedBeforeReplace(Db* replaced_with, int64_t now_ms);
  // Redis' keyIsExpired: the key is in the table and its deadline has passed (it is not removed).
  bool IsExpired(std::string_view key, int64_t now_ms);

  // Active defragmentation (shard/defrag.h): the entries of the buckets at `cursor` as
  // fn(CompactValue& key, CompactValue& value, CompactValue* expire_key), the last the expire
  // table's copy of the key (null without a TTL); returns the next cursor (0: done). fn may move
  // the cells' blocks (same bytes), nothing else: hash, contents, bucket versions stay.
  template <typename Fn>
  uint64_t DefragBucket(uint64_t cursor, Fn&& fn) {
    char scratch[core::CompactValue::kScratchSize];
    return prime_.Traverse(cursor, [&](Iterator it) {
      core::CompactValue* expire_key = nullptr;
      if (it.value().HasFlag(kHasExpireFlag)) {
        const std::string_view key = it.key().GetString(scratch);
        auto e = expire_.Find(core::HashBytes(key), key);
        if (!(e == ExpireTable::Iterator())) expire_key = &e.key();
      }
      fn(it.key(), it.value(), expire_key);
    });
  }

  // Active defragmentation of a big value in steps (shard/defrag.h): the value of `key`, null
  // when there is none. No access is counted and an expired key is not deleted: the defragmenter
  // changes nothing a client or the journal can see.
  core::CompactValue* FindForDefrag(std::string_view key) {
    Iterator it = prime_.Find(core::HashBytes(key), key);
    return Found(it) ? &it.value() : nullptr;
  }

  // Active defragmentation of the tables themselves: moves the segments that sit on sparse pages
  // (DashTable::DefragSegments), up to `max_segments` per call: the key table's, then the expire
  // table's, then the memcached table's. Returns the next cursor (0: done).
  uint64_t DefragTables(uint64_t cursor, size_t max_segments, core::BlockMover& mover) {
    // The table (0..2) above bit 32, the table's own cursor (below 2^kCursorBits) under it.
    constexpr int kTables = 3;
    static_assert(PrimeTable::kCursorBits <= 32);
    uint64_t table = cursor >> 32, at = cursor & 0xFFFFFFFF;
    if (table == 0) {
      at = prime_.DefragSegments(at, max_segments, mover);
    } else if (table == 1) {
      at = expire_.DefragSegments(at, max_segments, mover);
    } else {
      at = mc_meta_.DefragSegments(at, max_segments, mover);
    }
    if (at == 0 && ++table == kTables) return 0;
    return table << 32 | at;
  }

  // Calls fn(std::string_view key, Iterator) for each live key (KEYS, DEBUG). Expired keys are
  // skipped, not deleted. fn must not insert or erase.
  template <typename Fn>
  void ForEachLive(int64_t now_ms, Fn&& fn) {
    char scratch[core::CompactValue::kScratchSize];
    uint64_t cursor = 0;
    do {
      cursor = prime_.Traverse(cursor, [&](Iterator it) {
        std::string_view key = it.key().GetString(scratch);
        if (it.value().HasFlag(kHasExpireFlag)) {
          const uint64_t hash = core::HashBytes(key);
          auto e = expire_.Find(hash, key);
          if (!(e == ExpireTable::Iterator()) && e.value() <= now_ms) return;
        }
        fn(key, it);
      });
    } while (cursor != 0);
  }

 private:
  void DropMcMetaSlow(std::string_view key, uint64_t hash);
  void ReleaseOldObject(Iterator it);
  // Hands a costly value to the lazy-free queue when `lazy` (and the Db has one).
  void MaybeFreeLazily(Iterator it, bool lazy);
  Iterator FindLive(std::string_view key, uint64_t hash, int64_t now_ms);
  // Called before the entries of the bucket of `hash` (or of `it`) change, are erased, or a key
  // is inserted there. Free when no snapshot runs.
  void BeforeChange(uint64_t hash) {
    if (snapshot_ != nullptr) [[unlikely]] SnapshotBucket(prime_.BucketOf(hash));
  }
  void BeforeChange(Iterator it) {
    if (snapshot_ != nullptr) [[unlikely]] SnapshotBucket(prime_.BucketOf(it));
  }
  // Before the whole table changes (Clear, SwapContents).
  void BeforeChangeAll();
  void SnapshotBucket(PrimeTable::Bucket bucket);
  // Removes an entry and its TTL entry, and counts it as expired.
  void EraseExpired(Iterator it, ExpireTable::Iterator e, std::string_view key, uint64_t hash);

  PrimeTable prime_;
  ExpireTable expire_;
  uint64_t expire_cursor_ = 0;  // where the active cycle continues
  __int128 deadline_sum_ = 0;   // sum of expire_'s deadlines (may exceed 64 bits)
  uint64_t expired_keys_ = 0;
  McMetaTable mc_meta_;
  uint64_t cas_counter_ = 0;
  ShardSnapshot* snapshot_ = nullptr;
  WatchTable watches_;
  int index_ = 0;
  ShardJournal* journal_ = nullptr;
  BlockingRegistry* blocking_ = &no_blocking_;
  static inline BlockingRegistry no_blocking_;  // until Attach (tests use a bare Db)
  TrackingTable* tracking_ = &no_tracking_;
  static inline TrackingTable no_tracking_;
  LazyFreeQueue* lazy_free_ = nullptr;  // until Attach: everything is freed at once
};

template <typename Fn>
uint64_t Db::Scan(uint64_t cursor, size_t count, int64_t now_ms, Fn&& fn) {
  char scratch[core::CompactValue::kScratchSize];
  size_t handed = 0;
  std::vector<std::string> expired;
  do {
    cursor = prime_.Traverse(cursor, [&](Iterator it) {
      std::string_view key = it.key().GetString(scratch);
      if (it.value().HasFlag(kHasExpireFlag)) {
        auto e = expire_.Find(core::HashBytes(key), key);
        if (e.value() <= now_ms) {
          expired.emplace_back(key);  // removed after the step: Traverse allows no other erase
          return;
        }
      }
      fn(key, it);
      ++handed;
    });
    for (const std::string& key : expired) Peek(key, core::HashBytes(key), now_ms);
    expired.clear();
  } while (cursor != 0 && handed < count);
  return cursor;
}

}  // namespace shardis::shard

namespace shardis::shard {

template <typename Fn>
void Db::SampleKeys(uint64_t random_bits, size_t n, bool volatile_only, Fn&& fn) {
  char scratch[core::CompactValue::kScratchSize];
  size_t seen = 0;
  if (!volatile_only) {
    uint64_t cursor = random_bits & ((uint64_t{1} << PrimeTable::kCursorBits) - 1);
    for (size_t steps = 0; seen < n && steps < 10 * n && !prime_.empty(); ++steps) {
      cursor = prime_.Traverse(cursor, [&](Iterator it) {
        fn(std::string_view(it.key().GetString(scratch)), it.access_clock());
        ++seen;
      });
    }
    return;
  }
  uint64_t cursor = random_bits & ((uint64_t{1} << ExpireTable::kCursorBits) - 1);
  for (size_t steps = 0; seen < n && steps < 10 * n && !expire_.empty(); ++steps) {
    cursor = expire_.Traverse(cursor, [&](ExpireTable::Iterator e) {
      const std::string_view key = e.key().GetString(scratch);
      Iterator it = prime_.Find(core::HashBytes(key), key);
      if (!Found(it)) return;
      fn(key, it.access_clock());
      ++seen;
    });
  }
}

}  // namespace shardis::shard

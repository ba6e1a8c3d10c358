#include "shard/db.h"

#include "shard/keyspace_events.h"
#include "shard/lazy_free.h"
#include "shard/shard.h"
#include "shard/snapshot.h"

#include <algorithm>
#include <climits>

namespace shardis::shard {

using core::CompactValue;

namespace {
bool IsEnd(ExpireTable::Iterator e) { return e == ExpireTable::Iterator(); }
}  // namespace

Db::Iterator Db::FindLive(std::string_view key, uint64_t hash, int64_t now_ms) {
  // A snapshot cannot tell reads from writes here: the caller may change the value it finds.
  BeforeChange(hash);
  Iterator it = prime_.Find(hash, key);
  if (!Found(it) || !it.value().HasFlag(kHasExpireFlag)) return it;
  ExpireTable::Iterator e = expire_.Find(hash, key);
  DCHECK(!IsEnd(e));
  if (e.value() > now_ms) return it;
  if (!ExpiryPaused(now_ms)) EraseExpired(it, e, key, hash);
  return Iterator();
}

Db::Iterator Db::FindOrInsert(std::string_view key, uint64_t hash, int64_t now_ms, bool* inserted) {
  BeforeChange(hash);
  auto [it, fresh] = prime_.FindOrInsert(hash, key, [&] { return CompactValue::FromKey(key); });
  if (!fresh && it.value().HasFlag(kHasExpireFlag)) {
    ExpireTable::Iterator e = expire_.Find(hash, key);
    if (e.value() <= now_ms) {
      // Expired: it is a new key now.
      NotifyKeyspaceEvent(kNotifyExpired, "expired", key, index_);
      NoteModified(key, /*writer=*/0, /*removed=*/true);
      deadline_sum_ -= e.value();
      expire_.Erase(e);
      MaybeFreeLazily(it, LazyFreeOn(LazyFreePath::kExpire));
      it.value().Reset();
      ++expired_keys_;
      fresh = true;
    }
  }
  if (fresh) {
    it.set_access_clock(NewAccessClock(now_ms));
  } else {
    Touch(it, now_ms);
  }
  *inserted = fresh;
  // Redis' dbAdd: every key created, before the event of the command that creates it.
  if (fresh) NotifyKeyspaceEvent(kNotifyNew, "new", key, index_);
  return it;
}

bool Db::Erase(std::string_view key, uint64_t hash, int64_t now_ms, bool lazy) {
  BeforeChange(hash);
  Iterator it = prime_.Find(hash, key);
  if (!Found(it)) return false;
  if (it.value().HasFlag(kHasExpireFlag)) {
    ExpireTable::Iterator e = expire_.Find(hash, key);
    if (e.value() <= now_ms) {
      EraseExpired(it, e, key, hash);
      return false;
    }
  }
  Erase(it, key, hash, lazy);
  return true;
}

void Db::DropMcMetaSlow(std::string_view key, uint64_t hash) {
  auto it = mc_meta_.Find(hash, key);
  if (!(it == McMetaTable::Iterator())) mc_meta_.Erase(it);
}

void Db::ReleaseOldObject(Iterator it) {
  if (LazyFreeOn(LazyFreePath::kServerDel)) MaybeFreeLazily(it, true);
}

void Db::MaybeFreeLazily(Iterator it, bool lazy) {
  // The caller has let the snapshot see the bucket (BeforeChange): the value as of the cut is
  // serialised already, or the key came after the cut.
  if (lazy && lazy_free_ != nullptr) lazy_free_->TakeIfCostly(it.value());
}

void Db::Erase(Iterator it, std::string_view key, uint64_t hash, bool lazy) {
  BeforeChange(it);
  DropMcMeta(key, hash);
  if (it.value().HasFlag(kHasExpireFlag)) {
    ExpireTable::Iterator e = expire_.Find(hash, key);
    deadline_sum_ -= e.value();
    expire_.Erase(e);
  }
  MaybeFreeLazily(it, lazy);
  prime_.Erase(it);
}

void Db::EraseExpired(Iterator it, ExpireTable::Iterator e, std::string_view key, uint64_t hash) {
  // Lazy and active expiry both come here (key may live in the cell erased below).
  NotifyKeyspaceEvent(kNotifyExpired, "expired", key, index_);
  NoteModified(key, /*writer=*/0, /*removed=*/true);
  // Redis propagates an expiry as DEL: a replay (whose loader keeps keys whose deadline passed,
  // as Redis' does) must not see the key after this point.
  JournalDel(key);
  deadline_sum_ -= e.value();
  expire_.Erase(e);
  MaybeFreeLazily(it, LazyFreeOn(LazyFreePath::kExpire));
  prime_.Erase(it);
  ++expired_keys_;
}

int64_t Db::ExpireAt(Iterator it, std::string_view key, uint64_t hash) {
  if (!it.value().HasFlag(kHasExpireFlag)) return 0;
  return expire_.Find(hash, key).value();
}

void Db::SetExpire(Iterator it, std::string_view key, uint64_t hash, int64_t at_ms) {
  BeforeChange(it);
  CompactValue& value = it.value();
  if (value.HasFlag(kHasExpireFlag)) {
    ExpireTable::Iterator e = expire_.Find(hash, key);
    deadline_sum_ -= e.value();
    if (at_ms != 0) {
      e.value() = at_ms;
      deadline_sum_ += at_ms;
      return;
    }
    expire_.Erase(e);
    value.SetFlag(kHasExpireFlag, false);
    return;
  }
  if (at_ms == 0) return;
  // Inserting into the expire table leaves `it` (a prime table iterator) valid.
  expire_.Insert(hash, CompactValue::FromKey(key), at_ms);
  deadline_sum_ += at_ms;
  value.SetFlag(kHasExpireFlag, true);
}

CompactValue Db::Take(Iterator it, std::string_view key, uint64_t hash, int64_t* expire_at_ms) {
  BeforeChange(it);
  *expire_at_ms = ExpireAt(it, key, hash);
  DropMcMeta(key, hash);
  SetExpire(it, key, hash, 0);
  CompactValue value = std::move(it.value());
  prime_.Erase(it);
  return value;
}

Db::Iterator Db::Store(std::string_view key, uint64_t hash, CompactValue value,
                       int64_t expire_at_ms, int64_t now_ms, bool* replaced) {
  bool inserted;
  Iterator it = FindOrInsert(key, hash, now_ms, &inserted);
  if (replaced != nullptr) *replaced = !inserted;
  DropMcMeta(key, hash);
  SetExpire(it, key, hash, 0);  // before the move: the expire flag must match the expire table
  // Redis' dbSetValue on an overwrite (RENAME, COPY, *STORE): lazyfree-lazy-server-del.
  if (!inserted) ReleaseOldValue(it);
  value.set_flags(0);
  it.value() = std::move(value);
  SetExpire(it, key, hash, expire_at_ms);
  return it;
}

std::optional<std::string> Db::RandomKey(uint64_t random_bits, int64_t now_ms) {
  // Start at a random bucket (a cursor names one: group in bits 29..24, hash-space position in
  // bits 23..0) and walk on (wrapping around) to the first bucket with a live key, then pick one
  // of that bucket's keys. Buckets hold ~1-16 keys, so the pick is close to uniform.
  const uint64_t start = random_bits & ((uint64_t{1} << PrimeTable::kCursorBits) - 1);
  uint64_t cursor = start;
  char scratch[CompactValue::kScratchSize];
  // Ends: each step either returns a live key or removes the expired keys it met.
  while (prime_.size() > 0) {
    std::vector<std::string> keys;
    cursor = prime_.Traverse(cursor, [&](Iterator it) { keys.emplace_back(it.key().GetString(scratch)); });
    while (!keys.empty()) {
      const size_t i = (random_bits >> 32) % keys.size();
      const uint64_t hash = core::HashBytes(keys[i]);
      if (Found(Peek(keys[i], hash, now_ms))) return std::move(keys[i]);
      keys.erase(keys.begin() + long(i));  // it had expired (and is gone now)
    }
  }
  return std::nullopt;
}

bool Db::SampleVolatileKey(uint64_t random_bits, std::string* key, int64_t* deadline_ms) {
  // As RandomKey, on the expire table: the first non-empty bucket from a random one (a
  // non-empty table has one within a lap), then one of its keys.
  uint64_t cursor = random_bits & ((uint64_t{1} << ExpireTable::kCursorBits) - 1);
  char scratch[CompactValue::kScratchSize];
  std::vector<std::pair<std::string, int64_t>> bucket;
  while (!expire_.empty()) {
    cursor = expire_.Traverse(cursor, [&](ExpireTable::Iterator e) {
      bucket.emplace_back(e.key().GetString(scratch), e.value());
    });
    if (bucket.empty()) continue;
    auto& [k, deadline] = bucket[(random_bits >> 32) % bucket.size()];
    *key = std::move(k);
    *deadline_ms = deadline;
    return true;
  }
  return false;
}

void Db::SwapContents(Db& other) {
  BeforeChangeAll();
  other.BeforeChangeAll();
  std::swap(prime_, other.prime_);
  std::swap(expire_, other.expire_);
  std::swap(expire_cursor_, other.expire_cursor_);
  std::swap(deadline_sum_, other.deadline_sum_);
  std::swap(mc_meta_, other.mc_meta_);
  cas_counter_ = other.cas_counter_ = std::max(cas_counter_, other.cas_counter_);
}

size_t Db::ExpireSome(int64_t now_ms, size_t budget, size_t* examined) {
  size_t seen = 0, removed = 0;
  if (ExpiryPaused(now_ms)) {
    *examined = 0;
    return 0;
  }
  char scratch[CompactValue::kScratchSize];
  while (seen < budget && !expire_.empty()) {
    expire_cursor_ = expire_.Traverse(expire_cursor_, [&](ExpireTable::Iterator e) {
      ++seen;
      if (e.value() > now_ms) return;
      std::string_view key = e.key().GetString(scratch);
      const uint64_t hash = core::HashBytes(key);
      BeforeChange(hash);
      Iterator it = prime_.Find(hash, key);
      DCHECK(Found(it));
      NotifyKeyspaceEvent(kNotifyExpired, "expired", key, index_);
      NoteModified(key, /*writer=*/0, /*removed=*/true);  // active expiry: no client did it
      JournalDel(key);
      deadline_sum_ -= e.value();
      if (Found(it)) {
        MaybeFreeLazily(it, LazyFreeOn(LazyFreePath::kExpire));
        prime_.Erase(it);
      }
      expire_.Erase(e);  // Traverse allows erasing the entry it hands over
      ++expired_keys_;
      ++removed;
    });
    if (expire_cursor_ == 0) break;  // a full pass is done; the next call starts another
  }
  *examined = seen;
  return removed;
}

int64_t Db::SumTtlMs(int64_t now_ms) const {
  // Keys already past their deadline but not yet removed would count negative: clamp the total.
  __int128 sum = deadline_sum_ - __int128(now_ms) * __int128(expire_.size());
  if (sum <= 0) return 0;
  return sum > __int128(INT64_MAX) ? INT64_MAX : int64_t(sum);
}

bool Db::IsExpired(std::string_view key, int64_t now_ms) {
  const uint64_t hash = core::HashBytes(key);
  Iterator it = prime_.Find(hash, key);
  if (!Found(it) || !it.value().HasFlag(kHasExpireFlag)) return false;
  return expire_.Find(hash, key).value() <= now_ms;
}

void Db::TouchWatchedBeforeReplace(Db* replaced_with, int64_t now_ms) {
  if (watches_.empty()) return;
  watches_.TouchEach([&](std::string_view key, bool& expired) {
    const bool exists_here = Found(prime_.Find(core::HashBytes(key), key));
    const bool exists_there =
        replaced_with != nullptr && Found(replaced_with->prime_.Find(core::HashBytes(key), key));
    if (!exists_here && !exists_there) return false;
    if (expired) {
      if (!exists_there) {
        expired = false;  // the expired key is gone: no change
        return false;
      }
      if (replaced_with->IsExpired(key, now_ms)) return false;  // still an expired key
    } else if (!exists_here && replaced_with->IsExpired(key, now_ms)) {
      expired = true;  // no key before, an expired one after
      return false;
    }
    return true;
  });
}

void Db::Clear(bool lazy) {
  TouchWatchedBeforeReplace(nullptr, NowMs());  // as Redis' FLUSHDB
  BeforeChangeAll();
  if (lazy && lazy_free_ != nullptr && !prime_.empty()) {
    // Moved-from tables are empty ones; a running snapshot's cut version must stay on the new
    // one, so that the keys inserted from now on count as after the cut.
    core::ShardHeap* heap = prime_.heap();
    lazy_free_->TakeTables(std::move(prime_), std::move(expire_), std::move(mc_meta_));
    // The moved-from tables took the malloc allocator in the swap: back to the shard's heap.
    prime_.set_heap(heap);
    expire_.set_heap(heap);
    mc_meta_.set_heap(heap);
    if (snapshot_ != nullptr) prime_.set_new_bucket_version(snapshot_->version());
  } else {
    prime_.Clear();
    expire_.Clear();
    mc_meta_.Clear();
  }
  expire_cursor_ = 0;
  deadline_sum_ = 0;
}

void Db::AttachSnapshot(ShardSnapshot* snapshot) {
  snapshot_ = snapshot;
  prime_.set_new_bucket_version(snapshot->version());
}

void Db::SnapshotBucket(PrimeTable::Bucket bucket) { snapshot_->SerializeBucket(*this, bucket); }

void Db::BeforeChangeAll() {
  if (snapshot_ != nullptr) [[unlikely]] snapshot_->SerializeRest(*this);
}

}  // namespace shardis::shard

#include "shard/snapshot.h"

#include <absl/container/inlined_vector.h>

#include "core/cycle_clock.h"
#include "core/rdb_encoding.h"
#include "core/rdb_format.h"
#include "core/rdb_writer.h"
#include "shard/shard.h"

namespace shardis::shard {

ShardSnapshot::ShardSnapshot(Shard* shard, bool compression)
    : shard_(shard), compression_(compression), version_(shard->NextSnapshotVersion()) {
  for (int i = 0; i < Shard::kNumDbs; ++i) shard_->db(i).AttachSnapshot(this);
}

ShardSnapshot::~ShardSnapshot() { Detach(); }

void ShardSnapshot::Detach() {
  for (int i = 0; i < Shard::kNumDbs; ++i) shard_->db(i).DetachSnapshot(this);
}

void ShardSnapshot::Abort() {
  aborted_ = true;
  Detach();
  out_.clear();
}

void ShardSnapshot::SerializeBucketSlow(Db& db, PrimeTable::Bucket bucket, bool before_change) {
  bucket.set_version(version_);
  if (out_db_ != db.index()) {
    // A new run: SELECTDB, so the records that follow load into their database wherever this
    // piece lands in the file.
    out_.push_back(char(core::rdb::kOpSelectDb));
    core::rdb::AppendLength(&out_, uint64_t(db.index()));
    out_db_ = db.index();
  }
  const bool compress = !before_change && CompressNext();
  const core::rdb::LzfOutcomes lzf_before = core::rdb::ThreadLzfOutcomes();
  const uint64_t start = before_change ? core::CycleClock::Now() : 0;
  char scratch[core::CompactValue::kScratchSize];
  const int64_t now_ms = NowMs();
  // The values of a bucket are cold: the walk just got to it, or a write to one of its keys
  // hands it over. One pass finds the entries and starts loading their heap blocks, so that
  // their cache misses overlap, instead of each serialization waiting for its own (the copy of
  // the values was ~10% of the server's CPU at SET P16 while an AOF rewrite ran).
  absl::InlinedVector<Db::Iterator, 32> entries;
  bucket.ForEach([&](Db::Iterator it) {
    if (const void* data = it.value().HeapData()) {
      __builtin_prefetch(data);
      __builtin_prefetch(static_cast<const char*>(data) + 64);
    }
    entries.push_back(it);
  });
  for (Db::Iterator it : entries) {
    const std::string_view key = it.key().GetString(scratch);
    core::RdbKeyMeta meta;
    if (it.value().HasFlag(kHasExpireFlag)) meta.expire_ms = db.ExpireAt(it, key, core::HashBytes(key));
    SnapshotAccessMeta([&] { return db.AccessClock(it); }, now_ms, &meta.idle_seconds, &meta.freq);
    core::AppendRdbKey(&out_, key, it.value(), meta, compress);
    ++keys_;
  }
  if (before_change) before_change_ns_ += core::CycleClock::ToNs(core::CycleClock::Now() - start);
  if (compress) {
    const core::rdb::LzfOutcomes& lzf = core::rdb::ThreadLzfOutcomes();
    NoteCompression(lzf.tried - lzf_before.tried, lzf.saved - lzf_before.saved);
  }
}

bool ShardSnapshot::CompressNext() {
  if (!compression_) return false;
  if (buckets_not_compressing_ < kHopelessBuckets) return true;
  if (++buckets_skipped_ < kProbeEvery) return false;
  buckets_skipped_ = 0;
  return true;
}

void ShardSnapshot::NoteCompression(uint64_t tried, uint64_t saved) {
  if (saved > 0) {
    buckets_not_compressing_ = 0;
  } else if (tried > 0 && buckets_not_compressing_ < kHopelessBuckets) {
    ++buckets_not_compressing_;
  }
}

void ShardSnapshot::SerializeRest(Db& db) {
  uint64_t cursor = 0;
  do {
    cursor = db.TraverseBuckets(cursor, [&](PrimeTable::Bucket b) { SerializeBucket(db, b); });
  } while (cursor != 0);
}

bool ShardSnapshot::SerializeSome(size_t max_buckets, size_t max_bytes) {
  while (walk_db_ < Shard::kNumDbs && max_buckets > 0 && out_.size() < max_bytes) {
    Db& db = shard_->db(walk_db_);
    walk_cursor_ = db.TraverseBuckets(
        walk_cursor_, [&](PrimeTable::Bucket b) { SerializeBucket(db, b, /*before_change=*/false); });
    --max_buckets;
    if (walk_cursor_ == 0) ++walk_db_;
  }
  return walk_db_ < Shard::kNumDbs;
}

std::string ShardSnapshot::TakeOutput() {
  out_db_ = -1;
  return std::exchange(out_, std::string());
}

}  // namespace shardis::shard

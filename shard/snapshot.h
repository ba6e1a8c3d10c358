// ShardSnapshot: one shard's part of a point-in-time snapshot (SAVE, BGSAVE), taken without fork
// (docs/persistence.md explains the algorithm).
//
// It is created at the cut: in a step of a transaction that holds every shard, so that every
// multi-shard transaction is wholly before the cut or wholly after it. The shard then takes a
// version V above every bucket version of its tables and attaches the snapshot to each Db. From
// then on:
//   - the snapshot fiber walks every bucket of every database (SerializeSome, in slices between
//     which the loop serves clients) and serializes each bucket whose version is below V,
//     raising it to V;
//   - before a change to a bucket still below V, the Db serializes that bucket first
//     (SerializeBucket), so every key is written as it was at the cut, exactly once.
// The output is RDB key records. Each run of records of one database starts with SELECTDB, and
// TakeOutput ends a run, so every piece it hands out can go anywhere in the file.
#pragma once

#include <cstdint>
#include <string>

#include "shard/db.h"

namespace shardis::shard {

class Shard;

class ShardSnapshot {
 public:
  ShardSnapshot(Shard* shard, bool compression);
  ~ShardSnapshot();  // detaches from the databases
  ShardSnapshot(const ShardSnapshot&) = delete;
  ShardSnapshot& operator=(const ShardSnapshot&) = delete;

  // Serializes the bucket unless it already was (its version is V). Buckets serialized before a
  // change (`before_change`) are not compressed even with rdbcompression on: that work sits in
  // a client's command, so it is kept to copying bytes (the file mixes compressed and plain
  // strings, which RDB allows). The walk, too, stops trying to compress where nothing does: after
  // kHopelessBuckets buckets in a row whose strings were tried and none came out smaller, it
  // tries one bucket in kProbeEvery, until one compresses again (LZF on incompressible values
  // was most of a save's CPU time).
  void SerializeBucket(Db& db, PrimeTable::Bucket bucket, bool before_change = true) {
    if (bucket.valid() && bucket.version() < version_) SerializeBucketSlow(db, bucket, before_change);
  }
  // Serializes every bucket of db not serialized yet (before FLUSHDB or SWAPDB empties or moves
  // its table).
  void SerializeRest(Db& db);
  // Walks on over the databases until `max_buckets` buckets were visited or the output holds at
  // least `max_bytes`. False once the walk has covered every database: then everything as of the
  // cut is in the output or was taken.
  bool SerializeSome(size_t max_buckets, size_t max_bytes);
  // Stops the snapshot (FLUSHALL during BGSAVE, as Redis kills its child): detaches from the
  // databases; the fiber sees aborted() and gives up.
  void Abort();
  bool aborted() const { return aborted_; }

  size_t output_size() const { return out_.size(); }
  // Hands over the records made so far (a complete run, or several).
  std::string TakeOutput();
  uint64_t keys() const { return keys_; }
  // Time spent serializing buckets before changes, inside clients' commands (ns): the save
  // counts it against its share of the thread.
  uint64_t before_change_ns() const { return before_change_ns_; }
  uint64_t version() const { return version_; }

 private:
  void SerializeBucketSlow(Db& db, PrimeTable::Bucket bucket, bool before_change);
  void Detach();

  static constexpr uint32_t kHopelessBuckets = 64;
  static constexpr uint32_t kProbeEvery = 16;
  // Whether the walk compresses the next bucket, and the outcome that decides the next.
  bool CompressNext();
  void NoteCompression(uint64_t tried, uint64_t saved);

  Shard* shard_;
  const bool compression_;
  uint32_t buckets_not_compressing_ = 0;  // in a row, with strings tried
  uint32_t buckets_skipped_ = 0;          // since the last probe
  const uint64_t version_;
  bool aborted_ = false;
  // Where the walk is.
  int walk_db_ = 0;
  uint64_t walk_cursor_ = 0;
  // The records made and not yet taken, and the database of the run they end with (-1: none).
  std::string out_;
  int out_db_ = -1;
  uint64_t keys_ = 0;
  uint64_t before_change_ns_ = 0;
};

}  // namespace shardis::shard

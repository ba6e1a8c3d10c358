#include "server/rdb_load.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/fiber/operations.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/rdb_reader.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/function_registry.h"
#include "server/persistence_config.h"
#include "server/file_source.h"
#include "server/persistence_status.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Db;
using shard::Shard;

// Keys travel to their shard in batches of about this many bytes, with at most kBatchesInFlight
// batches per shard on their way: the reader runs ahead of the shards by a bounded amount.
constexpr size_t kBatchBytes = 256 * 1024;
constexpr size_t kBatchKeys = 1024;
constexpr int kBatchesInFlight = 4;
constexpr auto kProgressPeriod = std::chrono::seconds(2);

// The keys of one shard on their way to it: records that point into one buffer of their bytes
// (key, then the encoded value), so that a batch costs a few allocations instead of two per key,
// and the shard thread frees no block that the reader's thread allocated per key.
struct Batch {
  struct Record {
    uint32_t db;
    uint8_t type;
    uint32_t key_size;
    size_t at;  // of the key in `bytes`; the payload follows it
    size_t payload_size;
    int64_t expire_ms;
    int64_t idle_seconds;  // IDLE / FREQ, -1: none
    int freq;
    uint64_t offset;  // where its record starts in the file, for errors
  };
  std::string bytes;
  std::vector<Record> records;

  void Add(const core::RdbRawEntry& e, uint64_t offset) {
    records.push_back({e.db, e.type, uint32_t(e.key.size()), bytes.size(), e.payload.size(),
                       e.expire_ms, e.idle_seconds, e.freq, offset});
    bytes.append(e.key);
    bytes.append(e.payload);
  }
  std::string_view Key(const Record& r) const { return std::string_view(bytes).substr(r.at, r.key_size); }
  std::string_view Payload(const Record& r) const {
    return std::string_view(bytes).substr(r.at + r.key_size, r.payload_size);
  }
};

// What one shard did with its batches; written on that shard's thread only.
struct ShardLoad {
  uint64_t keys = 0;
  uint64_t empty = 0;
  absl::Status error;
};

// On the owner shard: decodes and inserts a batch. The table slots of a few keys ahead are
// prefetched, so their cache misses overlap (as a pipeline's do).
void InsertBatch(Shard& shard, const Batch& batch, int version, bool merge, ShardLoad* out) {
  if (!out->error.ok()) return;
  constexpr size_t kAhead = 8;
  const int64_t now_ms = shard::NowMs();
  const size_t count = batch.records.size();
  std::vector<uint64_t> hashes(count);
  for (size_t i = 0; i < count; ++i) hashes[i] = core::HashBytes(batch.Key(batch.records[i]));
  for (size_t i = 0; i < count && i < kAhead; ++i) shard.db(int(batch.records[i].db)).Prefetch(hashes[i]);
  for (size_t i = 0; i < count; ++i) {
    if (i + kAhead < count) shard.db(int(batch.records[i + kAhead].db)).Prefetch(hashes[i + kAhead]);
    const Batch::Record& rec = batch.records[i];
    const std::string_view key = batch.Key(rec);
    core::CompactValue value;
    bool empty = false;
    if (absl::Status s = core::DecodeRdbValue(rec.type, version, batch.Payload(rec), &value, &empty);
        !s.ok()) {
      out->error = absl::DataLossError(core::Concat(
          "in the value of key '", key, "' (record at byte ", rec.offset, "): ", s.message()));
      return;
    }
    if (empty) {
      ++out->empty;
      continue;
    }
    bool replaced = false;
    Db& db = shard.db(int(rec.db));
    Db::Iterator it = db.Store(key, hashes[i], std::move(value),
                               rec.expire_ms >= 0 ? rec.expire_ms : 0, now_ms, &replaced);
    // The file's IDLE or FREQ, when the policy tracks that kind (Redis' objectSetLRUOrLFU).
    if (uint32_t clock; shard::RestoredAccessClock(rec.freq, rec.idle_seconds, now_ms, &clock)) {
      db.SetAccessClock(it, clock);
    }
    if (replaced && !merge) {
      // Redis refuses such a file; the load stops here.
      out->error = absl::DataLossError(core::Concat("RDB has duplicated key '", key, "' in DB ", rec.db));
      return;
    }
    ++out->keys;
  }
}

absl::Status ReadAndRoute(int fd, uint64_t size, bool merge, LoadResult* result) {
  io::Proactor* self = io::Proactor::current();
  const unsigned n = shard::shard_set->size();
  FileSource source(fd);
  core::RdbReader reader(&source, Shard::kNumDbs);
  if (absl::Status s = reader.ReadHeader(); !s.ok()) return s;
  const int version = reader.version();

  std::vector<ShardLoad> loads(n);
  std::vector<Batch> batches(n);
  auto fresh_batch = [&](unsigned sid) {
    batches[sid].bytes.reserve(kBatchBytes + 4096);
    batches[sid].records.reserve(kBatchKeys);
  };
  for (unsigned sid = 0; sid < n; ++sid) fresh_batch(sid);
  std::vector<int> in_flight(n, 0);  // touched by fibers of this thread only
  auto send = [&](unsigned sid) {
    if (sid == self->index()) {
      InsertBatch(*Shard::current(), batches[sid], version, merge, &loads[sid]);
      batches[sid].bytes.clear();
      batches[sid].records.clear();
      return;
    }
    auto batch = std::make_shared<Batch>(std::move(batches[sid]));
    batches[sid] = Batch();
    fresh_batch(sid);
    while (in_flight[sid] >= kBatchesInFlight) boost::this_fiber::yield();
    ++in_flight[sid];
    const bool launched = self->Launch([&, sid, batch] {
      shard::shard_set->Await(sid, [&](Shard& s) { InsertBatch(s, *batch, version, merge, &loads[sid]); });
      --in_flight[sid];
    });
    if (!launched) {  // no fiber: carry it over in this one
      shard::shard_set->Await(sid, [&](Shard& s) { InsertBatch(s, *batch, version, merge, &loads[sid]); });
      --in_flight[sid];
    }
  };
  // RESIZEDB announces a database's size before its keys: every shard sizes its tables for its
  // part of it at once. The announced sizes count against the file's size (a key record takes at
  // least 3 bytes), so that a corrupt hint cannot make the load allocate without bound.
  size_t hints_seen = 0;
  uint64_t reserve_budget = size / 3;
  auto reserve = [&] {
    for (const auto& [db, hint] : reader.resize_hints()) {
      const uint64_t keys = std::min(hint.first, reserve_budget);
      const uint64_t expires = std::min(hint.second, keys);
      reserve_budget -= keys;
      for (unsigned sid = 0; sid < n; ++sid) {
        shard::shard_set->Await(sid, [&, db = db](Shard& s) {
          try {
            s.db(int(db)).Reserve(keys / n, expires / n);
          } catch (const std::bad_alloc&) {
            // Then the tables grow as the keys come.
          }
        });
      }
    }
    hints_seen = reader.resize_hints().size();
  };

  PersistenceStatus& ps = Persistence();
  const int64_t now_ms = shard::NowMs();
  auto next_progress = std::chrono::steady_clock::now() + kProgressPeriod;
  absl::Status status;
  uint64_t routed = 0;
  const int64_t key_delay_us = KeyLoadDelayUs();  // Redis' key-load-delay: tests make a load last
  // Read into one entry again and again, so that its strings keep their capacity.
  core::RdbRawEntry entry;
  for (;;) {
    const uint64_t offset = reader.offset();
    absl::StatusOr<bool> more = reader.NextRaw(&entry);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    if (reader.resize_hints().size() != hints_seen) reserve();
    // A key whose deadline has passed is not loaded (Redis, as a master, drops it).
    if (entry.expire_ms >= 0 && entry.expire_ms <= now_ms) {
      ++result->expired;
      continue;
    }
    const unsigned sid = shard::shard_set->ShardOf(entry.key);
    batches[sid].Add(entry, offset);
    ++routed;
    if (key_delay_us > 0) self->SleepFor(std::chrono::microseconds(key_delay_us));
    if (batches[sid].bytes.size() >= kBatchBytes || batches[sid].records.size() >= kBatchKeys) send(sid);
    if ((routed & 1023) == 0) {
      ps.loading_loaded_bytes.store(reader.offset(), std::memory_order_relaxed);
      ps.loading_loaded_keys.store(routed, std::memory_order_relaxed);
      if (std::chrono::steady_clock::now() >= next_progress) {
        next_progress += kProgressPeriod;
        LOG(INFO) << "Loading RDB: " << routed << " keys, " << (size ? reader.offset() * 100 / size : 100)
                  << "% of " << size << " bytes";
      }
    }
  }
  for (unsigned sid = 0; sid < n; ++sid) {
    if (!batches[sid].records.empty()) send(sid);
  }
  for (unsigned sid = 0; sid < n; ++sid) {
    while (in_flight[sid] > 0) boost::this_fiber::yield();
  }
  if (!status.ok()) return status;
  for (const ShardLoad& l : loads) {
    if (!l.error.ok()) return l.error;
    result->keys += l.keys;
    result->empty += l.empty;
  }
  result->empty += reader.empty_keys_skipped();
  ps.loading_loaded_bytes.store(size, std::memory_order_relaxed);
  return LoadFunctionLibraries(reader.functions());
}

}  // namespace

absl::Status LoadSnapshot(const std::string& path, bool merge, LoadResult* result) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(core::Concat(path, ": no such file"));
    return absl::InternalError(core::Concat("Fatal error loading the DB: ", strerror(err), ". Exiting."));
  }
  struct stat st {};
  fstat(fd, &st);
  PersistenceStatus& ps = Persistence();
  // The caller's total when it gave one (an AOF: the base and its incr files).
  if (ps.loading_total_bytes.load() == 0) ps.loading_total_bytes.store(uint64_t(st.st_size));
  LOG(INFO) << "Loading RDB " << path << " (" << st.st_size << " bytes)";
  const auto start = std::chrono::steady_clock::now();
  *result = LoadResult();
  absl::Status status = ReadAndRoute(fd, uint64_t(st.st_size), merge, result);
  close(fd);
  result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status.ok()) {
    ps.last_load_keys_loaded.store(result->keys);
    ps.last_load_keys_expired.store(result->expired);
    LOG(INFO) << "Done loading RDB, keys loaded: " << result->keys
              << ", keys expired: " << result->expired << ", empty keys skipped: " << result->empty
              << ", in " << result->seconds << " seconds";
  }
  return status;
}

void BeginLoading(uint64_t total_bytes) {
  PersistenceStatus& ps = Persistence();
  ps.loading_start_ms.store(shard::NowMs());
  ps.loading_total_bytes.store(total_bytes);
  ps.loading_loaded_bytes.store(0);
  ps.loading_loaded_keys.store(0);
  ps.loading.store(true);  // last: INFO never shows loading:1 with the fields of another load
}

void EndLoading() { Persistence().loading.store(false); }

}  // namespace shardis::server

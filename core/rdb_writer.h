// The RDB writer: serializes shardis' values in Redis 7.0's RDB format (version 10), choosing the
// RDB encoding that matches the value's own, as Redis does (a packed hash is written as
// RDB_TYPE_HASH_LISTPACK, a large one as RDB_TYPE_HASH, ...). Files it writes load in
// redis-server 7.0 and pass redis-check-rdb.
//
// Two levels:
//   - AppendRdbKey / AppendRdbValue: the bytes of one key record or one value into a string, with
//     no state: a shard serializes its own keys on its own thread (the value must live on the
//     calling thread's heap, like every read of it);
//   - RdbWriter: the file around them (header, aux fields, SELECTDB/RESIZEDB, EOF, CRC64), which
//     takes records (or keys) in order and streams them to an RdbSink.
#pragma once

#include <absl/status/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/compact_value.h"
#include "core/rdb_encoding.h"

namespace shardis::core {

// Redis' rdbcompression and rdbchecksum.
struct RdbSaveOptions {
  bool compression = true;
  bool checksum = true;
};

// What a key record carries besides the value.
struct RdbKeyMeta {
  int64_t expire_ms = -1;     // absolute Unix time in milliseconds; -1: no expiry
  int64_t idle_seconds = -1;  // LRU idle time (RDB_OPCODE_IDLE) when >= 0
  int freq = -1;              // LFU counter 0..255 (RDB_OPCODE_FREQ) when >= 0
};

// The RDB type byte Redis 7.0 writes for a value of this type and encoding.
uint8_t RdbValueType(const CompactValue& value);
// The value's bytes (after the type byte).
void AppendRdbValue(std::string* out, const CompactValue& value, bool compression);
// A whole key record: [EXPIRETIME_MS][IDLE][FREQ] <type> <key> <value>.
void AppendRdbKey(std::string* out, std::string_view key, const CompactValue& value,
                  const RdbKeyMeta& meta, bool compression);

using RdbAuxFields = std::vector<std::pair<std::string, std::string>>;
// The aux fields Redis 7.0 starts a file with: redis-ver, redis-bits, ctime (Unix seconds),
// used-mem, aof-base 0.
RdbAuxFields StandardRdbAux(std::string_view redis_version, int64_t ctime, uint64_t used_mem);

class RdbWriter {
 public:
  // The writer hands the sink chunks of about this size (and the rest at Finish).
  static constexpr size_t kFlushBytes = 64 * 1024;

  explicit RdbWriter(RdbSink* sink, RdbSaveOptions options = {});

  // "REDIS0010" and the aux fields.
  absl::Status WriteHeader(const RdbAuxFields& aux);
  absl::Status WriteAux(std::string_view key, std::string_view value);
  // SELECTDB db, then RESIZEDB keys expires (Redis' hint of the database's sizes).
  // A function library (RDB_OPCODE_FUNCTION2 and its code), before the databases.
  absl::Status WriteFunction(std::string_view code);
  absl::Status SelectDb(uint32_t db, uint64_t keys, uint64_t expires);
  absl::Status WriteKey(std::string_view key, const CompactValue& value,
                        const RdbKeyMeta& meta = {});
  // Records made by AppendRdbKey (on any thread), in the order they go into the file.
  absl::Status WriteRecords(std::string_view records);
  // EOF and the checksum (0 without rdbchecksum), then everything left to the sink.
  absl::Status Finish();
  // Hands everything buffered to the sink now (a snapshot takes the header this way and writes
  // the rest of the file itself, in pieces from every shard).
  absl::Status Flush();

  // Bytes produced so far (handed to the sink or waiting in the buffer).
  uint64_t bytes() const { return flushed_ + buf_.size(); }
  const RdbSaveOptions& options() const { return options_; }

 private:
  absl::Status MaybeFlush() { return buf_.size() >= kFlushBytes ? Flush() : absl::OkStatus(); }

  RdbSink* sink_;
  RdbSaveOptions options_;
  std::string buf_;
  uint64_t crc_ = 0;
  uint64_t flushed_ = 0;
};

}  // namespace shardis::core

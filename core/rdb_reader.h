// The RDB reader: loads Redis RDB files of versions 9 to 11 (Redis 6.2 to 7.2, Valkey 8) into
// shardis' values, with the encodings Redis would choose at load under shardis' thresholds
// (--hash_max_listpack_entries and the others): every element goes through the data type's own
// insert, so the usual conversions apply.
//
// It never trusts the file: every length is checked against what follows, every packed blob
// (listpack, ziplist, intset, zipmap) is validated as Redis' deep sanitization does before it is
// read, duplicates in sets, hashes, sorted sets and stream groups are refused, and each error is
// a status whose message starts with the byte offset ("at byte 1234: expected a length, found end
// of file"). Values are built on the calling thread's ShardHeap.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/compact_value.h"
#include "core/rdb_encoding.h"
#include "core/rdb_writer.h"

namespace shardis::core {

// Reads one value of RDB type `type` (a value type byte, not an opcode) and builds it in *out.
// `version` is the RDB version of the data (it decides nothing today but stays for formats that
// depend on it). *empty is set when the value is an empty collection, which Redis skips on load
// (*out is then left empty).
absl::Status ReadRdbValue(RdbInput& in, uint8_t type, int version, CompactValue* out,
                          bool* empty);

// Passes over one value of RDB type `type`, checking only its framing (lengths, strings), so a
// loader can cut a file into per-key payloads quickly and let each key's shard decode its own.
absl::Status SkipRdbValue(RdbInput& in, uint8_t type);

// ReadRdbValue over a payload that NextRaw captured; the payload must be exactly one value.
absl::Status DecodeRdbValue(uint8_t type, int version, std::string_view payload,
                            CompactValue* out, bool* empty);

// True for the type bytes ReadRdbValue knows (the others are opcodes or unsupported).
bool IsRdbValueType(uint8_t type);

// One key of the file.
struct RdbEntry {
  uint32_t db = 0;
  std::string key;
  CompactValue value;
  int64_t expire_ms = -1;     // absolute Unix ms; -1: none. Already-expired keys are returned too.
  int64_t idle_seconds = -1;  // RDB_OPCODE_IDLE, -1: none
  int freq = -1;              // RDB_OPCODE_FREQ, -1: none
};

// One key of the file with its value still encoded (for a loader that decodes on the key's
// shard: DecodeRdbValue(type, version(), payload, ...)).
struct RdbRawEntry {
  uint32_t db = 0;
  std::string key;
  uint8_t type = 0;
  std::string payload;  // the value's bytes, after the type byte
  int64_t expire_ms = -1;
  int64_t idle_seconds = -1;
  int freq = -1;
};

class RdbReader {
 public:
  // `databases`: SELECTDB of a higher number is an error (Redis' "databases" setting).
  explicit RdbReader(RdbSource* source, uint32_t databases = 16);

  // The signature and version. Must come first.
  absl::Status ReadHeader();
  int version() const { return version_; }

  // The next key into *entry (true), or false at the end of the file, after the checksum matched
  // (a file written with rdbchecksum off has 0 there and is not checked). Opcodes on the way
  // (aux fields, SELECTDB, RESIZEDB, functions, module aux data) are recorded below.
  absl::StatusOr<bool> Next(RdbEntry* entry);
  // The same, leaving the value encoded: only its framing is checked here, the rest when it is
  // decoded (where an empty collection shows up too: the caller skips it as Next does).
  absl::StatusOr<bool> NextRaw(RdbRawEntry* entry);

  const RdbAuxFields& aux() const { return aux_; }
  // RESIZEDB hints: db -> {keys, keys with an expiry}.
  const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& resize_hints() const {
    return resize_hints_;
  }
  // FUNCTION2 payloads (Lua library code), which shardis does not load: the caller decides
  // whether to warn or refuse.
  const std::vector<std::string>& functions() const { return functions_; }
  // The names of the modules whose MODULE_AUX data was skipped.
  const std::vector<std::string>& skipped_module_aux() const { return skipped_module_aux_; }
  uint64_t empty_keys_skipped() const { return empty_keys_skipped_; }
  // After the end: whether the file carried a checksum (and it matched).
  bool checksum_checked() const { return checksum_checked_; }
  uint64_t offset() const { return in_.offset(); }

 private:
  absl::Status SkipModuleAux(uint64_t at);
  // Reads opcodes up to the next key record: its type byte and key (true), or the end (false).
  absl::StatusOr<bool> NextKey(uint8_t* type, std::string* key, int64_t* expire, int64_t* idle,
                               int* freq);

  RdbInput in_;
  uint32_t databases_;
  int version_ = 0;
  uint32_t db_ = 0;
  bool done_ = false;
  bool checksum_checked_ = false;
  RdbAuxFields aux_;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> resize_hints_;
  std::vector<std::string> functions_;
  std::vector<std::string> skipped_module_aux_;
  uint64_t empty_keys_skipped_ = 0;
};

// Redis' name of a module type from its 64-bit id (9 characters; the low 10 bits are the
// encoding version).
std::string RdbModuleTypeName(uint64_t module_id);

}  // namespace shardis::core

// The RDB reader (core/rdb_reader.h) on an arbitrary file, read both ways a load does (Next, and
// NextRaw + DecodeRdbValue on the key's shard): besides memory errors, UB and leaks, every value
// Next builds must DUMP to a payload that restores to the same content.
#include <cstdlib>
#include <string>

#include "core/rdb_encoding.h"
#include "core/rdb_reader.h"
#include "tests/fuzz/dump_round_trip.h"

namespace shardis::fuzz {
namespace {

// A file has at most this many keys read from it: enough for the seeds, and a bound on the time
// one input takes.
constexpr int kMaxKeys = 1000;

void ReadWhole(std::string_view file) {
  core::StringSource source(file);
  core::RdbReader reader(&source);
  if (!reader.ReadHeader().ok()) return;
  for (int i = 0; i < kMaxKeys; ++i) {
    core::RdbEntry entry;
    absl::StatusOr<bool> more = reader.Next(&entry);
    if (!more.ok() || !*more) return;
    CheckDumpRoundTrip(entry.value);
  }
}

void ReadRaw(std::string_view file) {
  core::StringSource source(file);
  core::RdbReader reader(&source);
  if (!reader.ReadHeader().ok()) return;
  for (int i = 0; i < kMaxKeys; ++i) {
    core::RdbRawEntry entry;
    absl::StatusOr<bool> more = reader.NextRaw(&entry);
    if (!more.ok() || !*more) return;
    // The values are those ReadWhole built and checked: only decoded here, which halves the
    // time an input takes.
    core::CompactValue value;
    bool empty = false;
    core::DecodeRdbValue(entry.type, reader.version(), entry.payload, &value, &empty)
        .IgnoreError();
  }
}

}  // namespace
}  // namespace shardis::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  shardis::fuzz::ReadWhole(file);
  shardis::fuzz::ReadRaw(file);
  return 0;
}

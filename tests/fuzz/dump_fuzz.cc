// RESTORE's and FUNCTION RESTORE's payload decoders (core/rdb_dump.h) on arbitrary payloads.
// The checksum is not checked (as with rdbchecksum no), so that the fuzzer reaches the value
// decoders behind it. A value it accepts must DUMP to a payload that restores to the same content.
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rdb_dump.h"
#include "tests/fuzz/dump_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace core = shardis::core;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  core::VerifyDumpPayload(payload).IgnoreError();  // the checksum path, for coverage

  core::CompactValue value;
  if (core::DecodeDumpPayload(payload, &value, /*check_crc=*/false).ok()) {
    shardis::fuzz::CheckDumpRoundTrip(value);
  }
  std::vector<std::string> codes;
  core::DecodeFunctionsDumpPayload(payload, &codes, /*check_crc=*/false).IgnoreError();
  return 0;
}

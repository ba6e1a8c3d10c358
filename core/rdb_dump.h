// DUMP payloads as Redis makes them: the RDB value (type byte and value), the RDB version in
// 2 bytes and the CRC64 of everything before it in 8 bytes, both little-endian. RESTORE takes
// payloads of RDB versions up to 11 (Redis 7.2) whose checksum matches.
#pragma once

#include <absl/status/status.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/compact_value.h"

namespace shardis::core {

// DUMP of a value (rdbcompression decides LZF, as in Redis).
std::string CreateDumpPayload(const CompactValue& value, bool compression = true);

// Redis' verifyDumpPayload: long enough, a version this reader takes, and the checksum (skipped
// when !check_crc, Redis' rdbchecksum no). The error says "DUMP payload version or checksum are
// wrong", Redis' text.
absl::Status VerifyDumpPayload(std::string_view payload, bool check_crc = true);

// Verifies and decodes a payload into *out on the calling thread's heap. A malformed value is an
// error starting with "Bad data format" (Redis' reply), then what was wrong. Bytes between the
// value and the footer are ignored, as in Redis.
absl::Status DecodeDumpPayload(std::string_view payload, CompactValue* out,
                               bool check_crc = true);

// FUNCTION DUMP's payload: each library's code after RDB_OPCODE_FUNCTION2 (as Redis' RDB holds
// them), then the same footer.
std::string CreateFunctionsDumpPayload(std::span<const std::string> codes, bool compression = true);

// FUNCTION RESTORE's reading of one: the libraries' code, or Redis' error text ("DUMP payload
// version or checksum are wrong", "given type is not a function", ...).
absl::Status DecodeFunctionsDumpPayload(std::string_view payload, std::vector<std::string>* codes,
                                        bool check_crc = true);

}  // namespace shardis::core

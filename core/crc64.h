// CRC64 as Redis computes it for RDB files and DUMP payloads ("Jones" polynomial
// 0xad93d23594c935a9, reflected input and output, initial value 0, no final xor; the check value
// of "123456789" is 0xe9c6d914c4b8d9ca). Carry-less multiplication (PCLMULQDQ) folding on x86-64
// where the CPU has it, else table driven, eight bytes per step.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardis::core {

// The CRC of `data` continued from `crc` (0 to start): Crc64(Crc64(0, a), b) == Crc64(0, a + b).
uint64_t Crc64(uint64_t crc, std::string_view data);

// The table-driven Crc64, whatever the CPU: the fallback, and the reference for tests.
uint64_t Crc64Portable(uint64_t crc, std::string_view data);

// The CRC of a + b from crc_a = Crc64(0, a), crc_b = Crc64(0, b) and b's length, without the
// bytes: shards write their parts of one RDB file in parallel, each with the CRC of its own
// chunks, and the file's checksum is combined from those. O(log len_b).
uint64_t Crc64Combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

}  // namespace shardis::core

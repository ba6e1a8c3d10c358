// Redis' intset as RDB files carry it (RDB_TYPE_SET_INTSET): a 4-byte width (2, 4 or 8), a 4-byte
// count, then the values in ascending order at that width; all little-endian. Our IntSet
// (intset.h) has a different header, so the RDB codec converts through these two functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

// The blob of ascending, distinct values, at the smallest width that holds them all (what Redis'
// intset would hold).
std::string EncodeRedisIntset(const std::vector<int64_t>& ascending);

// Redis' deep validation (intsetValidateIntegrity with deep=1): a known width, a size that is
// exactly header + count * width, at least one value, strictly ascending. Appends the values to
// *out; false with *why on a malformed blob.
bool DecodeRedisIntset(std::string_view blob, std::vector<int64_t>* out, std::string* why);

}  // namespace shardis::core

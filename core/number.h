// Number parsing and formatting with Redis' exact rules (doubles: core/double_format.h).
//
// Clients see these texts (INCR, INCRBYFLOAT, ZSCORE, ZSCAN, ...) and scripts compare them
// byte for byte, so every function documents the Redis routine whose behaviour it reproduces.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardis::core {

// Enough for "-9223372036854775808" plus a NUL.
inline constexpr size_t kInt64BufSize = 21;

// Redis string2ll: optional '-', then digits; no '+', no spaces, no leading zeros ("0" alone is
// fine, "-0" is not), no overflow, not empty.
bool ParseInt64(std::string_view s, int64_t* out);

// The C library's strtoull/strtol shape, whole string only: an optional '+' or '-', then one or
// more decimal digits whose value fits 64 bits (leading zeros allowed; no spaces). The sign and
// the magnitude are returned apart, for callers with different rules for negatives.
bool ParseSignedDigits(std::string_view s, bool* negative, uint64_t* magnitude);

// Redis parseScanCursorOrReply (SCAN, HSCAN, ...): strtoul in base 10 over the whole string: an
// optional sign ("-1" wraps around as strtoul does), leading zeros allowed; no leading space, no
// trailing bytes, no overflow. "" is cursor 0, as strtoul reads it.
bool ParseScanCursor(std::string_view s, uint64_t* out);

// Redis string2d (getDoubleFromObject): strtod must consume the whole string; a leading space,
// NaN, overflow to +-HUGE_VAL and underflow to zero are rejected. "inf", "+inf", "-inf",
// "infinity" and hex floats are accepted because strtod accepts them.
bool ParseDouble(std::string_view s, double* out);

// Redis string2ld: like ParseDouble but with strtold, and strings of 5 KiB or more
// (MAX_LONG_DOUBLE_CHARS) are rejected.
bool ParseLongDouble(std::string_view s, long double* out);

// What C's strtol(s, NULL, 10) (and so atoll) returns on a 64-bit machine: leading C spaces are
// skipped, then an optional sign and the longest run of digits are read; anything after is
// ignored; no digits gives 0; overflow saturates at INT64_MIN/INT64_MAX. For formats that Redis
// reads that way (AOF lengths, manifest seqs).
int64_t ParseCLongPrefix(std::string_view s);

// Writes the decimal form of v to buf (at least kInt64BufSize bytes, no NUL written) and returns
// its length. Table-driven, two digits per step: this is on the reply hot path.
size_t FormatInt64(int64_t v, char* buf);
std::string Int64ToString(int64_t v);

// Redis ld2string in LD_STR_HUMAN mode (INCRBYFLOAT, HINCRBYFLOAT): "%.17Lf" with trailing zeros
// and a trailing '.' removed, "-0" printed as "0", infinities as "inf"/"-inf".
std::string FormatLongDouble(long double v);

// Redis ld2string in LD_STR_AUTO mode: "%.17Lg", infinities as "inf"/"-inf", NaN as "nan". ZSCAN
// writes the scores of a skiplist-encoded sorted set so, in 7.0 and 7.2 alike (a small one's
// scores are the stored d2string text: FormatDouble in core/double_format.h).
std::string FormatLongDoubleAuto(long double v);

}  // namespace shardis::core

// The text of a double as Redis 7.2 writes it.
//
// Redis 7.2 prints doubles (ZSCORE, ZINCRBY, WITHSCORES, RESP3 doubles, the scores a small sorted
// set keeps as text) with d2string: integral values as integers, everything else with
// fpconv_dtoa, which is Florian Loitsch's Grisu2 ("Printing Floating-Point Numbers Quickly and
// Accurately with Integers", PLDI 2010) followed by fpconv's own layout rules. Grisu2's digits
// always read back as the same double but are not always the shortest digits that do, so the
// shortest-digits formatters (std::to_chars) differ from Redis on some values: this file carries
// its own Grisu2. Redis 7.0 printed "%.17g" (ZSCORE of 0.1: "0.10000000000000001"; 7.2: "0.1").

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardis::core {

// Longest text: a sign, 17 digits and 7 zeros ("-123456789012345670000000"; fpconv's own
// "char dest[24]" is one short of it). Scientific texts take at most 24.
inline constexpr size_t kDoubleBufSize = 25;

// Redis 7.2 fpconv_dtoa: the Grisu2 digits of |d| laid out as
//   - the digits and up to 7 zeros when the value is an integer that way ("100", "10000000"),
//   - a plain decimal when the last digit is at most 6 places after the point or the first one
//     is within 3 places of it ("0.000001", "123.45", "0.00123456789012345"),
//   - otherwise "d.ddde+X" / "d.ddde-X" with an exponent of 1 to 3 digits ("1e+8", "1.5e-7").
// A set sign bit writes '-' first (so "-0" and, for a NaN with it, "-nan"); zero is "0", NaN
// "nan", infinity "inf". Writes at most kDoubleBufSize bytes, no NUL; returns the length.
size_t FormatDoubleGrisu2(double d, char* buf);

// Redis double2ll: true, with *out set, when d is an integer in [-2^62, 2^62] (a range where the
// conversion is exact). -0.0 gives 0.
bool DoubleToInt64Exact(double d, int64_t* out);

// Redis 7.2 d2string (and so addReplyDouble): "nan", "inf", "-inf", "0", "-0"; integers that
// DoubleToInt64Exact takes as integers ("3", "1000000000000000000"); anything else
// FormatDoubleGrisu2. Writes at most kDoubleBufSize bytes, no NUL; returns the length.
size_t FormatDouble(double d, char* buf);
std::string FormatDouble(double d);

}  // namespace shardis::core

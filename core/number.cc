#include "core/number.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/string_util.h"

namespace shardis::core {

namespace {

// "00".."99": two digits per division halves the number of (slow) divisions.
constexpr char kDigitPairs[] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

// Redis' MAX_LONG_DOUBLE_CHARS: string2ld rejects inputs of this length or more.
constexpr size_t kMaxLongDoubleChars = 5 * 1024;

// strtod/strtold need a NUL-terminated string. Short inputs (nearly all) are copied to the stack;
// the buffer is kept small because this may run on a 64 KiB fiber stack.
constexpr size_t kStackCopy = 128;

// Calls fn(nul_terminated_copy_of_s) without heap allocation for short strings.
template <typename Fn>
auto WithCString(std::string_view s, Fn fn) {
  if (s.size() < kStackCopy) {
    char buf[kStackCopy];
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = '\0';
    return fn(buf);
  }
  std::string copy(s);
  return fn(copy.c_str());
}

}  // namespace

bool ParseSignedDigits(std::string_view s, bool* negative, uint64_t* magnitude) {
  size_t i = 0;
  *negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) *negative = s[i++] == '-';
  if (i == s.size()) return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    const uint64_t digit = c - '0';
    if (v > (UINT64_MAX - digit) / 10) return false;  // ERANGE
    v = v * 10 + digit;
  }
  *magnitude = v;
  return true;
}

bool ParseScanCursor(std::string_view s, uint64_t* out) {
  if (s.empty()) {  // strtoul("") is 0 with nothing left over, so Redis takes it as cursor 0
    *out = 0;
    return true;
  }
  bool negative;
  uint64_t v;
  if (!ParseSignedDigits(s, &negative, &v)) return false;
  *out = negative ? 0 - v : v;  // strtoul wraps a negative value around
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  // Longest valid form is "-9223372036854775808" (20 chars); leading zeros are invalid, so
  // anything longer cannot be a valid number.
  if (s.empty() || s.size() >= kInt64BufSize) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == s.size()) return false;
  // The first digit must be 1-9: this rejects "-0", "007" and "+1".
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    const uint64_t digit = c - '0';
    if (v > (UINT64_MAX - digit) / 10) return false;  // v * 10 + digit would overflow
    v = v * 10 + digit;
  }
  if (negative) {
    // |INT64_MIN| is one more than INT64_MAX.
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  // strtod would skip leading whitespace; Redis refuses it.
  if (s.empty() || IsCSpace(s[0])) return false;
  return WithCString(s, [&](const char* buf) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(buf, &end);
    // A NUL inside s stops strtod early, so the length check also rejects embedded NULs.
    if (static_cast<size_t>(end - buf) != s.size()) return false;
    // ERANGE with a finite non-zero result is a denormal: Redis keeps it.
    if (errno == ERANGE && (std::isinf(v) || v == 0)) return false;
    if (std::isnan(v)) return false;
    *out = v;
    return true;
  });
}

bool ParseLongDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() >= kMaxLongDoubleChars || IsCSpace(s[0])) return false;
  return WithCString(s, [&](const char* buf) {
    char* end = nullptr;
    errno = 0;
    const long double v = std::strtold(buf, &end);
    if (static_cast<size_t>(end - buf) != s.size()) return false;
    if (errno == ERANGE && (std::isinf(v) || v == 0)) return false;
    if (errno == EINVAL || std::isnan(v)) return false;
    *out = v;
    return true;
  });
}

size_t FormatInt64(int64_t v, char* buf) {
  // Negate in unsigned arithmetic so INT64_MIN does not overflow.
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  char tmp[20];
  char* p = tmp + sizeof(tmp);
  while (u >= 100) {
    const size_t pair = (u % 100) * 2;
    u /= 100;
    *--p = kDigitPairs[pair + 1];
    *--p = kDigitPairs[pair];
  }
  if (u >= 10) {
    *--p = kDigitPairs[u * 2 + 1];
    *--p = kDigitPairs[u * 2];
  } else {
    *--p = static_cast<char>('0' + u);
  }
  size_t n = 0;
  if (v < 0) buf[n++] = '-';
  const size_t digits = tmp + sizeof(tmp) - p;
  std::memcpy(buf + n, p, digits);
  return n + digits;
}

std::string Int64ToString(int64_t v) {
  char buf[kInt64BufSize];
  return std::string(buf, FormatInt64(v, buf));
}

std::string FormatLongDouble(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // "%.17Lf" of a large value prints every integer digit (up to ~4950 for LDBL_MAX), so format on
  // the stack first and only go to the heap for huge values.
  char small[128];
  std::string out;
  int n = std::snprintf(small, sizeof(small), "%.17Lf", v);
  if (n < static_cast<int>(sizeof(small))) {
    out.assign(small, n);
  } else {
    out.resize(n + 1);
    std::snprintf(out.data(), out.size(), "%.17Lf", v);
    out.resize(n);
  }
  // Human form: "1.50000000000000000" -> "1.5", "3.00000000000000000" -> "3".
  if (out.find('.') != std::string::npos) {
    size_t len = out.size();
    while (out[len - 1] == '0') --len;
    if (out[len - 1] == '.') --len;
    out.resize(len);
  }
  if (out == "-0") out = "0";  // a tiny negative value rounds to "-0.000..."; Redis prints "0"
  return out;
}

std::string FormatLongDoubleAuto(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[32];  // at most "-1.2345678901234567e-4951"
  return std::string(buf, std::snprintf(buf, sizeof(buf), "%.17Lg", v));
}

int64_t ParseCLongPrefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  // Accumulated as a negative number, whose range includes INT64_MIN.
  int64_t v = 0;
  bool overflow = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const int d = s[i] - '0';
    if (v < (INT64_MIN + d) / 10) {
      overflow = true;
    } else if (!overflow) {
      v = v * 10 - d;
    }
  }
  if (overflow) return negative ? INT64_MIN : INT64_MAX;
  if (negative) return v;
  return v == INT64_MIN ? INT64_MAX : -v;
}

}  // namespace shardis::core

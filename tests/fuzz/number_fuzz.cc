// The numeric parsers of core/number.h on arbitrary argument bytes: besides memory errors and
// UB, what they accept must format back to a value that parses to the same number (with each of
// the double formatters of core/double_format.h and core/number.h), and the strtol-alike must
// agree with the C library.
#include <fuzzer/FuzzedDataProvider.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/double_format.h"
#include "core/number.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace core = shardis::core;
  const std::string s(reinterpret_cast<const char*>(data), size);

  int64_t i;
  if (core::ParseInt64(s, &i) && core::Int64ToString(i) != s) abort();  // one spelling per value

  bool negative;
  uint64_t magnitude;
  if (core::ParseSignedDigits(s, &negative, &magnitude)) {
    errno = 0;
    char* end;
    const unsigned long long expect = strtoull(s.c_str() + (s[0] == '-' || s[0] == '+'), &end, 10);
    if (errno != 0 || expect != magnitude || negative != (s[0] == '-')) abort();
  }

  uint64_t cursor;
  core::ParseScanCursor(s, &cursor);

  double d;
  if (core::ParseDouble(s, &d)) {
    double back;
    if (std::isnan(d) || !core::ParseDouble(core::FormatDouble(d), &back) || back != d) abort();
    // fpconv_dtoa on its own (scripts' numeric arguments) and ZSCAN's "%.17Lg" too.
    char buf[core::kDoubleBufSize];
    const std::string_view grisu(buf, core::FormatDoubleGrisu2(d, buf));
    if (!core::ParseDouble(grisu, &back) || back != d) abort();
    if (!core::ParseDouble(core::FormatLongDoubleAuto(d), &back) || back != d) abort();
  }
  // Any 8 bytes as a double, NaN aside, formats back to the same bits (-0 too).
  if (size >= sizeof(double)) {
    double bits_value;
    std::memcpy(&bits_value, data, sizeof(bits_value));
    double back;
    if (!std::isnan(bits_value) &&
        (!core::ParseDouble(core::FormatDouble(bits_value), &back) ||
         std::memcmp(&back, &bits_value, sizeof(back)) != 0)) {
      abort();
    }
  }
  long double ld;
  if (core::ParseLongDouble(s, &ld)) core::FormatLongDouble(ld);

  // strtoll on the C string (an embedded NUL ends it there too).
  errno = 0;
  const long long c_value = strtoll(s.c_str(), nullptr, 10);
  if (core::ParseCLongPrefix(s.substr(0, s.find('\0'))) != c_value) abort();
  return 0;
}

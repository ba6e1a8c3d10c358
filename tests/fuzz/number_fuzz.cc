// The numeric parsers of core/number.h on arbitrary argument bytes: besides memory errors and
// UB, what they accept must format back to a value that parses to the same number, and the
// strtol-alike must agree with the C library.
#include <fuzzer/FuzzedDataProvider.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

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
  }
  long double ld;
  if (core::ParseLongDouble(s, &ld)) core::FormatLongDouble(ld);

  // strtoll on the C string (an embedded NUL ends it there too).
  errno = 0;
  const long long c_value = strtoll(s.c_str(), nullptr, 10);
  if (core::ParseCLongPrefix(s.substr(0, s.find('\0'))) != c_value) abort();
  return 0;
}

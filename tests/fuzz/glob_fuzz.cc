// The glob matcher (core/glob.h) on arbitrary patterns and strings: besides memory errors and
// UB, its iterative algorithm must stay within O(|pattern| * |str|) (libFuzzer's -timeout catches
// a blow-up) and agree with facts any glob matcher has.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

#include "core/glob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shardis::core::GlobMatch;
  FuzzedDataProvider in(data, size);
  const bool nocase = in.ConsumeBool();
  const std::string pattern = in.ConsumeRandomLengthString(4096);
  const std::string str = in.ConsumeRemainingBytesAsString();
  // (nocase does not only widen a match: Redis lowercases a class' range bounds, so "[Z-a]"
  // takes '_' but not in nocase. So the two modes are only run, not compared.)
  GlobMatch(pattern, str, nocase);

  // Every character escaped matches exactly that string, and "*" then anything non-empty.
  std::string escaped;
  for (char c : str) escaped.append({'\\', c});
  if (GlobMatch(escaped, str) != true) abort();
  if (!str.empty() && !GlobMatch("*", str)) abort();
  // A pattern with no special character matches only itself.
  if (pattern.find_first_of("*?[\\") == std::string::npos &&
      GlobMatch(pattern, str) != (pattern == str)) {
    abort();
  }
  return 0;
}

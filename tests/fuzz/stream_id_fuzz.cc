// The stream ID parser (core::ParseStreamID, XADD/XRANGE/XREAD arguments) on arbitrary bytes:
// besides memory errors and UB, an ID it accepts prints as "ms-seq" text that parses back to it.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

#include "core/stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shardis::core::ParseStreamID;
  using shardis::core::StreamID;
  FuzzedDataProvider in(data, size);
  const uint64_t missing_seq = in.ConsumeBool() ? UINT64_MAX : 0;
  const bool strict = in.ConsumeBool();
  const bool with_seq_given = in.ConsumeBool();
  const std::string s = in.ConsumeRemainingBytesAsString();

  StreamID id;
  bool seq_given = true;
  if (!ParseStreamID(s, missing_seq, strict, &id, with_seq_given ? &seq_given : nullptr)) return 0;
  if (!seq_given && id.seq != 0) abort();  // "<ms>-*" leaves the sequence to XADD
  StreamID back;
  if (!ParseStreamID(id.ToString(), 0, /*strict=*/true, &back) || back != id) abort();
  return 0;
}

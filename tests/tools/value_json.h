// A canonical JSON text of a value, for tests that compare what two sides hold (rdb_tool prints
// it for the interop test; the RDB unit tests compare through it). Strings are byte strings:
// each byte is written as the code point of the same number (Python: .encode('latin-1') gives
// the bytes back). Sets and hash fields are sorted; lists, sorted sets and streams keep their
// order; scores are written with %.17g.
#pragma once

#include <string>
#include <string_view>

#include "core/compact_value.h"

namespace shardis::tools {

std::string JsonString(std::string_view s);
// {"type": ..., "encoding": ..., "value": ...}
std::string ValueJson(const core::CompactValue& value);

}  // namespace shardis::tools

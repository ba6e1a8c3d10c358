// The check the value-building targets share: a value DUMPs to a payload that RESTOREs to a value
// with the same content (compared as canonical JSON: a hash or set in a hash table lists its
// members in table order, which a rebuilt table need not repeat). RESTORE also refuses an empty
// collection, so this catches one left behind.
#pragma once

#include <cstdlib>
#include <string>

#include "core/rdb_dump.h"
#include "tests/tools/value_json.h"

namespace shardis::fuzz {

inline void CheckDumpRoundTrip(const core::CompactValue& value) {
  core::CompactValue restored;
  if (!core::DecodeDumpPayload(core::CreateDumpPayload(value), &restored).ok()) abort();
  // A string APPEND or SETRANGE changed says "raw"; RESTORE makes a new one, which does not, as
  // in Redis (the payload has no encoding for it to carry).
  if (value.raw()) restored.set_raw();
  if (tools::ValueJson(restored) != tools::ValueJson(value)) abort();
}

}  // namespace shardis::fuzz

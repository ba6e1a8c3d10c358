#include <algorithm>
#include <string>

#include "core/number.h"
#include "core/string_util.h"
#include "server/command_docs_args.h"

namespace shardis::server {

const CommandDocArgs* FindCommandDocArgs(std::string_view name) {
  const CommandDocArgs* end = kCommandDocArgs + kCommandDocArgsCount;
  const CommandDocArgs* it =
      std::lower_bound(kCommandDocArgs, end, name,
                       [](const CommandDocArgs& e, std::string_view n) { return e.name < n; });
  return it != end && it->name == name ? it : nullptr;
}

void AppendDocEntries(core::ReplyBuilder& rb, std::string_view resp3) {
  std::string* out = rb.output();
  if (rb.resp3()) {
    out->append(resp3);
    return;
  }
  // The fragment holds only maps, arrays, bulk strings, simple strings and integers (the
  // generator writes nothing else): a map of n entries becomes an array of 2n elements; a bulk's
  // payload is copied by its length, so no byte of it is taken for a header.
  size_t pos = 0;
  while (pos < resp3.size()) {
    const size_t eol = resp3.find("\r\n", pos);
    const char kind = resp3[pos];
    const std::string_view rest = resp3.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    if (kind == '%') {
      int64_t n = 0;
      core::ParseInt64(rest, &n);
      core::Append(out, "*", 2 * n, "\r\n");
      continue;
    }
    core::Append(out, std::string_view(&kind, 1), rest, "\r\n");
    if (kind == '$') {
      int64_t len = 0;
      core::ParseInt64(rest, &len);
      out->append(resp3.substr(pos, size_t(len) + 2));
      pos += size_t(len) + 2;
    }
  }
}

}  // namespace shardis::server

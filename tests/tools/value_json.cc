#include "tests/tools/value_json.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/hash_object.h"
#include "core/list.h"
#include "core/number.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/value_object.h"
#include "core/zset.h"

namespace shardis::tools {

using namespace core;

std::string JsonString(std::string_view s) {
  // Byte by byte without snprintf: the commands fuzz target renders every value after every
  // command, and under ASan an snprintf per byte of a 100 KB string took seconds.
  constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      out.append(escape, sizeof(escape));
    }
  }
  out.push_back('"');
  return out;
}

namespace {

std::string Score(double d) {
  char buf[40];
  snprintf(buf, sizeof(buf), "%.17g", d);
  return JsonString(buf);
}

std::string Id(StreamID id) { return JsonString(id.ToString()); }

std::string StreamJson(const Stream& s) {
  std::string out = "{\"entries\":[";
  bool first = true;
  s.Range(StreamID::Min(), StreamID::Max(), false, [&](StreamID id, const Stream::FieldValues& fv) {
    out += first ? "[" : ",[";
    first = false;
    out += Id(id) + ",[";
    for (size_t i = 0; i < fv.size(); ++i) out += (i ? "," : "") + JsonString(fv[i]);
    out += "]]";
    return true;
  });
  out += "],\"length\":" + std::to_string(s.length());
  out += ",\"last_id\":" + Id(s.last_id());
  out += ",\"max_deleted_id\":" + Id(s.max_deleted_entry_id());
  out += ",\"entries_added\":" + std::to_string(s.entries_added());
  out += ",\"groups\":[";
  bool gfirst = true;
  for (const auto& [name, g] : s.groups()) {
    out += gfirst ? "{" : ",{";
    gfirst = false;
    out += "\"name\":" + JsonString(std::string_view(name.data(), name.size()));
    out += ",\"last_id\":" + Id(g->last_id);
    out += ",\"entries_read\":" + std::to_string(g->entries_read);
    out += ",\"pel\":[";
    bool pfirst = true;
    for (const auto& [id, nack] : g->pel) {
      out += pfirst ? "[" : ",[";
      pfirst = false;
      out += Id(id) + "," + JsonString(std::string_view(nack->consumer->name.data(),
                                                         nack->consumer->name.size()));
      out += "," + std::to_string(nack->delivery_time) + "," +
             std::to_string(nack->delivery_count) + "]";
    }
    out += "],\"consumers\":[";
    bool cfirst = true;
    for (const auto& [cname, c] : g->consumers) {
      out += cfirst ? "[" : ",[";
      cfirst = false;
      out += JsonString(std::string_view(cname.data(), cname.size())) + "," +
             std::to_string(c->seen_time) + ",[";
      bool ifirst = true;
      for (const auto& [id, nack] : c->pel) {
        out += (ifirst ? "" : ",") + Id(id);
        ifirst = false;
      }
      out += "]]";
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string List(std::vector<std::string> items, bool sort) {
  if (sort) std::sort(items.begin(), items.end());
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

}  // namespace

std::string ValueJson(const CompactValue& value) {
  std::string type, body;
  switch (value.type()) {
    case ValueType::kString: {
      type = "string";
      char scratch[CompactValue::kScratchSize];
      body = JsonString(value.GetString(scratch));
      break;
    }
    case ValueType::kList: {
      type = "list";
      std::vector<std::string> items;
      char scratch[kInt64BufSize];
      const auto* l = static_cast<const core::List*>(value.object());
      for (auto it = l->Begin(); it.Valid(); it.Next()) items.push_back(JsonString(it.Get(scratch)));
      body = List(std::move(items), false);
      break;
    }
    case ValueType::kSet: {
      type = "set";
      std::vector<std::string> items;
      SetRef(const_cast<CompactValue&>(value)).ForEach([&](std::string_view m) {
        items.push_back(JsonString(m));
      });
      body = List(std::move(items), true);
      break;
    }
    case ValueType::kHash: {
      type = "hash";
      std::vector<std::string> items;
      HashRef(const_cast<CompactValue&>(value)).ForEach([&](std::string_view f, std::string_view v) {
        items.push_back("[" + JsonString(f) + "," + JsonString(v) + "]");
      });
      body = List(std::move(items), true);
      break;
    }
    case ValueType::kZSet: {
      type = "zset";
      std::vector<std::string> items;
      const auto* z = static_cast<const ZSet*>(value.object());
      if (z->size() > 0) {
        z->RangeByRank(0, z->size() - 1, false, [&](std::string_view m, double s) {
          items.push_back("[" + JsonString(m) + "," + Score(s) + "]");
        });
      }
      body = List(std::move(items), false);
      break;
    }
    case ValueType::kStream:
      type = "stream";
      body = StreamJson(*static_cast<const Stream*>(value.object()));
      break;
  }
  return "{\"type\":\"" + type + "\",\"encoding\":\"" + std::string(EncodingName(value)) +
         "\",\"value\":" + body + "}";
}

}  // namespace shardis::tools

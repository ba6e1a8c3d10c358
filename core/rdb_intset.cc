#include "core/rdb_intset.h"

namespace shardis::core {

std::string EncodeRedisIntset(const std::vector<int64_t>& ascending) {
  uint32_t width = 2;
  for (int64_t v : ascending) {
    if (v < INT32_MIN || v > INT32_MAX) {
      width = 8;
      break;
    }
    if (v < INT16_MIN || v > INT16_MAX) width = 4;
  }
  std::string out;
  out.reserve(8 + ascending.size() * width);
  auto put = [&](uint64_t u, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  };
  put(width, 4);
  put(ascending.size(), 4);
  for (int64_t v : ascending) put(static_cast<uint64_t>(v), width);
  return out;
}

bool DecodeRedisIntset(std::string_view blob, std::vector<int64_t>* out, std::string* why) {
  const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
  auto le = [&](size_t off, uint32_t n) {
    uint64_t u = 0;
    for (uint32_t i = 0; i < n; ++i) u |= uint64_t(p[off + i]) << (8 * i);
    return u;
  };
  if (blob.size() < 8) {
    *why = "intset shorter than its header";
    return false;
  }
  const uint64_t width = le(0, 4), count = le(4, 4);
  if (width != 2 && width != 4 && width != 8) {
    *why = "intset width " + std::to_string(width) + " is not 2, 4 or 8";
    return false;
  }
  if (8 + count * width != blob.size()) {
    *why = "intset of " + std::to_string(count) + " values of " + std::to_string(width) +
           " bytes does not fill its " + std::to_string(blob.size()) + " bytes";
    return false;
  }
  if (count == 0) {
    *why = "empty intset";
    return false;
  }
  const size_t first = out->size();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t u = le(8 + i * width, uint32_t(width));
    if (width < 8) {
      const uint64_t sign = uint64_t{1} << (8 * width - 1);
      if (u & sign) u |= ~((sign << 1) - 1);
    }
    const int64_t v = static_cast<int64_t>(u);
    if (out->size() > first && v <= out->back()) {
      *why = "intset values not strictly ascending";
      return false;
    }
    out->push_back(v);
  }
  return true;
}

}  // namespace shardis::core

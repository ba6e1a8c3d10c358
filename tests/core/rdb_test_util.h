// Helpers shared by the RDB codec tests.
#pragma once

#include <absl/strings/escaping.h>

#include <string>
#include <string_view>

namespace shardis::core::testing {

inline std::string Hex(std::string_view hex) {
  return absl::HexStringToBytes(absl::string_view(hex.data(), hex.size()));
}
inline std::string ToHex(std::string_view s) {
  return absl::BytesToHexString(absl::string_view(s.data(), s.size()));
}

}  // namespace shardis::core::testing

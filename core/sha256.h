// SHA-256 (FIPS 180-4), for ACL LIST's "#<hex digest>" of a password and for comparing passwords
// in constant time, as Redis does. Small and dependency-free: nothing on the data path uses it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardis::core {

std::array<uint8_t, 32> Sha256(std::string_view data);

// The digest as 64 lower-case hex characters.
std::string Sha256Hex(std::string_view data);

}  // namespace shardis::core

// SHA-1 (FIPS 180-4): the name of a Lua script in Redis (EVALSHA, SCRIPT LOAD, redis.sha1hex)
// is the SHA-1 of its body in hex. Not for security: Redis uses it as a content address.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardis::core {

std::array<uint8_t, 20> Sha1(std::string_view data);

// The digest as 40 lower-case hex characters.
std::string Sha1Hex(std::string_view data);

}  // namespace shardis::core

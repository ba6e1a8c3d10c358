// The `struct` library of Redis' Lua scripts: struct.pack(fmt, ...), struct.unpack(fmt, s [, pos])
// and struct.size(fmt), converting between Lua values and binary records (Roberto Ierusalimschy's
// lstruct 0.2 with the bounds checks Redis 7.0 added). Scripts written for Redis use it to read and
// write packed fields, so ours must give the same bytes, the same numbers and the same error
// messages, quirks included.
//
// A format is a sequence of options, each optionally followed by a count:
//   <  >  !n     little endian, big endian, align items to at most n bytes (n a power of 2,
//                default 8); the record starts native-endian with no alignment
//   x            one zero byte of padding
//   b B h H      signed/unsigned char and short (1, 2 bytes)
//   l L T        signed/unsigned long and size_t (8 bytes each, as on x86-64)
//   in In        signed/unsigned integer of n bytes, 0 <= n <= 32 (default 4)
//   f d          float, double
//   s            zero-terminated string
//   cn           n chars (default 1); c0 packs the whole string, and when unpacking takes the
//                number unpacked just before it as the length
//   ' '          ignored
// Integers travel as Lua numbers (doubles), so only 53 bits survive a round trip.
#pragma once

#include <lua.hpp>

namespace shardis::core {

// Creates the module table (pack, unpack, size), leaves it on the stack and returns 1, like a
// luaopen_* function; the caller makes it the global `struct`. The functions raise Lua errors
// (C++ exceptions in our C++ build of Lua 5.1): they must only be called by Lua (lua_pcall).
int OpenLuaStruct(lua_State* L);

}  // namespace shardis::core

// cmsgpack, the MessagePack library Redis gives its Lua scripts (lua-cmsgpack 0.4.0, built into
// Redis as deps/lua/src/lua_cmsgpack.c). Our own code with the same Lua API and the same bytes as
// Redis 7.0, because scripts store what cmsgpack.pack returns and other clients decode it:
//
//   cmsgpack.pack(v1, v2, ...)                  the encodings of every argument, concatenated
//   cmsgpack.unpack(s)                          every value in s, as multiple results
//   cmsgpack.unpack_one(s [, offset])           next_offset, value
//   cmsgpack.unpack_limit(s, limit [, offset])  next_offset, up to `limit` values
//
// next_offset is -1 once s is consumed. The table also carries _NAME, _VERSION, _COPYRIGHT and
// _DESCRIPTION as Redis' does. What Redis chooses, which we keep:
//   - a number that is an integer in [-2^63, 2^63) is packed in the smallest int/uint form; any
//     other number is a float 32 when the float holds it exactly (infinities included), else a
//     float 64;
//   - a table whose keys are exactly 1..n is an array (the empty table is an empty array), any
//     other table a map in lua_next order;
//   - tables nested deeper than 16 levels, functions, userdata and threads are packed as nil;
//   - strings use fixstr/str 8/str 16/str 32; bin and ext are never written, and unpack refuses
//     them ("Bad data format in input.") as it refuses 0xc1;
//   - uint 64 values of 2^63 and above come back negative (Redis reads them as signed 64-bit).
#pragma once

#include <lua.hpp>

namespace shardis::core {

// Creates the cmsgpack table and leaves it on the stack; returns 1 (a lua_CFunction). The caller
// decides where it lives (scripting sets it as the global `cmsgpack`).
int OpenLuaCmsgpack(lua_State* L);

}  // namespace shardis::core

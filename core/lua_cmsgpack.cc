// cmsgpack for scripts (see the header for the format choices). Two things shape this file:
//   - No frame a Lua error may unwind holds an object that owns memory (so the code does not
//     depend on how Lua raises): the pack buffer comes from the state's allocator and is freed by
//     hand, and the packer checks the stack without raising, frees the buffer, and only then
//     raises the error Redis would have raised at that point.
//   - Errors that can reach a script are Redis' own, stack overflows included: pack and unpack
//     push and check the Lua stack at the same points as Redis, so a call with thousands of
//     arguments, or input nested thousands deep, fails (or not) exactly where Redis' does, with the
//     same "stack overflow (in function ...)" text, which names Redis' C functions.
#include "core/lua_cmsgpack.h"

#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace shardis::core {

namespace {

// Redis' LUACMSGPACK_MAX_NESTING: a table this many tables deep is packed as nil. It is what stops
// a table that contains itself.
constexpr int kMaxNesting = 16;

// The labels of Redis' luaL_checkstack calls, which a script sees as "stack overflow (<label>)".
constexpr char kCheckPackArgument[] = "in function mp_check";
constexpr char kCheckIsArray[] = "in function table_is_an_array";
constexpr char kCheckPackArray[] = "in function mp_encode_lua_table_as_array";
constexpr char kCheckPackMap[] = "in function mp_encode_lua_table_as_map";
constexpr char kCheckUnpackArray[] = "in function mp_decode_to_lua_array";
constexpr char kCheckUnpackValue[] =
    "too many return values at once; use unpack_one or unpack_limit instead.";
constexpr char kCheckUnpackOffset[] = "in function mp_unpack_full";

// MessagePack type bytes that are not ranges (fixint, fixstr, fixarray, fixmap are).
enum Tag : uint8_t {
  kNil = 0xc0,
  kFalse = 0xc2,
  kTrue = 0xc3,
  kFloat32 = 0xca,
  kFloat64 = 0xcb,
  kUint8 = 0xcc,
  kUint16 = 0xcd,
  kUint32 = 0xce,
  kUint64 = 0xcf,
  kInt8 = 0xd0,
  kInt16 = 0xd1,
  kInt32 = 0xd2,
  kInt64 = 0xd3,
  kStr8 = 0xd9,
  kStr16 = 0xda,
  kStr32 = 0xdb,
  kArray16 = 0xdc,
  kArray32 = 0xdd,
  kMap16 = 0xde,
  kMap32 = 0xdf,
};

// ------------------------------------------------------------------------------------------------
// Packing.

// Encodes Lua values into one growing buffer. Trivially destructible on purpose (see the top of
// the file): the owner calls Free() on every path that does not raise a Lua error itself.
class Packer {
 public:
  explicit Packer(lua_State* L) : L_(L) { alloc_ = lua_getallocf(L, &alloc_ud_); }

  // Packs the value on top of the stack and pops it. After a failure (see failed()) it stops at
  // once and leaves the stack as it is: the caller is about to raise an error.
  void PackTop(int level);

  // lua_checkstack that records, instead of raising, which of Redis' checks failed.
  bool CheckStack(int slots, const char* label) {
    if (lua_checkstack(L_, slots)) return true;
    stack_overflow_ = label;
    return false;
  }

  bool failed() const { return stack_overflow_ != nullptr || out_of_memory_; }
  const char* stack_overflow() const { return stack_overflow_; }
  bool out_of_memory() const { return out_of_memory_; }

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  void Clear() { size_ = 0; }  // keeps the memory for the next argument
  void Free() {
    alloc_(alloc_ud_, data_, capacity_, 0);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

 private:
  void Put(const void* bytes, size_t n);
  void PutByte(uint8_t b) { Put(&b, 1); }
  // The low `bytes` bytes of v, most significant first (MessagePack is big-endian throughout).
  void PutBigEndian(uint64_t v, int bytes);
  void PutNumber(lua_Number n);
  void PutInteger(int64_t n);
  void PutDouble(double d);
  void PutString(const char* s, size_t len);
  void PutContainerHeader(uint8_t fix, uint8_t tag16, uint8_t tag32, uint64_t n);
  bool TableIsArray();
  void PutArray(int level);
  void PutMap(int level);

  lua_State* L_;
  lua_Alloc alloc_;
  void* alloc_ud_ = nullptr;
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  const char* stack_overflow_ = nullptr;
  bool out_of_memory_ = false;
};

void Packer::Put(const void* bytes, size_t n) {
  if (out_of_memory_ || n == 0) return;
  if (capacity_ - size_ < n) {
    // Doubling keeps appends linear; the state's allocator counts the memory as the script's.
    if (size_ + n < size_ || size_ + n > SIZE_MAX / 2) {
      out_of_memory_ = true;
      return;
    }
    const size_t new_capacity = (size_ + n) * 2;
    void* grown = alloc_(alloc_ud_, data_, capacity_, new_capacity);
    if (grown == nullptr) {
      out_of_memory_ = true;
      return;
    }
    data_ = static_cast<char*>(grown);
    capacity_ = new_capacity;
  }
  std::memcpy(data_ + size_, bytes, n);
  size_ += n;
}

void Packer::PutBigEndian(uint64_t v, int bytes) {
  uint8_t out[8];
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
  Put(out, bytes);
}

void Packer::PutInteger(int64_t n) {
  if (n >= 0) {
    if (n <= 0x7f) {
      PutByte(static_cast<uint8_t>(n));  // positive fixint
    } else if (n <= 0xff) {
      PutByte(kUint8);
      PutBigEndian(n, 1);
    } else if (n <= 0xffff) {
      PutByte(kUint16);
      PutBigEndian(n, 2);
    } else if (n <= 0xffffffff) {
      PutByte(kUint32);
      PutBigEndian(n, 4);
    } else {
      PutByte(kUint64);
      PutBigEndian(n, 8);
    }
  } else {
    const auto bits = static_cast<uint64_t>(n);  // two's complement, so the low bytes are the form
    if (n >= -32) {
      PutByte(static_cast<uint8_t>(bits));  // negative fixint, 0xe0..0xff
    } else if (n >= INT8_MIN) {
      PutByte(kInt8);
      PutBigEndian(bits, 1);
    } else if (n >= INT16_MIN) {
      PutByte(kInt16);
      PutBigEndian(bits, 2);
    } else if (n >= INT32_MIN) {
      PutByte(kInt32);
      PutBigEndian(bits, 4);
    } else {
      PutByte(kInt64);
      PutBigEndian(bits, 8);
    }
  }
}

void Packer::PutNumber(lua_Number n) {
  // Lua 5.1 numbers are all doubles. Redis packs one as an integer when casting it to int64_t and
  // back gives it again; on x86-64 an out-of-range cast yields INT64_MIN, so that is "integral and
  // in [-2^63, 2^63)". Written out here, since the cast itself is undefined out of range.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (n >= -kTwoTo63 && n < kTwoTo63 && std::trunc(n) == n) {
    PutInteger(static_cast<int64_t>(n));
  } else {
    PutDouble(n);
  }
}

void Packer::PutDouble(double d) {
  // Redis writes a float 32 when double -> float -> double gives d back. A finite d beyond
  // FLT_MAX never does (it becomes FLT_MAX or inf), infinities always do, NaN never does (NaN !=
  // NaN, so NaN goes out as a float 64 with its bits as they are). Checked before the narrowing
  // cast, which is undefined out of range.
  const bool exact_as_float =
      std::isinf(d) || (std::fabs(d) <= FLT_MAX && static_cast<double>(static_cast<float>(d)) == d);
  if (exact_as_float) {
    PutByte(kFloat32);
    PutBigEndian(std::bit_cast<uint32_t>(static_cast<float>(d)), 4);
  } else {
    PutByte(kFloat64);
    PutBigEndian(std::bit_cast<uint64_t>(d), 8);
  }
}

void Packer::PutString(const char* s, size_t len) {
  if (len < 32) {
    PutByte(static_cast<uint8_t>(0xa0 | len));  // fixstr
  } else if (len <= 0xff) {
    PutByte(kStr8);
    PutBigEndian(len, 1);
  } else if (len <= 0xffff) {
    PutByte(kStr16);
    PutBigEndian(len, 2);
  } else {
    PutByte(kStr32);
    PutBigEndian(len, 4);  // like Redis, only the low 32 bits of a 4 GiB+ length
  }
  Put(s, len);
}

// Arrays: fix 0x90, then 0xdc, 0xdd. Maps: fix 0x80, then 0xde, 0xdf.
void Packer::PutContainerHeader(uint8_t fix, uint8_t tag16, uint8_t tag32, uint64_t n) {
  if (n <= 15) {
    PutByte(static_cast<uint8_t>(fix | n));
  } else if (n <= 0xffff) {
    PutByte(tag16);
    PutBigEndian(n, 2);
  } else {
    PutByte(tag32);
    PutBigEndian(n, 4);
  }
}

// True when the keys of the table on top are exactly 1..n (the empty table included). Redis'
// test: every key is a number that converts to a positive int exactly, and the largest equals the
// count; since keys are distinct, that means no holes. Leaves the stack as it found it.
bool Packer::TableIsArray() {
  const int top = lua_gettop(L_);
  if (!CheckStack(2, kCheckIsArray)) return false;
  bool all_indexes = true;
  lua_Number max_key = 0;
  lua_Number count = 0;
  lua_pushnil(L_);
  while (lua_next(L_, -2) != 0) {
    lua_pop(L_, 1);  // the value; the key stays for lua_next
    if (lua_type(L_, -1) != LUA_TNUMBER) {
      all_indexes = false;
      break;
    }
    const lua_Number key = lua_tonumber(L_, -1);
    if (!(key >= 1 && key <= INT_MAX && std::trunc(key) == key)) {
      all_indexes = false;
      break;
    }
    if (key > max_key) max_key = key;
    ++count;
  }
  lua_settop(L_, top);
  return all_indexes && max_key == count;
}

void Packer::PutArray(int level) {
  // With keys exactly 1..n the table has one border, so lua_objlen is n.
  const size_t len = lua_objlen(L_, -1);
  PutContainerHeader(0x90, kArray16, kArray32, len);
  if (!CheckStack(1, kCheckPackArray)) return;
  for (size_t i = 1; i <= len; ++i) {
    // Raw, where Redis uses lua_gettable: every key is present, so no __index could run anyway.
    lua_rawgeti(L_, -1, static_cast<int>(i));
    PackTop(level + 1);
    if (failed()) return;
  }
}

void Packer::PutMap(int level) {
  if (!CheckStack(3, kCheckPackMap)) return;
  // The header comes first, so the entries are counted in a pass of their own.
  size_t count = 0;
  lua_pushnil(L_);
  while (lua_next(L_, -2) != 0) {
    lua_pop(L_, 1);
    ++count;
  }
  PutContainerHeader(0x80, kMap16, kMap32, count);
  lua_pushnil(L_);
  while (lua_next(L_, -2) != 0) {
    lua_pushvalue(L_, -2);  // pack a copy of the key: lua_next needs the original
    PackTop(level + 1);
    if (failed()) return;
    PackTop(level + 1);  // the value
    if (failed()) return;
  }
}

void Packer::PackTop(int level) {
  int type = lua_type(L_, -1);
  if (type == LUA_TTABLE && level == kMaxNesting) type = LUA_TNIL;
  switch (type) {
    case LUA_TSTRING: {
      size_t len;
      const char* s = lua_tolstring(L_, -1, &len);
      PutString(s, len);
      break;
    }
    case LUA_TBOOLEAN:
      PutByte(lua_toboolean(L_, -1) ? kTrue : kFalse);
      break;
    case LUA_TNUMBER:
      PutNumber(lua_tonumber(L_, -1));
      break;
    case LUA_TTABLE: {
      const bool is_array = TableIsArray();
      if (failed()) return;
      if (is_array) {
        PutArray(level);
      } else {
        PutMap(level);
      }
      if (failed()) return;
      break;
    }
    default:  // nil, and what MessagePack cannot carry: functions, userdata, threads
      PutByte(kNil);
      break;
  }
  lua_pop(L_, 1);
}

int Pack(lua_State* L) {
  const int nargs = lua_gettop(L);
  if (nargs == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
  if (!lua_checkstack(L, nargs)) {
    return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
  }
  // Each argument's bytes are pushed as a string and all are concatenated at the end: the stack
  // then grows as Redis' does, which decides where a call with thousands of arguments overflows.
  Packer packer(L);
  for (int i = 1; i <= nargs; ++i) {
    if (!packer.CheckStack(1, kCheckPackArgument)) break;
    lua_pushvalue(L, i);
    packer.PackTop(0);
    if (packer.failed()) break;
    // Only running out of memory can raise here; the buffer is then lost, as it is in Redis.
    lua_pushlstring(L, packer.data(), packer.size());
    packer.Clear();
  }
  const char* stack_overflow = packer.stack_overflow();
  const bool out_of_memory = packer.out_of_memory();
  packer.Free();
  if (stack_overflow != nullptr) return luaL_error(L, "stack overflow (%s)", stack_overflow);
  if (out_of_memory) {
    lua_pushliteral(L, "not enough memory");
    return lua_error(L);
  }
  lua_concat(L, nargs);
  return 1;
}

// ------------------------------------------------------------------------------------------------
// Unpacking. Nothing here owns memory, so Lua errors (luaL_checkstack, "table index is nil" from
// a map with a nil or NaN key) may be raised anywhere.

enum class DecodeError { kNone, kMissingBytes, kBadFormat };

struct Cursor {
  const uint8_t* p;
  size_t left;
  DecodeError error = DecodeError::kNone;

  bool Need(size_t n) {
    if (left >= n) return true;
    error = DecodeError::kMissingBytes;
    return false;
  }
  void Skip(size_t n) {
    p += n;
    left -= n;
  }
  // Reads the tag byte and the big-endian `bytes`-byte number after it, and moves past both.
  bool TakeTagAndNumber(int bytes, uint64_t* v) {
    if (!Need(1 + bytes)) return false;
    *v = 0;
    for (int i = 1; i <= bytes; ++i) *v = (*v << 8) | p[i];
    Skip(1 + bytes);
    return true;
  }
};

// Every MessagePack integer becomes a Lua number (a double). A uint 64 goes through int64_t first,
// as Redis pushes it with lua_pushinteger: 2^63 and above come back negative.
void PushInteger(lua_State* L, int64_t v) { lua_pushnumber(L, static_cast<lua_Number>(v)); }

void DecodeValue(lua_State* L, Cursor& in);

// Array and map entries go in one by one, keys as numbers, as Redis inserts them: a table filled
// the same way iterates the same way, so unpack then pack gives Redis' bytes back.
void DecodeArray(lua_State* L, Cursor& in, uint64_t len) {
  lua_newtable(L);
  luaL_checkstack(L, 1, kCheckUnpackArray);
  for (uint64_t i = 1; i <= len; ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(i));
    DecodeValue(L, in);
    if (in.error != DecodeError::kNone) return;
    lua_rawset(L, -3);  // a nil element leaves a hole, as in Redis
  }
}

void DecodeMap(lua_State* L, Cursor& in, uint64_t len) {
  lua_newtable(L);
  for (uint64_t i = 0; i < len; ++i) {
    DecodeValue(L, in);  // key
    if (in.error != DecodeError::kNone) return;
    DecodeValue(L, in);  // value
    if (in.error != DecodeError::kNone) return;
    lua_rawset(L, -3);  // raises "table index is nil" / "table index is NaN", as Redis' does
  }
}

void DecodeString(lua_State* L, Cursor& in, uint64_t len) {
  if (!in.Need(len)) return;
  lua_pushlstring(L, reinterpret_cast<const char*>(in.p), len);
  in.Skip(len);
}

// Decodes one value and pushes it. On bad input sets in.error; what was pushed is then garbage.
void DecodeValue(lua_State* L, Cursor& in) {
  if (!in.Need(1)) return;
  // Each value may stay on the stack (unpack returns them all), so Redis checks for room per value.
  luaL_checkstack(L, 1, kCheckUnpackValue);
  const uint8_t tag = in.p[0];
  uint64_t v;
  if (tag <= 0x7f) {  // positive fixint
    PushInteger(L, tag);
    in.Skip(1);
    return;
  }
  if (tag >= 0xe0) {  // negative fixint
    PushInteger(L, static_cast<int8_t>(tag));
    in.Skip(1);
    return;
  }
  switch (tag & 0xe0) {
    case 0xa0:  // fixstr
      in.Skip(1);
      DecodeString(L, in, tag & 0x1f);
      return;
    case 0x80:  // fixmap 0x80..0x8f, fixarray 0x90..0x9f
      in.Skip(1);
      if (tag & 0x10) {
        DecodeArray(L, in, tag & 0x0f);
      } else {
        DecodeMap(L, in, tag & 0x0f);
      }
      return;
  }
  switch (tag) {
    case kNil:
      lua_pushnil(L);
      in.Skip(1);
      return;
    case kFalse:
    case kTrue:
      lua_pushboolean(L, tag == kTrue);
      in.Skip(1);
      return;
    case kUint8:
      if (in.TakeTagAndNumber(1, &v)) PushInteger(L, static_cast<int64_t>(v));
      return;
    case kUint16:
      if (in.TakeTagAndNumber(2, &v)) PushInteger(L, static_cast<int64_t>(v));
      return;
    case kUint32:
      if (in.TakeTagAndNumber(4, &v)) PushInteger(L, static_cast<int64_t>(v));
      return;
    case kUint64:
    case kInt64:
      if (in.TakeTagAndNumber(8, &v)) PushInteger(L, static_cast<int64_t>(v));
      return;
    case kInt8:
      if (in.TakeTagAndNumber(1, &v)) PushInteger(L, static_cast<int8_t>(v));
      return;
    case kInt16:
      if (in.TakeTagAndNumber(2, &v)) PushInteger(L, static_cast<int16_t>(v));
      return;
    case kInt32:
      if (in.TakeTagAndNumber(4, &v)) PushInteger(L, static_cast<int32_t>(v));
      return;
    case kFloat32:
      if (in.TakeTagAndNumber(4, &v)) {
        lua_pushnumber(L, std::bit_cast<float>(static_cast<uint32_t>(v)));
      }
      return;
    case kFloat64:
      if (in.TakeTagAndNumber(8, &v)) lua_pushnumber(L, std::bit_cast<double>(v));
      return;
    case kStr8:
      if (in.TakeTagAndNumber(1, &v)) DecodeString(L, in, v);
      return;
    case kStr16:
      if (in.TakeTagAndNumber(2, &v)) DecodeString(L, in, v);
      return;
    case kStr32:
      if (in.TakeTagAndNumber(4, &v)) DecodeString(L, in, v);
      return;
    case kArray16:
      if (in.TakeTagAndNumber(2, &v)) DecodeArray(L, in, v);
      return;
    case kArray32:
      if (in.TakeTagAndNumber(4, &v)) DecodeArray(L, in, v);
      return;
    case kMap16:
      if (in.TakeTagAndNumber(2, &v)) DecodeMap(L, in, v);
      return;
    case kMap32:
      if (in.TakeTagAndNumber(4, &v)) DecodeMap(L, in, v);
      return;
    default:  // 0xc1, and bin 8/16/32, ext, fixext: lua-cmsgpack 0.4.0 reads none of them
      in.error = DecodeError::kBadFormat;
      return;
  }
}

// The common body of the unpack functions; the string is argument 1 and the only one left.
// limit == 0 && offset == 0 means "everything, and no offset in front" (plain unpack, but also
// unpack_limit(s, 0), as in Redis).
int UnpackValues(lua_State* L, lua_Integer limit, lua_Integer offset) {
  size_t len;
  const char* s = luaL_checklstring(L, 1, &len);
  if (offset < 0 || limit < 0) {
    // Redis prints the input's length where the message says limit; kept, as scripts see it.
    return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                      static_cast<int>(offset), static_cast<int>(len));
  }
  if (static_cast<size_t>(offset) > len) {
    return luaL_error(L, "Start offset %d greater than input length %d.", static_cast<int>(offset),
                      static_cast<int>(len));
  }
  const bool everything = limit == 0 && offset == 0;
  if (everything) limit = INT_MAX;

  Cursor in{reinterpret_cast<const uint8_t*>(s) + offset, len - static_cast<size_t>(offset)};
  int count = 0;
  for (; in.left > 0 && count < limit; ++count) {
    DecodeValue(L, in);
    if (in.error == DecodeError::kMissingBytes) return luaL_error(L, "Missing bytes in input.");
    if (in.error == DecodeError::kBadFormat) return luaL_error(L, "Bad data format in input.");
  }
  if (everything) return count;

  luaL_checkstack(L, 1, kCheckUnpackOffset);
  lua_pushinteger(L, in.left == 0 ? -1 : static_cast<lua_Integer>(len - in.left));
  lua_insert(L, 2);  // the offset goes before the values
  return count + 1;
}

// Drops the arguments after the string, once they are read.
void KeepOnlyFirstArgument(lua_State* L) {
  if (lua_gettop(L) > 1) lua_settop(L, 1);
}

int Unpack(lua_State* L) { return UnpackValues(L, 0, 0); }

int UnpackOne(lua_State* L) {
  const lua_Integer offset = luaL_optinteger(L, 2, 0);
  KeepOnlyFirstArgument(L);
  return UnpackValues(L, 1, offset);
}

int UnpackLimit(lua_State* L) {
  const lua_Integer limit = luaL_checkinteger(L, 2);
  const lua_Integer offset = luaL_optinteger(L, 3, 0);
  KeepOnlyFirstArgument(L);
  return UnpackValues(L, limit, offset);
}

}  // namespace

int OpenLuaCmsgpack(lua_State* L) {
  static constexpr luaL_Reg kFunctions[] = {
      {"pack", Pack},
      {"unpack", Unpack},
      {"unpack_one", UnpackOne},
      {"unpack_limit", UnpackLimit},
  };
  lua_newtable(L);
  for (const luaL_Reg& f : kFunctions) {
    lua_pushcfunction(L, f.func);
    lua_setfield(L, -2, f.name);
  }
  // Redis' metadata fields (lua-cmsgpack 0.4.0), which scripts can read.
  lua_pushliteral(L, "cmsgpack");
  lua_setfield(L, -2, "_NAME");
  lua_pushliteral(L, "lua-cmsgpack 0.4.0");
  lua_setfield(L, -2, "_VERSION");
  lua_pushliteral(L, "Copyright (C) 2012, Salvatore Sanfilippo");
  lua_setfield(L, -2, "_COPYRIGHT");
  lua_pushliteral(L, "MessagePack C implementation for Lua");
  lua_setfield(L, -2, "_DESCRIPTION");
  return 1;
}

}  // namespace shardis::core

// Redis' `struct` Lua library (the format is described in lua_struct.h). Written from what Redis
// 7.0's deps/lua/src/lua_struct.c does and checked byte for byte against redis-server 7.0.15,
// including what it does by accident: C casts of NaN and out-of-range numbers, over-wide shifts,
// an argument number off by one. Each such place says so, so that nobody "fixes" it.
//
// The result grows in a luaL_Buffer and items sit in fixed arrays: nothing here needs a
// destructor when a Lua error unwinds through these functions.
#include "core/lua_struct.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace shardis::core {

namespace {

// Integer options may be up to this many bytes wide (Redis' MAXINTSIZE); past 8 bytes only the
// low 64 bits carry the value.
constexpr int kMaxIntegerSize = 32;

// The C types' sizes as Redis has them on x86-64 and arm64 (LP64), fixed here so that the bytes
// do not depend on where shardis is built.
constexpr size_t kShortSize = 2;
constexpr int kIntSize = 4;
constexpr size_t kLongSize = 8;
constexpr size_t kSizeTSize = 8;

// What '!' without a count means: Redis takes the larger of sizeof(int) and the padding a C struct
// puts before a double, 8 on those platforms.
constexpr int kDefaultMaxAlignment = 8;

// Floats are packed as their IEEE 754 bits; static_cast<float> rounds to nearest and turns
// out-of-range doubles into infinities, as the C cast in Redis does.
static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4);
static_assert(std::numeric_limits<double>::is_iec559 && sizeof(double) == 8);

constexpr uint64_t kTopBit = uint64_t{1} << 63;

// A format being read: the next character, and the byte order and alignment limit that its
// control options have chosen so far. A record starts native-endian and unaligned.
struct Format {
  const char* next;
  bool little_endian = std::endian::native == std::endian::little;
  int max_alignment = 1;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// isalnum() in the C locale, which is the one Redis runs Lua in.
bool IsAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The decimal count after an option ("i2", "c10", "!4"), or `absent` when none follows.
int ReadCount(lua_State* L, Format* format, int absent) {
  if (!IsDigit(*format->next)) return absent;
  int count = 0;
  do {
    const int digit = *format->next++ - '0';
    if (count > (INT_MAX - digit) / 10) luaL_error(L, "integral size overflow");
    count = count * 10 + digit;
  } while (IsDigit(*format->next));
  return count;
}

// Bytes taken by the item of `option`, reading its count: 0 for control options, for 's' (its
// length depends on the data) and for c0.
size_t ItemSize(lua_State* L, char option, Format* format) {
  switch (option) {
    case 'b': case 'B': case 'x': return 1;
    case 'h': case 'H': return kShortSize;
    case 'l': case 'L': return kLongSize;
    case 'T': return kSizeTSize;
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'c': return ReadCount(L, format, 1);
    case 'i': case 'I': {
      const int size = ReadCount(L, format, kIntSize);
      if (size > kMaxIntegerSize) {
        luaL_error(L, "integral size %d is larger than limit of %d", size, kMaxIntegerSize);
      }
      return size;
    }
    default: return 0;
  }
}

// Zero bytes to put before an item of `size` bytes at `offset`: items align to their size, capped
// by '!'; chars and zero-size items do not align. The mask is size - 1 even when the size is not a
// power of two (i3, i6, i12 under a large '!'), which pads oddly, but those are Redis' bytes.
size_t PaddingBefore(size_t offset, char option, size_t size, const Format& format) {
  if (size == 0 || option == 'c') return 0;
  const size_t align = std::min(size, static_cast<size_t>(format.max_alignment));
  return (align - (offset & (align - 1))) & (align - 1);
}

// Applies the options that change how later items are laid out; any other character that got
// here is not an option at all.
void ApplyControlOption(lua_State* L, char option, Format* format) {
  switch (option) {
    case ' ': return;
    case '<': format->little_endian = true; return;
    case '>': format->little_endian = false; return;
    case '!': {
      const int alignment = ReadCount(L, format, kDefaultMaxAlignment);
      if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
        luaL_error(L, "alignment %d is not a power of 2", alignment);
      }
      format->max_alignment = alignment;
      return;
    }
    default:
      luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", option));
  }
}

// Redis turns a Lua number into the integer it packs with C casts, which are undefined for NaN and
// for values out of range; scripts get what x86-64 gives, spelled out here. cvttsd2si truncates
// toward zero and yields 0x8000000000000000 for NaN and anything outside int64_t.
uint64_t TruncateLikeX86(double n) {
  if (n >= -0x1p63 && n < 0x1p63) return static_cast<uint64_t>(static_cast<int64_t>(n));
  return kTopBit;
}

// A cast to uint64_t compiles (gcc, x86-64) to: below 2^63, or NaN, convert as signed; otherwise
// subtract 2^63, convert, and flip the top bit back, so that 2^64 and beyond (and +inf) give 0.
uint64_t TruncateUnsignedLikeX86(double n) {
  if (!(n >= 0x1p63)) return TruncateLikeX86(n);
  return TruncateLikeX86(n - 0x1p63) ^ kTopBit;
}

// The 64 bits an integer option packs: negative numbers go through long, others through unsigned
// long, so -1 and 2^64-1 both give all ones.
uint64_t IntegerBits(double n) { return n < 0 ? TruncateLikeX86(n) : TruncateUnsignedLikeX86(n); }

// Writes the low `size` bytes of `value` in the chosen order; bytes past the 8th are zero, so a
// negative number is not sign-extended past 64 bits (Redis' i16 of -1 is 8 0xff and 8 zeros).
void StoreInteger(uint64_t value, size_t size, bool little_endian, char* out) {
  for (size_t i = 0; i < size; ++i) {  // i counts from the least significant byte
    out[little_endian ? i : size - 1 - i] = i < 8 ? static_cast<char>(value >> (8 * i)) : 0;
  }
}

// Reads an integer of `size` bytes; past 8 bytes only the least significant 8 count.
uint64_t LoadInteger(const char* in, size_t size, bool little_endian) {
  uint64_t value = 0;
  for (size_t i = 0; i < size && i < 8; ++i) {
    const auto byte = static_cast<unsigned char>(in[little_endian ? i : size - 1 - i]);
    value |= uint64_t{byte} << (8 * i);
  }
  return value;
}

// The Lua number of an unpacked integer. A signed one is sign-extended from bit size*8-1 by OR-ing
// in a mask shifted that far; Redis shifts a 64-bit mask, which x86 does modulo 64, so i0 and
// sizes past 8 extend from bit (size*8-1) % 64: i9 from bit 7, i12 from bit 31, i16 from bit 63.
double IntegerNumber(uint64_t value, size_t size, bool is_signed) {
  if (!is_signed) return static_cast<double>(value);
  const uint64_t sign_and_above = ~uint64_t{0} << ((size * 8 - 1) & 63);
  if (value & sign_and_above) value |= sign_and_above;
  return static_cast<double>(static_cast<int64_t>(value));
}

// struct.pack(fmt, ...): the values as one string.
int StructPack(lua_State* L) {
  Format format{luaL_checkstring(L, 1)};
  int arg = 2;
  size_t packed = 0;  // bytes so far, which alignment is relative to
  // A nil between the arguments and whatever the buffer pushes: reading one argument past the
  // last finds it ("number expected, got nil", as in Redis) and never a piece of the result.
  lua_pushnil(L);
  luaL_Buffer out;
  luaL_buffinit(L, &out);
  while (*format.next != '\0') {  // a format ends at its first zero byte, as a C string
    const char option = *format.next++;
    size_t size = ItemSize(L, option, &format);
    const size_t padding = PaddingBefore(packed, option, size, format);
    for (size_t i = 0; i < padding; ++i) luaL_addchar(&out, '\0');
    packed += padding;
    switch (option) {
      case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I': {
        char bytes[kMaxIntegerSize];
        StoreInteger(IntegerBits(luaL_checknumber(L, arg++)), size, format.little_endian, bytes);
        luaL_addlstring(&out, bytes, size);
        break;
      }
      case 'x':
        luaL_addchar(&out, '\0');
        break;
      case 'f': {
        const auto value = static_cast<float>(luaL_checknumber(L, arg++));
        char bytes[sizeof(float)];
        StoreInteger(std::bit_cast<uint32_t>(value), sizeof(bytes), format.little_endian, bytes);
        luaL_addlstring(&out, bytes, sizeof(bytes));
        break;
      }
      case 'd': {
        const double value = luaL_checknumber(L, arg++);
        char bytes[sizeof(double)];
        StoreInteger(std::bit_cast<uint64_t>(value), sizeof(bytes), format.little_endian, bytes);
        luaL_addlstring(&out, bytes, sizeof(bytes));
        break;
      }
      case 'c': case 's': {
        size_t length;
        const char* s = luaL_checklstring(L, arg++, &length);
        if (size == 0) size = length;  // c0 and s take the whole string
        // `arg` already names the next argument: Redis reports that one, and so do we.
        luaL_argcheck(L, length >= size, arg, "string too short");
        luaL_addlstring(&out, s, size);
        if (option == 's') {
          luaL_addchar(&out, '\0');
          ++size;
        }
        break;
      }
      default:
        ApplyControlOption(L, option, &format);
    }
    packed += size;
  }
  luaL_pushresult(&out);
  return 1;
}

// struct.unpack(fmt, s [, pos]): the values read from s at 1-based pos, then the position after
// them.
int StructUnpack(lua_State* L) {
  Format format{luaL_checkstring(L, 1)};
  size_t data_size;
  const char* data = luaL_checklstring(L, 2, &data_size);
  // Redis keeps the position in a size_t, so a negative one passes this check as a huge offset;
  // the bounds check below then refuses it, unless the format is empty and it just comes back.
  auto pos = static_cast<size_t>(luaL_optinteger(L, 3, 1));
  luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
  --pos;  // 0-based from here on
  int results = 0;
  while (*format.next != '\0') {
    const char option = *format.next++;
    size_t size = ItemSize(L, option, &format);
    pos += PaddingBefore(pos, option, size, format);
    // Checked for every option, control ones too: '>' at a position past the end is refused.
    luaL_argcheck(L, size <= data_size && pos <= data_size - size, 2, "data string too short");
    luaL_checkstack(L, 2, "too many results");  // this item, and the position at the end
    switch (option) {
      case 'b': case 'B': case 'h': case 'H': case 'l': case 'L': case 'T': case 'i': case 'I': {
        const bool is_signed = option >= 'a' && option <= 'z';
        const uint64_t value = LoadInteger(data + pos, size, format.little_endian);
        lua_pushnumber(L, IntegerNumber(value, size, is_signed));
        ++results;
        break;
      }
      case 'x':
        break;
      case 'f': {
        const uint64_t bits = LoadInteger(data + pos, size, format.little_endian);
        lua_pushnumber(L, std::bit_cast<float>(static_cast<uint32_t>(bits)));
        ++results;
        break;
      }
      case 'd': {
        const uint64_t bits = LoadInteger(data + pos, size, format.little_endian);
        lua_pushnumber(L, std::bit_cast<double>(bits));
        ++results;
        break;
      }
      case 'c': {
        if (size == 0) {
          // c0: the previous result is the length and gives way to the chars. lua_isnumber also
          // takes a string that reads as a number, so "c2c0" works on "03abc".
          if (results == 0 || !lua_isnumber(L, -1)) {
            luaL_error(L, "format 'c0' needs a previous size");
          }
          size = TruncateUnsignedLikeX86(lua_tonumber(L, -1));
          lua_pop(L, 1);
          --results;
          luaL_argcheck(L, size <= data_size && pos <= data_size - size, 2,
                        "data string too short");
        }
        lua_pushlstring(L, data + pos, size);
        ++results;
        break;
      }
      case 's': {
        const void* end = std::memchr(data + pos, '\0', data_size - pos);
        if (end == nullptr) luaL_error(L, "unfinished string in data");
        const auto length = static_cast<size_t>(static_cast<const char*>(end) - (data + pos));
        lua_pushlstring(L, data + pos, length);
        ++results;
        size = length + 1;
        break;
      }
      default:
        ApplyControlOption(L, option, &format);
    }
    pos += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(pos + 1));
  return results + 1;
}

// struct.size(fmt): the bytes pack(fmt, ...) produces, for formats without s or c0.
int Size(lua_State* L) {
  Format format{luaL_checkstring(L, 1)};
  size_t size_so_far = 0;
  while (*format.next != '\0') {
    const char option = *format.next++;
    const size_t size = ItemSize(L, option, &format);
    size_so_far += PaddingBefore(size_so_far, option, size, format);
    if (option == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
    if (option == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
    // Redis hands only non-alphanumerics to the control options here, so an unknown letter or a
    // stray digit counts as a zero-size item (size("x4zn") is 1) where pack and unpack refuse it.
    if (!IsAlnum(option)) ApplyControlOption(L, option, &format);
    size_so_far += size;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(size_so_far));
  return 1;
}

constexpr luaL_Reg kFunctions[] = {
    {"pack", StructPack},
    {"unpack", StructUnpack},
    {"size", Size},
    {nullptr, nullptr},
};

}  // namespace

int OpenLuaStruct(lua_State* L) {
  lua_createtable(L, 0, 3);
  luaL_register(L, nullptr, kFunctions);  // a null name fills the table on top of the stack
  return 1;
}

}  // namespace shardis::core

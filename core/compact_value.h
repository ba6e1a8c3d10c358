// CompactValue: the 16-byte cell that holds every key and every value of a shard's table (a table
// slot is a key cell plus a value cell: 32 bytes), and HashBytes, the one hash of key bytes.
//
// A string has exactly one encoding, so equal strings have equal encodings (FromKey is the one
// exception: it never makes an int):
//   - the canonical decimal form of an int64 (what ParseInt64 accepts: "0", "-12", never "007",
//     "+1", "-0") is kept as an int64; GetString formats it back to the same bytes;
//   - any other string of up to 15 bytes is kept inline;
//   - any other string of 16 or 17 bytes that are all 7-bit ASCII (< 0x80) is kept inline, packed
//     7 bits per byte (17 * 7 = 119 bits fit in the 120 bits below the meta byte): keys like
//     "key:000000000042" or "user:1234567890ab" need no heap block;
//   - any other string lives in one heap block of exactly its size (no header, no NUL; mimalloc
//     rounds it to its size class), taken from the thread's ShardHeap; the cell holds the pointer
//     and the length. Only Append and SetRange leave spare room, to grow geometrically.
// Other types (list, hash, set, zset, stream) are an object pointer plus the type. The cell owns
// the object: destroying, resetting or overwriting the cell frees it with DestroyObject
// (core/value_object.h), which dispatches on the type to the data type's own code.
//
// Layout (little-endian; w0 = bytes 0..7, w1 = bytes 8..15):
//
//   byte 15, the meta byte:  bits 0..4  code:  0..15 inline string of that length
//                                              16    int64          (kIntCode)
//                                              17    heap string    (kHeapCode)
//                                              18    object         (kObjectCode)
//                                              19    packed, 16 bytes (kPacked16Code)
//                                              20    packed, 17 bytes (kPacked17Code)
//                                              21..31 reserved for new encodings
//                            bits 5..6  flags: two bits for the shard (kFlag0, kFlag1), e.g.
//                                              "has expiry"; never read here.
//                            bit 7      raw: a string changed in place (see raw()).
//   inline string:  bytes 0..14 the bytes, then zeros up to byte 14.
//   packed string:  byte i of the string at bits 7i..7i+6 of the 120-bit number in bytes 0..14
//                   (w0 | (w1 & (2^56-1)) << 64); the bits above the last byte are zero.
//   int64:          w0 the value (two's complement); bytes 8..14 zero.
//   heap string:    w0 the block pointer; bytes 8..14 the length (56 bits, up to 2^56-1).
//   object:         w0 the object pointer; byte 8 the ValueType; byte 9 an 8-bit encoding the
//                   owner may use (listpack, hashtable, ...); bytes 10..14 zero.
//
// An all-zero cell is the empty string with no flags (default construction, moved-from cells).
// Flags are kept by SetString, SetInt, Append, SetRange and SetObject, travel with moves, and are
// cleared by Reset and in the moved-from cell; FromString/FromInt/FromObject start with none.
// The raw bit is set by Append, SetRange and EditBytes and cleared by every other writer; it
// travels with moves. It changes no encoding: it only remembers how the string was made.
//
// Cells are move-only. Moving steals the heap block; the destructor frees it on the current
// ShardHeap, so a cell is destroyed on the shard thread that created it (see shard_heap.h).
// Nothing points into a cell, so a table may relocate cells with memcpy.
#pragma once

#include <glog/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/number.h"
#include "core/shard_heap.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "CompactValue assumes little-endian");

namespace shardis::core {

// A fast 64-bit hash of bytes in the style of wyhash (64x64->128-bit multiply-and-fold mixing;
// the four constants are wyhash's, which is public domain). Used for table lookups and to route
// keys to shards; CompactValue::Hash() is HashBytes of the same string, whatever its encoding.
// Seeded per process (see hash_internal::Secret): the same on every shard and thread of a process,
// different in the next one, so never store a hash or send it to another process.
inline uint64_t HashBytes(std::string_view s);

// What a cell holds. Everything but kString is an object owned by the data-type code.
enum class ValueType : uint8_t {
  kString = 0,
  kList = 1,
  kHash = 2,
  kSet = 3,
  kZSet = 4,
  kStream = 5
};

class CompactValue {
 public:
  // kInline: up to 15 bytes as they are; kPacked: 16 or 17 ASCII bytes, 7 bits each.
  enum class Encoding : uint8_t { kInline, kInt, kHeap, kObject, kPacked };

  static constexpr size_t kInlineMax = 15;
  static constexpr size_t kPackedMin = 16, kPackedMax = 17;
  static constexpr size_t kMaxStringSize = (uint64_t{1} << 56) - 1;
  // GetString's scratch buffer: room for "-9223372036854775808" and for an unpacked string.
  static constexpr size_t kScratchSize = kInt64BufSize;
  static_assert(kScratchSize >= kPackedMax);
  // Flag bits for the shard's own use (see the layout above).
  static constexpr uint8_t kFlag0 = 1, kFlag1 = 2;
  static constexpr uint8_t kFlagMask = 3;

  // The empty string.
  CompactValue() noexcept = default;
  ~CompactValue() {
    if (Owns()) FreeOwned();
  }
  CompactValue(CompactValue&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
    std::memset(other.bytes_, 0, sizeof(bytes_));
  }
  CompactValue& operator=(CompactValue&& other) noexcept {
    if (this != &other) {
      if (Owns()) FreeOwned();
      std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
      std::memset(other.bytes_, 0, sizeof(bytes_));
    }
    return *this;
  }
  CompactValue(const CompactValue&) = delete;
  CompactValue& operator=(const CompactValue&) = delete;

  static CompactValue FromString(std::string_view s);
  // For table keys: the same bytes, but never encoded as an int (inline up to 15 bytes, packed
  // at 16 or 17 ASCII bytes, else on the heap). Keys are hashed and compared, never incremented, and an int would be formatted for
  // every Hash() and parsed for every EqualsString(): 4-8x slower than on bytes. (SetString on
  // such a cell encodes like a value.)
  static CompactValue FromKey(std::string_view s);
  static CompactValue FromInt(int64_t v);
  // type != kString. The cell takes ownership of obj (see DestroyObject).
  static CompactValue FromObject(ValueType type, void* obj, uint8_t encoding = 0);

  // ---- What it is.
  Encoding encoding() const;
  ValueType type() const {
    return code() == kObjectCode ? static_cast<ValueType>(static_cast<uint8_t>(bytes_[8]))
                                 : ValueType::kString;
  }
  bool IsString() const { return code() != kObjectCode; }
  // Up to 15 bytes as they are (a packed string is in the cell too, but IsPacked()).
  bool IsInline() const { return code() <= kInlineMax; }
  bool IsHeap() const { return code() == kHeapCode; }
  bool IsPacked() const { return code() == kPacked16Code || code() == kPacked17Code; }
  // For a value (not a FromKey cell): true exactly when the string is the canonical form of an
  // int64, i.e. when Redis' INCR would accept it.
  bool IsInt() const { return code() == kIntCode; }
  // Changed in place by Append, SetRange or EditBytes since it was last set as a whole: Redis'
  // "raw" encoding, which APPEND, SETRANGE, SETBIT and BITFIELD leave whatever the length or the
  // digits (dbUnshareStringValue), until a SET or INCR replaces the object (OBJECT ENCODING).
  bool raw() const { return (meta() & kRawBit) != 0; }
  // Makes a copy say raw() too (COPY, RENAME across shards: Redis keeps the object).
  void set_raw() { SetMeta(meta() | kRawBit); }

  // ---- Strings (IsString()).
  // Replaces the content (freeing a heap string or an object). Keeps the flags. A heap block is reused when the new string needs the same size class. s may
  // point into this cell's own string.
  void SetString(std::string_view s);
  void SetInt(int64_t v);
  int64_t AsInt() const {
    DCHECK(IsInt());
    return static_cast<int64_t>(Word0());
  }

  size_t StringSize() const;
  // The bytes. Inline and heap strings are views into the cell or its block (valid until the
  // cell changes or moves); an int is formatted and a packed string unpacked into scratch
  // (kScratchSize bytes).
  std::string_view GetString(char* scratch) const {
    const uint8_t c = code();
    if (c <= kInlineMax) return {bytes_, c};
    if (c == kHeapCode) return {HeapPtr(), HeapSize()};
    if (c >= kPacked16Code) return UnpackTo(scratch);
    DCHECK_EQ(c, kIntCode);
    return {scratch, FormatInt64(AsInt(), scratch)};
  }
  void AppendTo(std::string* out) const;
  std::string ToString() const;

  // Same bytes as s, without materialising the string. An object never equals a string.
  bool EqualsString(std::string_view s) const {
    const uint8_t c = code();
    if (c <= kInlineMax) return c == s.size() && (c == 0 || std::memcmp(bytes_, s.data(), c) == 0);
    if (c == kHeapCode) {
      return HeapSize() == s.size() && std::memcmp(HeapPtr(), s.data(), s.size()) == 0;
    }
    if (c >= kPacked16Code) {
      // Pack the probe and compare the 15 bytes: one encoding per string.
      uint64_t w0, w1;
      return s.size() == PackedSize(c) && Pack(s, &w0, &w1) && w0 == Word0() &&
             w1 == (Word1() & kLow56);
    }
    return c == kIntCode && EqualsInt(s);
  }
  // Same string (flags ignored); objects are equal when they are the same object.
  bool operator==(const CompactValue& other) const;

  // HashBytes(GetString(...)). Strings only.
  uint64_t Hash() const;

  // APPEND: appends s and returns the new length. A heap block grows geometrically (by half,
  // at most 1 MiB at a time) so that repeated appends are amortised O(1) per byte.
  size_t Append(std::string_view s);
  // SETRANGE: writes s at offset, zero-padding past the end; returns the new length. An empty s
  // changes nothing. The caller enforces the maximum string size.
  size_t SetRange(size_t offset, std::string_view s);
  // In-place byte edits (SETBIT, BITFIELD, PFADD on a dense HyperLogLog): makes the string at
  // least min_size bytes long (zero padded) and calls fn(char* bytes, size_t size), which may
  // modify the bytes but not the size; returns the size. A heap string of kInt64BufSize+ bytes is
  // edited in its own block (grown as SetRange grows it when min_size exceeds it); a shorter
  // result is edited on the stack and re-encoded, since it may now be an int or fit inline. The
  // caller enforces the maximum string size.
  template <typename Fn>
  size_t EditBytes(size_t min_size, Fn&& fn);

  // ---- Objects.
  // Stores an object, taking ownership (freeing the heap string or object held before). Keeps the
  // flags. type != kString.
  void SetObject(ValueType type, void* obj, uint8_t encoding = 0);
  // Gives up ownership of the object: returns it and leaves the empty string (flags kept).
  void* ReleaseObject() {
    void* obj = object();
    SetWords(0, static_cast<uint64_t>(flag_bits()) << 56);
    return obj;
  }
  void* object() const {
    DCHECK_EQ(code(), kObjectCode);
    return reinterpret_cast<void*>(Word0());
  }
  uint8_t object_encoding() const {
    DCHECK_EQ(code(), kObjectCode);
    return static_cast<uint8_t>(bytes_[9]);
  }
  void set_object_encoding(uint8_t encoding) {
    DCHECK_EQ(code(), kObjectCode);
    bytes_[9] = static_cast<char>(encoding);
  }

  // ---- Flags (kFlag0..kFlag2).
  uint8_t flags() const { return (meta() >> kFlagShift) & kFlagMask; }
  void set_flags(uint8_t flags) {
    DCHECK_EQ(flags & ~kFlagMask, 0);
    SetMeta((meta() & (kCodeMask | kRawBit)) | static_cast<uint8_t>(flags << kFlagShift));
  }
  bool HasFlag(uint8_t flag) const { return (flags() & flag) != 0; }
  void SetFlag(uint8_t flag, bool on) { set_flags(on ? (flags() | flag) : (flags() & ~flag)); }

  // ---- Memory.
  // The usable size of the heap block of a heap string (its size class), else 0. Objects account
  // for their own memory.
  size_t HeapBytes() const { return IsHeap() ? ShardHeap::UsableSize(HeapPtr()) : 0; }
  // The heap block or object this cell points to (for prefetching), or null.
  const void* HeapData() const {
    const uint8_t c = code();
    return c == kHeapCode || c == kObjectCode ? reinterpret_cast<const void*>(Word0()) : nullptr;
  }
  // Active defragmentation (core/value_defrag.h) copied the heap block or object to `p`, byte
  // for byte, and freed the old one: the cell points there now. Nothing else changes.
  void RepointHeapData(void* p) {
    DCHECK(code() == kHeapCode || code() == kObjectCode);
    SetWords(reinterpret_cast<uint64_t>(p), Word1());
  }
  // Back to the empty string with no flags, freeing a heap string or an object.
  void Reset() {
    if (Owns()) FreeOwned();
    std::memset(bytes_, 0, sizeof(bytes_));
  }

 private:
  static constexpr uint8_t kIntCode = 16, kHeapCode = 17, kObjectCode = 18;
  static constexpr uint8_t kPacked16Code = 19, kPacked17Code = 20;
  static constexpr uint64_t kLow56 = (uint64_t{1} << 56) - 1;
  static constexpr uint8_t kCodeMask = 0x1f;
  static constexpr int kFlagShift = 5;
  static constexpr uint8_t kRawBit = 0x80;
  static constexpr uint64_t kSizeMask = kMaxStringSize;  // the low 56 bits of w1

  uint8_t meta() const { return static_cast<uint8_t>(bytes_[15]); }
  uint8_t code() const { return meta() & kCodeMask; }
  // A heap string or an object: something to free.
  bool Owns() const { return code() == kHeapCode || code() == kObjectCode; }
  // The shard's flags in place, for a writer that keeps them (and drops the raw bit).
  uint8_t flag_bits() const { return meta() & (kFlagMask << kFlagShift); }
  void SetMeta(uint8_t m) { bytes_[15] = static_cast<char>(m); }

  uint64_t Word0() const {
    uint64_t w;
    std::memcpy(&w, bytes_, 8);
    return w;
  }
  uint64_t Word1() const {
    uint64_t w;
    std::memcpy(&w, bytes_ + 8, 8);
    return w;
  }
  void SetWords(uint64_t w0, uint64_t w1) {
    std::memcpy(bytes_, &w0, 8);
    std::memcpy(bytes_ + 8, &w1, 8);
  }
  char* HeapPtr() const { return reinterpret_cast<char*>(Word0()); }
  size_t HeapSize() const { return Word1() & kSizeMask; }

  // ---- The packed encoding: 16 or 17 bytes < 0x80, 7 bits each, with 64-bit shifts.
  static constexpr size_t PackedSize(uint8_t c) { return c - kPacked16Code + kPackedMin; }
  // 8 bytes < 0x80 (byte i at bits 8i..) -> 56 bits (byte i at bits 7i..): close the gaps
  // between pairs, then quads, then halves.
  static uint64_t Pack8(uint64_t x) {
    x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
    x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
    return ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
  }
  // The inverse of Pack8 (x < 2^56).
  static uint64_t Unpack8(uint64_t x) {
    x = ((x << 4) & 0x0fffffff00000000ull) | (x & 0x000000000fffffffull);
    x = ((x << 2) & 0x3fff00003fff0000ull) | (x & 0x00003fff00003fffull);
    return ((x << 1) & 0x7f007f007f007f00ull) | (x & 0x007f007f007f007full);
  }
  // Packs s when it has 16 or 17 bytes, all < 0x80: *w0 = bytes 0..7 of the cell, *w1 = bytes
  // 8..14 (meta byte zero). Reads all of s before the caller writes anything (s may be scratch).
  static bool Pack(std::string_view s, uint64_t* w0, uint64_t* w1) {
    const size_t n = s.size();
    if (n - kPackedMin > kPackedMax - kPackedMin) return false;  // unsigned: n < 16 wraps
    uint64_t a, b;
    std::memcpy(&a, s.data(), 8);
    std::memcpy(&b, s.data() + 8, 8);
    const uint64_t c = n == kPackedMax ? static_cast<uint8_t>(s[16]) : 0;
    if (((a | b | c) & 0x8080808080808080ull) != 0) return false;
    const uint64_t pb = Pack8(b);
    *w0 = Pack8(a) | (pb << 56);
    *w1 = (pb >> 8) | (c << 48);
    return true;
  }
  // Writes 17 bytes (the 17th is zero for a 16-byte string) and returns the string.
  std::string_view UnpackTo(char* scratch) const {
    const uint64_t w0 = Word0(), w1 = Word1();
    const uint64_t a = Unpack8(w0 & kLow56);
    const uint64_t b = Unpack8(((w0 >> 56) | (w1 << 8)) & kLow56);
    std::memcpy(scratch, &a, 8);
    std::memcpy(scratch + 8, &b, 8);
    scratch[16] = static_cast<char>((w1 >> 48) & 0x7f);
    return {scratch, PackedSize(code())};
  }

  // Writers of a whole encoding. They assume no heap block is held (freed or moved out).
  void InitString(std::string_view s, uint8_t flag_bits, bool allow_int = true);
  void InitInt(int64_t v, uint8_t flag_bits) {
    SetWords(static_cast<uint64_t>(v), static_cast<uint64_t>(kIntCode | flag_bits) << 56);
  }
  void InitHeap(char* p, size_t size, uint8_t flag_bits) {
    DCHECK_LE(size, kMaxStringSize);
    SetWords(reinterpret_cast<uint64_t>(p),
             (static_cast<uint64_t>(kHeapCode | flag_bits) << 56) | size);
  }

  void FreeHeap() { ShardHeap::Current()->Free(HeapPtr()); }
  // Frees what a heap string or object cell owns (Owns()). Leaves the bytes as they
  // are: the caller overwrites them.
  void FreeOwned();
  bool EqualsInt(std::string_view s) const;

  alignas(8) char bytes_[16] = {};
};

static_assert(sizeof(CompactValue) == 16);
static_assert(alignof(CompactValue) == 8);

template <typename Fn>
size_t CompactValue::EditBytes(size_t min_size, Fn&& fn) {
  DCHECK(IsString());
  if (code() == kHeapCode && HeapSize() >= kInt64BufSize && min_size <= HeapSize()) {
    fn(HeapPtr(), HeapSize());  // the common case: the bytes stay where they are
    set_raw();
    return HeapSize();
  }
  const size_t cur = StringSize();
  const size_t n = cur > min_size ? cur : min_size;
  if (n >= kInt64BufSize) {
    // Grows (zero padded) into a heap block with room to spare; n > cur here.
    SetRange(n - 1, std::string_view("\0", 1));  // raw now
    DCHECK_EQ(code(), kHeapCode);
    fn(HeapPtr(), n);
    return n;
  }
  char buf[kInt64BufSize] = {};
  char scratch[kScratchSize];
  const std::string_view s = GetString(scratch);
  if (!s.empty()) std::memcpy(buf, s.data(), s.size());
  fn(buf, n);
  char* old = code() == kHeapCode ? HeapPtr() : nullptr;
  InitString({buf, n}, flag_bits() | kRawBit);
  if (old != nullptr) ShardHeap::Current()->Free(old);
  return n;
}

// ---- HashBytes, inline: keys are short and this runs for every command.

namespace hash_internal {

inline constexpr uint64_t kP0 = 0xa0761d6478bd642full;
inline constexpr uint64_t kP1 = 0xe7037ed1a0b428dbull;
inline constexpr uint64_t kP2 = 0x8ebc6af09c88c6e3ull;
inline constexpr uint64_t kP3 = 0x589965cc75374cc3ull;

// 64x64 -> 128-bit product, folded: every input bit reaches most output bits.
constexpr uint64_t Fold(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The per-process secret that every mixing step folds in, so that a client cannot compute keys
// that collide (or that zero a multiplication and erase what came before it): the address of
// kAnchor, which ASLR places differently in each process (absl's hash seeds itself the same way),
// xored with a constant. Fixed for the life of the process and the same on every thread.
inline constexpr char kAnchor = 0;
inline constexpr uint64_t kSeed = Fold(0x5368617264697321ull /* "Shardis!" */ ^ kP0, kP1);
inline uint64_t Secret() { return kSeed ^ reinterpret_cast<uintptr_t>(&kAnchor); }

// Last step for every length: a and b hold the last (up to) 16 bytes, state the secret or what
// the longer paths made of it.
inline uint64_t Finish(uint64_t a, uint64_t b, uint64_t state, size_t n) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a ^ kP1 ^ state) * (b ^ state);
  return Fold(static_cast<uint64_t>(r) ^ kP0 ^ n, static_cast<uint64_t>(r >> 64) ^ kP1);
}

// More than 48 bytes: three independent lanes, 48 bytes per step.
uint64_t HashLong(const char* p, size_t n);

}  // namespace hash_internal

inline uint64_t HashBytes(std::string_view s) {
  using namespace hash_internal;
  const char* p = s.data();
  const size_t n = s.size();
  const uint64_t secret = Secret();
  uint64_t a, b, state = secret;
  if (n <= 16) [[likely]] {
    // Loads from both ends that overlap below 16 bytes: every byte is covered, and together
    // with the length in Finish, (a, b, n) identifies the string.
    if (n >= 8) {
      a = Load64(p);
      b = Load64(p + n - 8);
    } else if (n >= 4) {
      a = Load32(p);
      b = Load32(p + n - 4);
    } else if (n > 0) {
      a = (uint64_t{static_cast<uint8_t>(p[0])} << 16) |
          (uint64_t{static_cast<uint8_t>(p[n >> 1])} << 8) | static_cast<uint8_t>(p[n - 1]);
      b = 0;
    } else {
      a = b = 0;
    }
  } else if (n <= 48) {
    size_t i = n;
    do {
      state = Fold(Load64(p) ^ kP1 ^ secret, Load64(p + 8) ^ state);
      p += 16;
      i -= 16;
    } while (i > 16);
    // The last 16 bytes (overlapping bytes already mixed when i < 16).
    a = Load64(p + i - 16);
    b = Load64(p + i - 8);
  } else {
    return HashLong(p, n);
  }
  return Finish(a, b, state, n);
}

}  // namespace shardis::core

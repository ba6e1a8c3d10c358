#include "core/compact_value.h"

#include "core/value_object.h"

#include <algorithm>

namespace shardis::core {

namespace hash_internal {

uint64_t HashLong(const char* p, size_t n) {
  DCHECK_GT(n, 48u);
  const uint64_t secret = Secret();
  uint64_t state = secret, lane1 = secret, lane2 = secret;
  size_t i = n;
  do {
    state = Fold(Load64(p) ^ kP1 ^ secret, Load64(p + 8) ^ state);
    lane1 = Fold(Load64(p + 16) ^ kP2 ^ secret, Load64(p + 24) ^ lane1);
    lane2 = Fold(Load64(p + 32) ^ kP3 ^ secret, Load64(p + 40) ^ lane2);
    p += 48;
    i -= 48;
  } while (i > 48);
  state ^= lane1 ^ lane2;
  while (i > 16) {
    state = Fold(Load64(p) ^ kP1 ^ secret, Load64(p + 8) ^ state);
    p += 16;
    i -= 16;
  }
  return Finish(Load64(p + i - 16), Load64(p + i - 8), state, n);
}

}  // namespace hash_internal

namespace {

// The capacity given to a heap string that grows to n bytes by APPEND or SETRANGE: half again
// (at most 1 MiB more), so that a string built by appends is copied O(log n) times.
size_t GrowCapacity(size_t n) { return n + std::min<size_t>(n / 2, size_t{1} << 20); }

char* AllocateBytes(size_t n) { return static_cast<char*>(ShardHeap::Current()->Allocate(n)); }
void FreeBytes(char* p) { ShardHeap::Current()->Free(p); }

}  // namespace

// ---- Construction and assignment.

void CompactValue::InitString(std::string_view s, uint8_t flag_bits, bool allow_int) {
  DCHECK_LE(s.size(), kMaxStringSize);
  int64_t v;
  uint64_t w0, w1;
  if (allow_int && ParseInt64(s, &v)) {  // rejects anything of 21 bytes or more at once
    InitInt(v, flag_bits);
  } else if (s.size() <= kInlineMax) {
    // Through a local copy: s may be this cell's own inline bytes.
    char buf[16] = {};
    if (!s.empty()) std::memcpy(buf, s.data(), s.size());
    std::memcpy(bytes_, buf, sizeof(bytes_));
    SetMeta(static_cast<uint8_t>(s.size()) | flag_bits);
  } else if (Pack(s, &w0, &w1)) {  // 16 or 17 bytes, all ASCII
    const uint8_t c = s.size() == kPackedMin ? kPacked16Code : kPacked17Code;
    SetWords(w0, w1 | (static_cast<uint64_t>(c | flag_bits) << 56));
  } else {
    char* p = AllocateBytes(s.size());
    std::memcpy(p, s.data(), s.size());
    InitHeap(p, s.size(), flag_bits);
  }
}

CompactValue CompactValue::FromString(std::string_view s) {
  CompactValue cv;
  cv.InitString(s, 0);
  return cv;
}

CompactValue CompactValue::FromKey(std::string_view s) {
  CompactValue cv;
  cv.InitString(s, 0, /*allow_int=*/false);
  return cv;
}

CompactValue CompactValue::FromInt(int64_t v) {
  CompactValue cv;
  cv.InitInt(v, 0);
  return cv;
}

CompactValue CompactValue::FromObject(ValueType type, void* obj, uint8_t encoding) {
  CompactValue cv;
  cv.SetObject(type, obj, encoding);
  return cv;
}

void CompactValue::SetString(std::string_view s) {
  const uint8_t fb = flag_bits();
  if (code() == kObjectCode) FreeOwned();
  if (code() != kHeapCode) {
    InitString(s, fb);
    return;
  }
  char* old = HeapPtr();
  int64_t v;
  uint64_t w0, w1;
  // Overwriting a value with one of the same size class (SET over SET of similar values) keeps
  // the block: no free/malloc pair, and the memory count is unchanged. Only for a string that is
  // a heap string (not inline, not packed, not an int).
  if (s.size() > kInlineMax && ShardHeap::GoodSize(s.size()) == ShardHeap::UsableSize(old) &&
      !Pack(s, &w0, &w1) && !ParseInt64(s, &v)) {
    std::memmove(old, s.data(), s.size());
    InitHeap(old, s.size(), fb);
    return;
  }
  InitString(s, fb);  // reads s before the old block (which s may point into) is freed
  FreeBytes(old);
}

void CompactValue::SetInt(int64_t v) {
  if (code() == kObjectCode) {
    FreeOwned();
    InitInt(v, flag_bits());
    return;
  }
  char* old = code() == kHeapCode ? HeapPtr() : nullptr;
  InitInt(v, flag_bits());
  if (old != nullptr) FreeBytes(old);
}

void CompactValue::SetObject(ValueType type, void* obj, uint8_t encoding) {
  DCHECK(type != ValueType::kString) << "strings are not objects";
  if (Owns()) FreeOwned();
  const uint64_t w1 = static_cast<uint64_t>(static_cast<uint8_t>(type)) |
                      (static_cast<uint64_t>(encoding) << 8) |
                      (static_cast<uint64_t>(kObjectCode | flag_bits()) << 56);
  SetWords(reinterpret_cast<uint64_t>(obj), w1);
}

void CompactValue::FreeOwned() {
  if (code() == kHeapCode) {
    FreeHeap();
  } else {
    DCHECK_EQ(code(), kObjectCode);
    DestroyObject(type(), object(), object_encoding());
  }
}

// ---- Reading.

CompactValue::Encoding CompactValue::encoding() const {
  const uint8_t c = code();
  if (c <= kInlineMax) return Encoding::kInline;
  if (c == kIntCode) return Encoding::kInt;
  if (c == kHeapCode) return Encoding::kHeap;
  if (c >= kPacked16Code) return Encoding::kPacked;
  DCHECK_EQ(c, kObjectCode);
  return Encoding::kObject;
}

size_t CompactValue::StringSize() const {
  const uint8_t c = code();
  if (c <= kInlineMax) return c;
  if (c == kHeapCode) return HeapSize();
  if (c >= kPacked16Code) return PackedSize(c);
  char scratch[kScratchSize];
  return GetString(scratch).size();
}

void CompactValue::AppendTo(std::string* out) const {
  char scratch[kScratchSize];
  const std::string_view s = GetString(scratch);
  out->append(s.data(), s.size());
}

std::string CompactValue::ToString() const {
  char scratch[kScratchSize];
  return std::string(GetString(scratch));
}

bool CompactValue::EqualsInt(std::string_view s) const {
  int64_t v;
  return ParseInt64(s, &v) && v == AsInt();
}

bool CompactValue::operator==(const CompactValue& other) const {
  const uint8_t c = code();
  if (c != other.code()) {
    // One encoding per string, except that a FromKey cell holds as bytes what a value cell
    // holds as an int.
    if (c != kIntCode && other.code() != kIntCode) return false;
    if (!IsString() || !other.IsString()) return false;
    char scratch[kScratchSize];
    return other.EqualsString(GetString(scratch));
  }
  if (c == kHeapCode) {
    return HeapSize() == other.HeapSize() &&
           std::memcmp(HeapPtr(), other.HeapPtr(), HeapSize()) == 0;
  }
  if (c == kObjectCode) return Word0() == other.Word0() && bytes_[8] == other.bytes_[8];
  // Inline, packed and int: the 15 bytes below the meta byte, whose unused bits are zero.
  return Word0() == other.Word0() && (Word1() << 8) == (other.Word1() << 8);
}

uint64_t CompactValue::Hash() const {
  DCHECK(IsString());
  char scratch[kScratchSize];
  return HashBytes(GetString(scratch));
}

// ---- APPEND and SETRANGE.

size_t CompactValue::Append(std::string_view s) {
  DCHECK(IsString());
  if (code() == kHeapCode) {
    // A heap string has 16+ bytes, is not a canonical int, and has a byte >= 0x80 if it has 16
    // or 17 bytes, so the result is neither short, nor an int (a canonical int's 16+-byte prefix
    // would itself be one), nor packed: it stays a heap string.
    const size_t old_size = HeapSize();
    if (s.empty()) {
      set_raw();  // Redis unshares the value even to append nothing
      return old_size;
    }
    const size_t n = old_size + s.size();
    char* p = HeapPtr();
    if (n <= ShardHeap::UsableSize(p)) {
      std::memmove(p + old_size, s.data(), s.size());
    } else {
      char* grown = AllocateBytes(GrowCapacity(n));
      std::memcpy(grown, p, old_size);
      std::memcpy(grown + old_size, s.data(), s.size());  // s may point into p: copy first
      FreeBytes(p);
      p = grown;
    }
    InitHeap(p, n, flag_bits() | kRawBit);
    return n;
  }
  char scratch[kScratchSize];
  const std::string_view cur = GetString(scratch);  // inline, packed or int: at most 20 bytes
  if (s.empty()) {
    set_raw();
    return cur.size();
  }
  const size_t n = cur.size() + s.size();
  if (n < kInt64BufSize) {
    // Short result: may be inline, packed or even an int ("1" + "2").
    char buf[kInt64BufSize];
    std::memcpy(buf, cur.data(), cur.size());
    std::memcpy(buf + cur.size(), s.data(), s.size());
    InitString({buf, n}, flag_bits() | kRawBit);
    return n;
  }
  char* p = AllocateBytes(GrowCapacity(n));
  std::memcpy(p, cur.data(), cur.size());
  std::memcpy(p + cur.size(), s.data(), s.size());
  InitHeap(p, n, flag_bits() | kRawBit);
  return n;
}

size_t CompactValue::SetRange(size_t offset, std::string_view s) {
  DCHECK(IsString());
  char scratch[kScratchSize];
  const std::string_view cur = GetString(scratch);
  if (s.empty()) return cur.size();
  const size_t n = std::max(cur.size(), offset + s.size());
  const size_t gap = offset > cur.size() ? offset - cur.size() : 0;
  char* old = code() == kHeapCode ? HeapPtr() : nullptr;
  if (n < kInt64BufSize) {
    // Short result, whatever the encoding before: build it and re-encode (it may be an int or
    // packed now).
    char buf[kInt64BufSize];
    std::memcpy(buf, cur.data(), cur.size());
    std::memset(buf + cur.size(), 0, gap);
    std::memcpy(buf + offset, s.data(), s.size());
    InitString({buf, n}, flag_bits() | kRawBit);
    if (old != nullptr) FreeBytes(old);
    return n;
  }
  // 21+ bytes: a heap string.
  if (old != nullptr && n <= ShardHeap::UsableSize(old)) {
    std::memset(old + cur.size(), 0, gap);           // past the end: s is not there
    std::memmove(old + offset, s.data(), s.size());  // s may overlap the string
    InitHeap(old, n, flag_bits() | kRawBit);
    return n;
  }
  char* p = AllocateBytes(GrowCapacity(n));
  std::memcpy(p, cur.data(), cur.size());
  std::memset(p + cur.size(), 0, gap);
  std::memcpy(p + offset, s.data(), s.size());
  InitHeap(p, n, flag_bits() | kRawBit);
  if (old != nullptr) FreeBytes(old);
  return n;
}

}  // namespace shardis::core

#include "core/listpack.h"

#include <cstring>

#include "core/number.h"

namespace shardis::core {

namespace {

constexpr uint8_t kEof = 0xff;

uint32_t Load32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

size_t BacklenSize(uint64_t l) {
  return l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3 : l < 268435455 ? 4 : 5;
}

void AppendBacklen(std::string* out, uint64_t l) {
  const size_t n = BacklenSize(l);
  // Highest 7-bit group first; every byte after the first has bit 7 set, so that reading from
  // the end backwards stops at the first byte.
  for (size_t i = 0; i < n; ++i) {
    const unsigned shift = 7 * unsigned(n - 1 - i);
    unsigned char b = static_cast<unsigned char>((l >> shift) & 127);
    if (i > 0) b |= 128;
    out->push_back(static_cast<char>(b));
  }
}

// Decodes the entry header at p (p < end, *p != 0xFF). Sets *hdr (encoding bytes), *data (data
// bytes) and fills e. False on an unknown encoding or a header that does not fit before end.
bool DecodeHeader(const unsigned char* p, const unsigned char* end, size_t* hdr, uint64_t* data,
                  PackedEntry* e) {
  const size_t avail = size_t(end - p);
  const uint8_t b = p[0];
  auto need = [&](size_t n) { return avail >= n; };
  e->is_int = true;
  if ((b & 0x80) == 0) {
    *hdr = 1, *data = 0, e->ival = b & 0x7f;
    return true;
  }
  if ((b & 0xc0) == 0x80) {
    *hdr = 1, *data = b & 0x3f, e->is_int = false;
    return true;
  }
  if ((b & 0xe0) == 0xc0) {
    if (!need(2)) return false;
    uint64_t u = uint64_t(b & 0x1f) << 8 | p[1];
    e->ival = u >= (1u << 12) ? int64_t(u) - (1 << 13) : int64_t(u);
    *hdr = 2, *data = 0;
    return true;
  }
  if ((b & 0xf0) == 0xe0) {
    if (!need(2)) return false;
    *hdr = 2, *data = uint64_t(b & 0x0f) << 8 | p[1], e->is_int = false;
    return true;
  }
  int bytes;
  switch (b) {
    case 0xf0:
      if (!need(5)) return false;
      *hdr = 5, *data = Load32(p + 1), e->is_int = false;
      return true;
    case 0xf1: bytes = 2; break;
    case 0xf2: bytes = 3; break;
    case 0xf3: bytes = 4; break;
    case 0xf4: bytes = 8; break;
    default:
      return false;  // 0xf5..0xfe are not encodings; 0xff is handled by the caller
  }
  if (!need(size_t(1 + bytes))) return false;
  uint64_t u = 0;
  for (int i = 0; i < bytes; ++i) u |= uint64_t(p[1 + i]) << (8 * i);
  if (bytes < 8) {
    const uint64_t sign = uint64_t{1} << (8 * bytes - 1);
    if (u & sign) u |= ~((sign << 1) - 1);  // sign-extend
  }
  e->ival = static_cast<int64_t>(u);
  *hdr = 1, *data = uint64_t(bytes);
  // The integer's bytes are "data" for the size computations; the value is already read.
  return true;
}

// Reads the backlen that ends just before `last_plus_one`, looking no further back than
// `begin`. UINT64_MAX when it is malformed.
uint64_t DecodeBacklen(const unsigned char* last_plus_one, const unsigned char* begin) {
  uint64_t v = 0;
  unsigned shift = 0;
  const unsigned char* p = last_plus_one - 1;
  for (int i = 0; i < 5; ++i, --p) {
    if (p < begin) return UINT64_MAX;
    v |= uint64_t(*p & 127) << shift;
    if ((*p & 128) == 0) return v;
    shift += 7;
  }
  return UINT64_MAX;
}

// One step over the entry at pos (checked). On success advances pos and fills e.
bool Step(std::string_view lp, size_t* pos, PackedEntry* e, std::string* why) {
  const auto* base = reinterpret_cast<const unsigned char*>(lp.data());
  const unsigned char* p = base + *pos;
  const unsigned char* end = base + lp.size() - 1;  // the terminator's position
  size_t hdr;
  uint64_t data;
  if (!DecodeHeader(p, end, &hdr, &data, e)) {
    if (why) *why = "bad entry encoding or truncated entry header at offset " + std::to_string(*pos);
    return false;
  }
  const uint64_t enc_len = hdr + data;
  const uint64_t total = enc_len + BacklenSize(enc_len);
  if (total > uint64_t(end - p)) {
    if (why) *why = "entry at offset " + std::to_string(*pos) + " runs past the end";
    return false;
  }
  if (!e->is_int) e->sval = std::string_view(reinterpret_cast<const char*>(p + hdr), data);
  if (DecodeBacklen(p + total, p + enc_len) != enc_len) {
    if (why) *why = "entry at offset " + std::to_string(*pos) + " has a wrong backlen";
    return false;
  }
  *pos += size_t(total);
  return true;
}

}  // namespace

std::string_view PackedEntry::Str(char* scratch) const {
  if (!is_int) return sval;
  return std::string_view(scratch, FormatInt64(ival, scratch));
}

void ListpackBuilder::Clear() {
  buf_.assign(kHeaderSize, '\0');
  count_ = 0;
}

size_t ListpackBuilder::IntEntrySize(int64_t v) {
  const size_t enc = (v >= 0 && v <= 127)                    ? 1
                     : (v >= -4096 && v <= 4095)             ? 2
                     : (v >= -32768 && v <= 32767)           ? 3
                     : (v >= -8388608 && v <= 8388607)       ? 4
                     : (v >= INT32_MIN && v <= INT32_MAX)    ? 5
                                                             : 9;
  return enc + BacklenSize(enc);
}

size_t ListpackBuilder::EntrySize(std::string_view s) {
  int64_t v;
  if (ParseInt64(s, &v)) return IntEntrySize(v);
  const size_t enc = s.size() < 64 ? 1 + s.size() : s.size() < 4096 ? 2 + s.size() : 5 + s.size();
  return enc + BacklenSize(enc);
}

void ListpackBuilder::AppendInt(int64_t v) {
  const size_t start = buf_.size();
  auto put_le = [&](uint64_t u, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  };
  if (v >= 0 && v <= 127) {
    buf_.push_back(static_cast<char>(v));
  } else if (v >= -4096 && v <= 4095) {
    const uint64_t u = v < 0 ? uint64_t((1 << 13) + v) : uint64_t(v);
    buf_.push_back(static_cast<char>(0xc0 | (u >> 8)));
    buf_.push_back(static_cast<char>(u & 0xff));
  } else if (v >= -32768 && v <= 32767) {
    buf_.push_back(static_cast<char>(0xf1));
    put_le(uint64_t(v), 2);
  } else if (v >= -8388608 && v <= 8388607) {
    buf_.push_back(static_cast<char>(0xf2));
    put_le(uint64_t(v), 3);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    buf_.push_back(static_cast<char>(0xf3));
    put_le(uint64_t(v), 4);
  } else {
    buf_.push_back(static_cast<char>(0xf4));
    put_le(uint64_t(v), 8);
  }
  AppendBacklen(&buf_, buf_.size() - start);
  ++count_;
}

void ListpackBuilder::Append(std::string_view s) {
  int64_t v;
  if (ParseInt64(s, &v)) return AppendInt(v);
  const size_t start = buf_.size();
  const size_t n = s.size();
  if (n < 64) {
    buf_.push_back(static_cast<char>(0x80 | n));
  } else if (n < 4096) {
    buf_.push_back(static_cast<char>(0xe0 | (n >> 8)));
    buf_.push_back(static_cast<char>(n & 0xff));
  } else {
    buf_.push_back(static_cast<char>(0xf0));
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  }
  buf_.append(s);
  AppendBacklen(&buf_, buf_.size() - start);
  ++count_;
}

std::string ListpackBuilder::Finish() {
  buf_.push_back(static_cast<char>(kEof));
  const uint32_t total = static_cast<uint32_t>(buf_.size());
  const uint16_t num = count_ < 65535 ? static_cast<uint16_t>(count_) : 65535;
  for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>((total >> (8 * i)) & 0xff);
  buf_[4] = static_cast<char>(num & 0xff);
  buf_[5] = static_cast<char>(num >> 8);
  std::string out = std::move(buf_);
  Clear();
  return out;
}

bool ValidateListpack(std::string_view lp, uint32_t* count, std::string* why) {
  const auto* p = reinterpret_cast<const unsigned char*>(lp.data());
  if (lp.size() < ListpackBuilder::kHeaderSize + 1) {
    *why = "listpack shorter than its header";
    return false;
  }
  if (Load32(p) != lp.size()) {
    *why = "listpack header says " + std::to_string(Load32(p)) + " bytes, blob has " +
           std::to_string(lp.size());
    return false;
  }
  if (p[lp.size() - 1] != kEof) {
    *why = "listpack does not end with its terminator";
    return false;
  }
  const uint32_t numele = uint32_t{p[4]} | uint32_t{p[5]} << 8;
  uint32_t n = 0;
  size_t pos = ListpackBuilder::kHeaderSize;
  PackedEntry e;
  while (pos < lp.size() - 1) {
    if (p[pos] == kEof) {
      *why = "listpack terminator before its end";
      return false;
    }
    if (!Step(lp, &pos, &e, why)) return false;
    ++n;
  }
  if (numele != 65535 && numele != n) {
    *why = "listpack header counts " + std::to_string(numele) + " entries, found " +
           std::to_string(n);
    return false;
  }
  *count = n;
  return true;
}

ListpackReader::ListpackReader(std::string_view lp) : lp_(lp), pos_(ListpackBuilder::kHeaderSize) {}

bool ListpackReader::Next(PackedEntry* e) {
  if (lp_.size() < ListpackBuilder::kHeaderSize + 1 || pos_ >= lp_.size() - 1) return false;
  if (static_cast<uint8_t>(lp_[pos_]) == kEof) return false;
  if (!Step(lp_, &pos_, e, nullptr)) {
    pos_ = lp_.size();
    return false;
  }
  return true;
}

}  // namespace shardis::core

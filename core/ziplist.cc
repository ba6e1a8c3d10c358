#include "core/ziplist.h"

namespace shardis::core {

namespace {

constexpr size_t kZlHeader = 10;
constexpr uint8_t kZlEnd = 0xff;

uint32_t Le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Decodes the entry at pos: its prevlen, its total size, and the element. Every byte read is
// inside [pos, last) where last is the terminator's offset. False when malformed.
bool DecodeZlEntry(std::string_view zl, size_t pos, uint32_t* prevlen, size_t* total,
                   PackedEntry* e) {
  const auto* base = reinterpret_cast<const unsigned char*>(zl.data());
  const size_t last = zl.size() - 1;
  if (pos >= last) return false;
  size_t p = pos;
  if (base[p] < 254) {
    *prevlen = base[p];
    p += 1;
  } else if (base[p] == 254) {
    if (last - p < 5) return false;
    *prevlen = Le32(base + p + 1);
    p += 5;
  } else {
    return false;
  }
  if (p >= last) return false;
  const uint8_t enc = base[p];
  uint64_t data = 0;
  size_t lensize = 1;
  e->is_int = false;
  switch (enc >> 6) {
    case 0:
      data = enc & 0x3f;
      break;
    case 1:
      if (last - p < 2) return false;
      data = uint64_t(enc & 0x3f) << 8 | base[p + 1];
      lensize = 2;
      break;
    case 2:
      if (last - p < 5) return false;
      data = uint64_t(base[p + 1]) << 24 | uint64_t(base[p + 2]) << 16 |
             uint64_t(base[p + 3]) << 8 | base[p + 4];
      lensize = 5;
      break;
    default: {
      e->is_int = true;
      int bytes;
      switch (enc) {
        case 0xc0: bytes = 2; break;
        case 0xd0: bytes = 4; break;
        case 0xe0: bytes = 8; break;
        case 0xf0: bytes = 3; break;
        case 0xfe: bytes = 1; break;
        default:
          if (enc >= 0xf1 && enc <= 0xfd) {
            bytes = 0;
            e->ival = (enc & 0x0f) - 1;
            break;
          }
          return false;
      }
      if (bytes > 0) {
        if (last - p - 1 < size_t(bytes)) return false;
        uint64_t u = 0;
        for (int i = 0; i < bytes; ++i) u |= uint64_t(base[p + 1 + i]) << (8 * i);
        if (bytes < 8) {
          const uint64_t sign = uint64_t{1} << (8 * bytes - 1);
          if (u & sign) u |= ~((sign << 1) - 1);
        }
        e->ival = static_cast<int64_t>(u);
      }
      data = uint64_t(bytes);
    }
  }
  p += lensize;
  if (data > last - p) return false;  // the entry must end at or before the terminator
  if (!e->is_int) e->sval = std::string_view(zl.data() + p, data);
  *total = p + size_t(data) - pos;
  return true;
}

}  // namespace

bool ValidateZiplist(std::string_view zl, uint32_t* count, std::string* why) {
  const auto* base = reinterpret_cast<const unsigned char*>(zl.data());
  if (zl.size() < kZlHeader + 1) {
    *why = "ziplist shorter than its header";
    return false;
  }
  if (Le32(base) != zl.size()) {
    *why = "ziplist header says " + std::to_string(Le32(base)) + " bytes, blob has " +
           std::to_string(zl.size());
    return false;
  }
  if (base[zl.size() - 1] != kZlEnd) {
    *why = "ziplist does not end with its terminator";
    return false;
  }
  const uint32_t tail = Le32(base + 4);
  if (tail > zl.size() - 1) {
    *why = "ziplist tail offset outside the blob";
    return false;
  }
  const uint32_t header_count = uint32_t{base[8]} | uint32_t{base[9]} << 8;
  uint32_t n = 0;
  size_t pos = kZlHeader, prev_pos = 0, prev_size = 0;
  bool any = false;
  while (base[pos] != kZlEnd) {
    uint32_t prevlen;
    size_t total;
    PackedEntry e;
    if (!DecodeZlEntry(zl, pos, &prevlen, &total, &e)) {
      *why = "ziplist entry at offset " + std::to_string(pos) + " is malformed or runs past the end";
      return false;
    }
    if (prevlen != prev_size) {
      *why = "ziplist entry at offset " + std::to_string(pos) + " has a wrong prevlen";
      return false;
    }
    prev_pos = pos;
    prev_size = total;
    any = true;
    pos += total;
    ++n;
  }
  if (pos != zl.size() - 1) {
    *why = "ziplist terminator before its end";
    return false;
  }
  if (any && prev_pos != tail) {
    *why = "ziplist tail offset is not the last entry";
    return false;
  }
  if (header_count != 65535 && header_count != n) {
    *why = "ziplist header counts " + std::to_string(header_count) + " entries, found " +
           std::to_string(n);
    return false;
  }
  *count = n;
  return true;
}

ZiplistReader::ZiplistReader(std::string_view zl) : zl_(zl), pos_(kZlHeader) {}

bool ZiplistReader::Next(PackedEntry* e) {
  if (zl_.size() < kZlHeader + 1 || pos_ >= zl_.size() - 1) return false;
  uint32_t prevlen;
  size_t total;
  if (!DecodeZlEntry(zl_, pos_, &prevlen, &total, e)) {
    pos_ = zl_.size();
    return false;
  }
  pos_ += total;
  return true;
}

namespace {

// A zipmap length at pos (1 or 5 bytes); false when it does not fit before `last`.
bool ZmLength(std::string_view zm, size_t* pos, size_t last, uint64_t* len) {
  const auto* b = reinterpret_cast<const unsigned char*>(zm.data());
  if (*pos >= last) return false;
  if (b[*pos] < 254) {
    *len = b[(*pos)++];
    return true;
  }
  if (last - *pos < 5) return false;
  *len = Le32(b + *pos + 1);
  *pos += 5;
  return true;
}

// One pair at *pos; false when malformed.
bool ZmPair(std::string_view zm, size_t* pos, std::string_view* f, std::string_view* v) {
  const size_t last = zm.size() - 1;
  uint64_t flen, vlen;
  if (!ZmLength(zm, pos, last, &flen) || flen > last - *pos) return false;
  *f = zm.substr(*pos, flen);
  *pos += flen;
  if (!ZmLength(zm, pos, last, &vlen) || *pos >= last) return false;
  const uint64_t free = static_cast<unsigned char>(zm[(*pos)++]);
  if (vlen > last - *pos || free > last - *pos - vlen) return false;
  *v = zm.substr(*pos, vlen);
  *pos += vlen + free;
  return true;
}

}  // namespace

bool ValidateZipmap(std::string_view zm, std::string* why) {
  if (zm.size() < 2 || static_cast<unsigned char>(zm.back()) != 0xff) {
    *why = "zipmap too short or without its terminator";
    return false;
  }
  size_t pos = 1, count = 0;
  std::string_view f, v;
  while (static_cast<unsigned char>(zm[pos]) != 0xff) {
    if (!ZmPair(zm, &pos, &f, &v)) {
      *why = "zipmap pair at offset " + std::to_string(pos) + " runs past the end";
      return false;
    }
    ++count;
    if (pos >= zm.size()) {
      *why = "zipmap pair runs past the end";
      return false;
    }
  }
  if (pos != zm.size() - 1) {
    *why = "zipmap terminator before its end";
    return false;
  }
  const unsigned char n = static_cast<unsigned char>(zm[0]);
  if (count == 0 || (n != 254 && n != count)) {
    *why = "zipmap is empty or its count is wrong";
    return false;
  }
  return true;
}

bool ZipmapReader::Next(std::string_view* field, std::string_view* value) {
  if (zm_.size() < 2 || pos_ >= zm_.size() - 1) return false;
  if (static_cast<unsigned char>(zm_[pos_]) == 0xff) return false;
  if (!ZmPair(zm_, &pos_, field, value)) {
    pos_ = zm_.size();
    return false;
  }
  return true;
}

}  // namespace shardis::core

#include "core/rdb_encoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/crc64.h"
#include "core/lzf.h"
#include "core/number.h"
#include "core/rdb_format.h"

namespace shardis::core {

absl::StatusOr<size_t> StringSource::Read(char* dst, size_t n) {
  const size_t k = std::min(n, data_.size() - pos_);
  if (k > 0) std::memcpy(dst, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

namespace rdb {

std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t n = 0;
  for (std::string_view p : parts) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string_view p : parts) out.append(p);
  return out;
}

void AppendLength(std::string* out, uint64_t len) {
  if (len < (1 << 6)) {
    out->push_back(static_cast<char>(len));
  } else if (len < (1 << 14)) {
    out->push_back(static_cast<char>((k14BitLen << 6) | (len >> 8)));
    out->push_back(static_cast<char>(len & 0xff));
  } else if (len <= UINT32_MAX) {
    out->push_back(static_cast<char>(k32BitLen));
    for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  } else {
    out->push_back(static_cast<char>(k64BitLen));
    for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
}

namespace {

// Redis' rdbEncodeInteger: false when v does not fit 32 bits.
bool AppendEncodedInt(std::string* out, int64_t v) {
  int bytes;
  uint8_t enc;
  if (v >= INT8_MIN && v <= INT8_MAX) {
    enc = kEncInt8, bytes = 1;
  } else if (v >= INT16_MIN && v <= INT16_MAX) {
    enc = kEncInt16, bytes = 2;
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    enc = kEncInt32, bytes = 4;
  } else {
    return false;
  }
  out->push_back(static_cast<char>((kEncVal << 6) | enc));
  const uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  return true;
}

}  // namespace

namespace {
thread_local LzfOutcomes tls_lzf_outcomes;
}  // namespace

const LzfOutcomes& ThreadLzfOutcomes() { return tls_lzf_outcomes; }

void AppendString(std::string* out, std::string_view s, bool compress) {
  if (s.size() <= 11) {
    int64_t v;
    if (ParseInt64(s, &v) && AppendEncodedInt(out, v)) return;
  }
  // Redis' thresholds: nothing of 20 bytes or less compresses, and a result must save at least
  // 4 bytes to be worth its two extra lengths.
  if (compress && s.size() > 20) {
    const size_t start = out->size();
    const size_t cap = s.size() - 4;
    // Worst case of the header: 1 + 9 + 9 bytes.
    out->resize(start + 19 + cap);
    const size_t clen = LzfCompress(s, out->data() + start + 19, cap);
    ++tls_lzf_outcomes.tried;
    if (clen > 0) {
      ++tls_lzf_outcomes.saved;
      std::string header;
      header.push_back(static_cast<char>((kEncVal << 6) | kEncLzf));
      AppendLength(&header, clen);
      AppendLength(&header, s.size());
      std::memmove(out->data() + start + header.size(), out->data() + start + 19, clen);
      std::memcpy(out->data() + start, header.data(), header.size());
      out->resize(start + header.size() + clen);
      return;
    }
    out->resize(start);
  }
  AppendLength(out, s.size());
  out->append(s);
}

void AppendIntString(std::string* out, int64_t v) {
  if (AppendEncodedInt(out, v)) return;
  char buf[kInt64BufSize];
  const size_t n = FormatInt64(v, buf);
  AppendLength(out, n);
  out->append(buf, n);
}

void AppendBinaryDouble(std::string* out, double d) {
  char b[8];
  std::memcpy(b, &d, 8);  // little-endian host (checked in compact_value.h)
  out->append(b, 8);
}

void AppendMillis(std::string* out, int64_t ms) {
  const uint64_t u = static_cast<uint64_t>(ms);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

void AppendRawStreamId(std::string* out, uint64_t ms, uint64_t seq) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((ms >> (8 * i)) & 0xff));
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((seq >> (8 * i)) & 0xff));
}

}  // namespace rdb

// ---- RdbInput

namespace {
constexpr size_t kChunk = 1 << 20;  // long strings are read (and grown) a MiB at a time
}  // namespace

absl::Status RdbInput::Corrupt(uint64_t at, std::string_view message) {
  return absl::DataLossError(rdb::Cat({"at byte ", std::to_string(at), ": ", message}));
}

absl::Status RdbInput::Eof(uint64_t at, std::string_view what) {
  if (!io_error_.ok()) {
    const std::string io(io_error_.message());
    return absl::Status(io_error_.code(),
                        rdb::Cat({"at byte ", std::to_string(at), ": reading ", what, ": ", io}));
  }
  return absl::DataLossError(
      rdb::Cat({"at byte ", std::to_string(at), ": expected ", what, ", found end of file"}));
}

void RdbInput::CrcUpTo(size_t pos) {
  if (pos > crc_pos_) {
    crc_ = Crc64(crc_, std::string_view(buf_.data() + crc_pos_, pos - crc_pos_));
    crc_pos_ = pos;
  }
}

uint64_t RdbInput::crc() {
  CrcUpTo(pos_);
  return crc_;
}

bool RdbInput::Fill() {
  if (pos_ < end_) return true;
  if (!io_error_.ok()) return false;
  if (buf_.empty()) buf_.resize(buffer_size_);
  CrcUpTo(pos_);
  base_offset_ += pos_;
  pos_ = end_ = crc_pos_ = 0;
  absl::StatusOr<size_t> n = source_->Read(buf_.data(), buf_.size());
  if (!n.ok()) {
    io_error_ = n.status();
    return false;
  }
  end_ = *n;
  return end_ > 0;
}

absl::Status RdbInput::ReadExact(char* dst, size_t n, std::string_view what) {
  const uint64_t at = offset();
  while (n > 0) {
    if (!Fill()) return Eof(at, what);
    const size_t k = std::min(n, end_ - pos_);
    std::memcpy(dst, buf_.data() + pos_, k);
    if (capture_ != nullptr) capture_->append(buf_.data() + pos_, k);
    pos_ += k;
    dst += k;
    n -= k;
  }
  return absl::OkStatus();
}

absl::Status RdbInput::ReadByte(uint8_t* b, std::string_view what) {
  if (!Fill()) return Eof(offset(), what);
  *b = static_cast<uint8_t>(buf_[pos_++]);
  if (capture_ != nullptr) capture_->push_back(static_cast<char>(*b));
  return absl::OkStatus();
}

absl::Status RdbInput::ReadLengthOrEncoding(uint64_t* len, bool* encoded, std::string_view what) {
  const uint64_t at = offset();
  uint8_t b;
  if (!Fill()) return Eof(at, what);
  b = static_cast<uint8_t>(buf_[pos_++]);
  if (capture_ != nullptr) capture_->push_back(static_cast<char>(b));
  *encoded = false;
  const uint8_t type = b >> 6;
  if (type == rdb::kEncVal) {
    *encoded = true;
    *len = b & 0x3f;
    return absl::OkStatus();
  }
  if (type == rdb::k6BitLen) {
    *len = b & 0x3f;
    return absl::OkStatus();
  }
  if (type == rdb::k14BitLen) {
    uint8_t b2;
    if (absl::Status s = ReadByte(&b2, what); !s.ok()) return Eof(at, what);
    *len = uint64_t(b & 0x3f) << 8 | b2;
    return absl::OkStatus();
  }
  int bytes;
  if (b == rdb::k32BitLen) {
    bytes = 4;
  } else if (b == rdb::k64BitLen) {
    bytes = 8;
  } else {
    return Corrupt(at, rdb::Cat({"expected ", what, ", found the unknown length prefix ",
                                 std::to_string(b)}));
  }
  unsigned char raw[8];
  if (!ReadExact(reinterpret_cast<char*>(raw), bytes, what).ok()) return Eof(at, what);
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | raw[i];
  *len = v;
  return absl::OkStatus();
}

absl::Status RdbInput::ReadLength(uint64_t* len, std::string_view what) {
  const uint64_t at = offset();
  bool encoded;
  if (absl::Status s = ReadLengthOrEncoding(len, &encoded, what); !s.ok()) return s;
  if (encoded) {
    return Corrupt(at, rdb::Cat({"expected ", what, ", found a string encoding"}));
  }
  return absl::OkStatus();
}

absl::Status RdbInput::ReadString(std::string* out, std::string_view what) {
  const uint64_t at = offset();
  uint64_t len;
  bool encoded;
  if (absl::Status s = ReadLengthOrEncoding(&len, &encoded, what); !s.ok()) return s;
  if (encoded) {
    switch (len) {
      case rdb::kEncInt8:
      case rdb::kEncInt16:
      case rdb::kEncInt32: {
        const int bytes = len == rdb::kEncInt8 ? 1 : len == rdb::kEncInt16 ? 2 : 4;
        unsigned char raw[4];
        if (absl::Status s = ReadExact(reinterpret_cast<char*>(raw), bytes, what); !s.ok()) {
          return s;
        }
        uint64_t u = 0;
        for (int i = 0; i < bytes; ++i) u |= uint64_t(raw[i]) << (8 * i);
        const uint64_t sign = uint64_t{1} << (8 * bytes - 1);
        if (u & sign) u |= ~((sign << 1) - 1);
        char buf[kInt64BufSize];
        out->assign(buf, FormatInt64(static_cast<int64_t>(u), buf));
        return absl::OkStatus();
      }
      case rdb::kEncLzf: {
        uint64_t clen, ulen;
        if (absl::Status s = ReadLength(&clen, "the compressed length of an LZF string"); !s.ok()) {
          return s;
        }
        if (absl::Status s = ReadLength(&ulen, "the length of an LZF string"); !s.ok()) return s;
        if (clen > kMaxStringSize || ulen > kMaxStringSize || ulen > LzfMaxExpansion(clen)) {
          return Corrupt(at, rdb::Cat({"LZF string of ", std::to_string(clen), " bytes claims ",
                                       std::to_string(ulen), " bytes uncompressed"}));
        }
        std::string compressed;
        compressed.reserve(std::min<uint64_t>(clen, kChunk));
        for (uint64_t left = clen; left > 0;) {
          const size_t k = std::min<uint64_t>(left, kChunk);
          const size_t old = compressed.size();
          compressed.resize(old + k);
          if (absl::Status s = ReadExact(compressed.data() + old, k, "LZF compressed bytes");
              !s.ok()) {
            return s;
          }
          left -= k;
        }
        out->resize(ulen);
        if (!LzfDecompress(compressed, out->data(), ulen)) {
          return Corrupt(at, "invalid LZF compressed string");
        }
        return absl::OkStatus();
      }
      default:
        return Corrupt(at, rdb::Cat({"unknown string encoding ", std::to_string(len)}));
    }
  }
  if (len > kMaxStringSize) {
    return Corrupt(at, rdb::Cat({"string length ", std::to_string(len), " is too large"}));
  }
  out->clear();
  out->reserve(std::min<uint64_t>(len, kChunk));
  for (uint64_t left = len; left > 0;) {
    const size_t k = std::min<uint64_t>(left, kChunk);
    const size_t old = out->size();
    out->resize(old + k);
    if (absl::Status s = ReadExact(out->data() + old, k, what); !s.ok()) return s;
    left -= k;
  }
  return absl::OkStatus();
}

absl::Status RdbInput::Skip(uint64_t n, std::string_view what) {
  const uint64_t at = offset();
  while (n > 0) {
    if (!Fill()) return Eof(at, what);
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, end_ - pos_));
    if (capture_ != nullptr) capture_->append(buf_.data() + pos_, k);
    pos_ += k;
    n -= k;
  }
  return absl::OkStatus();
}

absl::Status RdbInput::SkipString(std::string_view what) {
  const uint64_t at = offset();
  uint64_t len;
  bool encoded;
  if (absl::Status s = ReadLengthOrEncoding(&len, &encoded, what); !s.ok()) return s;
  if (!encoded) {
    if (len > kMaxStringSize) {
      return Corrupt(at, rdb::Cat({"string length ", std::to_string(len), " is too large"}));
    }
    return Skip(len, what);
  }
  switch (len) {
    case rdb::kEncInt8:
      return Skip(1, what);
    case rdb::kEncInt16:
      return Skip(2, what);
    case rdb::kEncInt32:
      return Skip(4, what);
    case rdb::kEncLzf: {
      uint64_t clen, ulen;
      if (absl::Status s = ReadLength(&clen, "the compressed length of an LZF string"); !s.ok()) {
        return s;
      }
      if (absl::Status s = ReadLength(&ulen, "the length of an LZF string"); !s.ok()) return s;
      if (clen > kMaxStringSize) {
        return Corrupt(at, rdb::Cat({"LZF string of ", std::to_string(clen), " bytes"}));
      }
      return Skip(clen, "LZF compressed bytes");
    }
    default:
      return Corrupt(at, rdb::Cat({"unknown string encoding ", std::to_string(len)}));
  }
}

absl::Status RdbInput::ReadBinaryDouble(double* d, std::string_view what) {
  char b[8];
  if (absl::Status s = ReadExact(b, 8, what); !s.ok()) return s;
  std::memcpy(d, b, 8);
  return absl::OkStatus();
}

absl::Status RdbInput::ReadStringDouble(double* d, std::string_view what) {
  const uint64_t at = offset();
  uint8_t len;
  if (absl::Status s = ReadByte(&len, what); !s.ok()) return s;
  switch (len) {
    case 253:
      *d = std::nan("");
      return absl::OkStatus();
    case 254:
      *d = INFINITY;
      return absl::OkStatus();
    case 255:
      *d = -INFINITY;
      return absl::OkStatus();
    default:
      break;
  }
  char buf[256];
  if (absl::Status s = ReadExact(buf, len, what); !s.ok()) return s;
  buf[len] = '\0';
  char* end = nullptr;
  *d = std::strtod(buf, &end);
  if (len == 0 || end != buf + len) {
    return Corrupt(at, rdb::Cat({"expected ", what, ", found \"", std::string_view(buf, len),
                                 "\""}));
  }
  return absl::OkStatus();
}

absl::Status RdbInput::ReadMillis(int64_t* ms, std::string_view what) {
  unsigned char b[8];
  if (absl::Status s = ReadExact(reinterpret_cast<char*>(b), 8, what); !s.ok()) return s;
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u |= uint64_t(b[i]) << (8 * i);
  *ms = static_cast<int64_t>(u);
  return absl::OkStatus();
}

absl::Status RdbInput::ReadRawStreamId(uint64_t* ms, uint64_t* seq, std::string_view what) {
  unsigned char b[16];
  if (absl::Status s = ReadExact(reinterpret_cast<char*>(b), 16, what); !s.ok()) return s;
  *ms = *seq = 0;
  for (int i = 0; i < 8; ++i) *ms = *ms << 8 | b[i];
  for (int i = 8; i < 16; ++i) *seq = *seq << 8 | b[i];
  return absl::OkStatus();
}

}  // namespace shardis::core

// The byte-level layer of the RDB codec: lengths, strings (plain, integer-encoded, LZF),
// doubles and times, written into a std::string and read from an RdbInput that counts offsets,
// keeps the CRC64 and turns every short read or malformed field into an error that says where
// and what ("at byte 1234: expected a length, found end of file").
//
// No I/O here: bytes come from an RdbSource and go to an RdbSink, which the server implements
// over its files (and tests over strings).
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

// Where a writer puts bytes. Write may block the calling fiber (a file write); an error status
// stops the writer.
class RdbSink {
 public:
  virtual ~RdbSink() = default;
  virtual absl::Status Write(std::string_view bytes) = 0;
};

class StringSink : public RdbSink {
 public:
  absl::Status Write(std::string_view bytes) override {
    data_.append(bytes);
    return absl::OkStatus();
  }
  std::string& data() { return data_; }

 private:
  std::string data_;
};

// Where a reader gets bytes. Read returns up to n bytes (fewer, even 0, only at the end of the
// data), or an error status (an I/O error).
class RdbSource {
 public:
  virtual ~RdbSource() = default;
  virtual absl::StatusOr<size_t> Read(char* dst, size_t n) = 0;
};

// Reads a string that the caller keeps alive while the source is used.
class StringSource : public RdbSource {
 public:
  explicit StringSource(std::string_view data) : data_(data) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override;

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

namespace rdb {

// Concatenates (for error messages; absl::StrCat does not take std::string_view in this abseil).
std::string Cat(std::initializer_list<std::string_view> parts);

// ---- Writing (appending to *out).

// Redis' rdbSaveLen: 1, 2, 5 or 9 bytes.
void AppendLength(std::string* out, uint64_t len);
// Redis' rdbSaveRawString: a string of up to 11 bytes that is the canonical form of an integer
// fitting 32 bits is stored as that integer (2, 3 or 5 bytes); with `compress`, a string of more
// than 20 bytes is stored LZF-compressed when that saves at least 4 bytes; else length + bytes.
void AppendString(std::string* out, std::string_view s, bool compress);
// What AppendString's compression did on the calling thread, ever: how many strings it tried
// and how many came out smaller. A snapshot reads the change over a bucket to stop spending CPU
// on data that does not compress.
struct LzfOutcomes {
  uint64_t tried = 0;
  uint64_t saved = 0;
};
const LzfOutcomes& ThreadLzfOutcomes();
// Redis' rdbSaveLongLongAsStringObject: an integer value (a string cell that holds an int).
void AppendIntString(std::string* out, int64_t v);
// 8 bytes, IEEE 754 little-endian (rdbSaveBinaryDoubleValue).
void AppendBinaryDouble(std::string* out, double d);
// 8 bytes little-endian (rdbSaveMillisecondTime).
void AppendMillis(std::string* out, int64_t ms);
// A stream ID as Redis keeps it in its radix trees: ms then seq, 8 bytes big-endian each.
void AppendRawStreamId(std::string* out, uint64_t ms, uint64_t seq);

}  // namespace rdb

// ---- Reading.

// A buffered, checked reader over an RdbSource. Every method that fails returns an error whose
// message starts with the byte offset; the input is not usable after an error.
class RdbInput {
 public:
  // Strings longer than this are refused before any allocation (Redis' proto-max-bulk-len is
  // 512 MiB by default; a corrupt length must not allocate terabytes).
  static constexpr uint64_t kMaxStringSize = uint64_t{1} << 34;

  // The buffer holds up to this much of the source at a time.
  static constexpr size_t kDefaultBufferSize = 64 * 1024;

  // buffer_size: a source known to be small (one value's payload) gets a buffer of its size,
  // not the default's 64 KiB for each value a loader decodes.
  explicit RdbInput(RdbSource* source, size_t buffer_size = kDefaultBufferSize)
      : source_(source), buffer_size_(buffer_size == 0 ? 1 : buffer_size) {}

  // Bytes consumed so far.
  uint64_t offset() const { return base_offset_ + pos_; }
  // The CRC64 of every byte consumed so far.
  uint64_t crc();

  // "at byte <at>: <message>": for callers that found something wrong in what they read.
  static absl::Status Corrupt(uint64_t at, std::string_view message);

  absl::Status ReadExact(char* dst, size_t n, std::string_view what);
  absl::Status ReadByte(uint8_t* b, std::string_view what);
  // A length or, with *encoded set, the code of a specially encoded string (kEncInt8...).
  absl::Status ReadLengthOrEncoding(uint64_t* len, bool* encoded, std::string_view what);
  // A plain length (a special encoding here is an error).
  absl::Status ReadLength(uint64_t* len, std::string_view what = "a length");
  // A string in any of its encodings, decoded (integers formatted back to decimal).
  absl::Status ReadString(std::string* out, std::string_view what = "a string");
  absl::Status ReadBinaryDouble(double* d, std::string_view what = "a binary double");
  // The old text form of a double (RDB_TYPE_ZSET): a length byte then the text; 253, 254 and
  // 255 are NaN, +inf and -inf.
  absl::Status ReadStringDouble(double* d, std::string_view what = "a double");
  absl::Status ReadMillis(int64_t* ms, std::string_view what = "a time in milliseconds");
  absl::Status ReadRawStreamId(uint64_t* ms, uint64_t* seq, std::string_view what = "a stream ID");
  // Passes over n bytes / one string in any encoding without decoding it.
  absl::Status Skip(uint64_t n, std::string_view what);
  absl::Status SkipString(std::string_view what = "a string");

  // While a capture string is set, every byte consumed is also appended to it (the reader uses
  // it to hand a value's bytes to the shard that will decode them). Null stops capturing.
  void set_capture(std::string* capture) { capture_ = capture; }

 private:
  // Makes at least one unread byte available; false at the end of the data (or an I/O error,
  // kept in io_error_).
  bool Fill();
  absl::Status Eof(uint64_t at, std::string_view what);
  void CrcUpTo(size_t pos);

  RdbSource* source_;
  size_t buffer_size_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;   // unread bytes are buf_[pos_, end_)
  uint64_t base_offset_ = 0;   // file offset of buf_[0]
  uint64_t crc_ = 0;
  size_t crc_pos_ = 0;         // buf_[0, crc_pos_) is in crc_
  absl::Status io_error_;
  std::string* capture_ = nullptr;
};

}  // namespace shardis::core

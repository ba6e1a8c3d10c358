// Redis' listpack, byte for byte: the packed form in which RDB files carry small hashes, sorted
// sets, list nodes and stream nodes. shardis keeps its own packed encodings in memory
// (packed_strings.h, list.h, ...); this file only builds and reads Redis' bytes for the RDB codec.
//
// Format facts (Redis' listpack.c):
//   header   4 bytes total size, 2 bytes element count (65535: "count it yourself"),
//            both little-endian; then the entries; then one 0xFF terminator byte.
//   entry    <encoding+data> <backlen>, where backlen is the size of <encoding+data> in 1..5
//            bytes, 7 bits per byte, read from its last byte backwards (bit 7 set on every byte
//            but the first one written).
//   encoding 0xxxxxxx             integer 0..127
//            10xxxxxx             string of up to 63 bytes
//            110xxxxx yyyyyyyy    13-bit signed integer
//            1110xxxx yyyyyyyy    string of up to 4095 bytes
//            11110000 + 4 bytes   string, 32-bit length
//            11110001/2/3/4       16/24/32/64-bit signed integer (little-endian) follows
//            11111111             the terminator
// A string that is the canonical decimal form of an int64 is always stored as an integer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardis::core {

// One element of a listpack or ziplist: an integer or a string (a view into the blob).
struct PackedEntry {
  bool is_int = false;
  int64_t ival = 0;
  std::string_view sval;

  // The element as Redis reads it back as a string (an integer in decimal, into scratch of at
  // least 21 bytes).
  std::string_view Str(char* scratch) const;
};

class ListpackBuilder {
 public:
  static constexpr size_t kHeaderSize = 6;
  // Redis refuses to grow a listpack past 1 GiB (LISTPACK_MAX_SAFETY_SIZE).
  static constexpr size_t kMaxSafeSize = size_t{1} << 30;

  ListpackBuilder() { Clear(); }

  // Appends an element, as an integer when s is the canonical form of an int64 (Redis' lpAppend).
  void Append(std::string_view s);
  void AppendInt(int64_t v);
  // What one element would add to the size (its encoding, data and backlen).
  static size_t EntrySize(std::string_view s);
  static size_t IntEntrySize(int64_t v);

  uint32_t count() const { return count_; }
  // The size the finished listpack has (header, entries, terminator).
  size_t bytes() const { return buf_.size() + 1; }
  // The finished listpack; the builder starts over empty.
  std::string Finish();
  void Clear();

 private:
  std::string buf_;
  uint32_t count_ = 0;
};

// Redis' deep listpack validation (lpValidateIntegrity with deep=1): the header's size equals
// the blob's, the terminator ends it, every entry has a known encoding, stays inside the blob and
// has a backlen that matches, and the header's count (unless 65535) is the number of entries.
// On success *count gets the number of entries; on failure *why says what is wrong.
bool ValidateListpack(std::string_view lp, uint32_t* count, std::string* why);

// Walks the entries of a listpack that ValidateListpack accepted (each step is still
// bounds-checked: a malformed blob ends the walk, it is never read past its end).
class ListpackReader {
 public:
  explicit ListpackReader(std::string_view lp);
  // The next entry; false at the end.
  bool Next(PackedEntry* e);

 private:
  std::string_view lp_;
  size_t pos_;
};

}  // namespace shardis::core

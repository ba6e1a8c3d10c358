// Redis' two retired packed formats, read-only, for RDB files of Redis 6.2 and older: the
// ziplist (lists, hashes and sorted sets up to Redis 6.2) and the zipmap (hashes up to Redis 2.4).
//
// Ziplist format facts (Redis' ziplist.c), all little-endian unless said:
//   header  4 bytes total size, 4 bytes offset of the last entry, 2 bytes entry count (65535:
//           "count it yourself"); then the entries; then a 0xFF terminator.
//   entry   <prevlen> <encoding> <data>. prevlen is the previous entry's total size: 1 byte when
//           below 254, else 0xFE and 4 bytes.
//   encoding 00xxxxxx                  string of up to 63 bytes
//            01xxxxxx yyyyyyyy         string, 14-bit length (big-endian)
//            10______ + 4 bytes        string, 32-bit length (big-endian)
//            11000000 / 11010000 / 11100000   int16 / int32 / int64 follows
//            11110000 / 11111110       int24 / int8 follows
//            1111xxxx (0001..1101)     the integer xxxx - 1 (0..12), no data
// Zipmap: a count byte (254: unknown), then per pair <len> key <len> <free> value <free bytes>,
// where <len> is 1 byte below 254, else 254 and 4 bytes; then a 0xFF terminator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/listpack.h"

namespace shardis::core {

// Redis' deep ziplist validation (ziplistValidateIntegrity with deep=1): size, terminator, tail
// offset, every entry's encoding, bounds and prevlen, and the count. *count gets the number of
// entries; *why what is wrong.
bool ValidateZiplist(std::string_view zl, uint32_t* count, std::string* why);

// Walks a ziplist that ValidateZiplist accepted (still bounds-checked at every step).
class ZiplistReader {
 public:
  explicit ZiplistReader(std::string_view zl);
  bool Next(PackedEntry* e);

 private:
  std::string_view zl_;
  size_t pos_;
};

// Redis' deep zipmap validation (zipmapValidateIntegrity): every pair inside the blob, at least
// one pair, and the count byte right unless it says 254.
bool ValidateZipmap(std::string_view zm, std::string* why);

// Walks a zipmap that ValidateZipmap accepted.
class ZipmapReader {
 public:
  explicit ZipmapReader(std::string_view zm) : zm_(zm), pos_(1) {}
  bool Next(std::string_view* field, std::string_view* value);

 private:
  std::string_view zm_;
  size_t pos_;
};

}  // namespace shardis::core

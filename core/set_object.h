// The SET type, kept in a value cell (CompactValue object of ValueType::kSet).
//
// Three encodings:
//   kSetIntset    an IntSet block while every member is the canonical text of an int64 and there
//                 are at most --set_max_intset_entries (512) of them;
//   kSetListpack  a PackedStrings block of members while there are at most
//                 --set_max_listpack_entries (128) members of at most --set_max_listpack_value
//                 (64) bytes. OBJECT ENCODING says "listpack" like Redis 7.2; Redis 7.0 has no
//                 listpack sets (it reports "hashtable" for these);
//   kSetTable     a StringTable of members past those limits. Never converts back, as in Redis.
// The cell's object pointer is the block or table itself; its 8-bit encoding tag says which.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/compact_value.h"
#include "core/intset.h"
#include "core/number.h"
#include "core/packed_strings.h"
#include "core/string_table.h"

namespace shardis::core {

enum SetEncoding : uint8_t { kSetIntset = 0, kSetListpack = 1, kSetTable = 2 };

// The thresholds (the gflags give the start values; CONFIG SET changes them through the setters).
size_t SetMaxIntsetEntries();
size_t SetMaxListpackEntries();
size_t SetMaxListpackValue();
void SetSetMaxIntsetEntries(size_t n);
void SetSetMaxListpackEntries(size_t n);
void SetSetMaxListpackValue(size_t n);

class SetRef {
 public:
  // An empty set whose encoding suits a first member `first` (intset for an integer).
  static void InitCell(CompactValue* cell, std::string_view first);
  explicit SetRef(CompactValue& cell) : cell_(cell) {}

  SetEncoding encoding() const { return static_cast<SetEncoding>(cell_.object_encoding()); }
  size_t Size() const;
  bool Contains(std::string_view member) const;
  bool Add(std::string_view member);
  bool Remove(std::string_view member);

  // fn(std::string_view member) for every member (integers are formatted into a scratch buffer:
  // copy the view if it must outlive the call). fn must not change the set.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    switch (encoding()) {
      case kSetIntset: {
        const char* buf = static_cast<const char*>(cell_.object());
        char scratch[kInt64BufSize];
        for (uint32_t i = 0, n = IntSet::Count(buf); i < n; ++i) {
          fn(std::string_view(scratch, FormatInt64(IntSet::Get(buf, i), scratch)));
        }
        break;
      }
      case kSetListpack: {
        const char* buf = static_cast<const char*>(cell_.object());
        uint32_t off = PackedStrings::Begin();
        const uint32_t end = PackedStrings::End(buf);
        while (off < end) fn(PackedStrings::Next(buf, &off));
        break;
      }
      case kSetTable: {
        const StringTable* t = Table();
        t->ForEach([&](const char* b) { fn(t->Key(b)); });
        break;
      }
    }
  }
  // SSCAN: the packed encodings return everything at once (next cursor 0), as Redis does.
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn) const {
    if (encoding() != kSetTable) {
      ForEach(fn);
      return 0;
    }
    const StringTable* t = Table();
    return t->Scan(cursor, count, [&](const char* b) { fn(t->Key(b)); });
  }
  // A uniformly random member (the set must not be empty); rng() gives random 64-bit numbers.
  template <typename Rng>
  std::string Random(Rng& rng) const {
    switch (encoding()) {
      case kSetIntset: {
        const char* buf = static_cast<const char*>(cell_.object());
        return Int64ToString(IntSet::Get(buf, static_cast<uint32_t>(rng() % Size())));
      }
      case kSetListpack: {
        const char* buf = static_cast<const char*>(cell_.object());
        uint32_t off = PackedStrings::OffsetOf(buf, static_cast<uint32_t>(rng() % Size()));
        return std::string(PackedStrings::Next(buf, &off));
      }
      case kSetTable:
        break;
    }
    const StringTable* t = Table();
    return std::string(t->Key(t->Random(rng)));
  }

  static void Destroy(void* obj, uint8_t encoding);
  static void* Clone(const void* obj, uint8_t encoding);

 private:
  StringTable* Table() const { return static_cast<StringTable*>(cell_.object()); }
  void ConvertTo(SetEncoding to);

  CompactValue& cell_;
};

}  // namespace shardis::core

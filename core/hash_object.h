// The HASH type: field -> value, kept in a value cell (CompactValue object of ValueType::kHash).
//
// Two encodings, named as Redis 7.0 names them for OBJECT ENCODING:
//   kHashListpack  a PackedStrings block of field, value, field, value, ... (one allocation),
//                  while the hash has at most --hash_max_listpack_entries fields and every field
//                  and value is at most --hash_max_listpack_value bytes;
//   kHashTable     a StringTable (one heap block per field+value) past either limit. Like Redis,
//                  a hash never converts back.
// The cell's object pointer is the block or the table itself and its 8-bit encoding tag says
// which: no header object in between.
//
// HashRef is a view over such a cell that performs the operations and switches the encoding in
// place; it is cheap to build per command. Views it returns (fields, values) stay valid until
// the next change to the hash.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/compact_value.h"
#include "core/packed_strings.h"
#include "core/string_table.h"

namespace shardis::core {

enum HashEncoding : uint8_t { kHashListpack = 0, kHashTable = 1 };

// The thresholds (gflags next to their use in hash_object.cc give the start values; CONFIG SET
// changes them through the setters).
size_t HashMaxListpackEntries();
size_t HashMaxListpackValue();
void SetHashMaxListpackEntries(size_t n);
void SetHashMaxListpackValue(size_t n);

class HashRef {
 public:
  // An empty hash in the packed encoding, to be stored with cell.SetObject(kHash, ...).
  static void InitCell(CompactValue* cell);
  explicit HashRef(CompactValue& cell) : cell_(cell) {}

  bool packed() const { return cell_.object_encoding() == kHashListpack; }
  size_t Size() const;
  // The value of field, or false.
  bool Get(std::string_view field, std::string_view* value) const;
  bool Contains(std::string_view field) const {
    std::string_view v;
    return Get(field, &v);
  }
  // Sets field (overwriting unless !overwrite); true when the field was new.
  bool Set(std::string_view field, std::string_view value, bool overwrite = true);
  // Removes field; true when it existed.
  bool Delete(std::string_view field);

  // fn(field, value) for every entry, in storage order. fn must not change the hash.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (packed()) {
      const char* buf = Packed();
      uint32_t off = PackedStrings::Begin();
      const uint32_t end = PackedStrings::End(buf);
      while (off < end) {
        std::string_view f = PackedStrings::Next(buf, &off);
        std::string_view v = PackedStrings::Next(buf, &off);
        fn(f, v);
      }
    } else {
      const StringTable* t = Table();
      t->ForEach([&](const char* b) { fn(t->Key(b), t->Value(b)); });
    }
  }
  // HSCAN: a packed hash returns everything at once (next cursor 0), as Redis does.
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn) const {
    if (packed()) {
      ForEach(fn);
      return 0;
    }
    const StringTable* t = Table();
    return t->Scan(cursor, count, [&](const char* b) { fn(t->Key(b), t->Value(b)); });
  }
  // A uniformly random entry (the hash must not be empty); rng() gives random 64-bit numbers.
  template <typename Rng>
  void Random(Rng& rng, std::string_view* field, std::string_view* value) const {
    if (packed()) {
      const char* buf = Packed();
      uint32_t off = PackedStrings::OffsetOf(buf, 2 * static_cast<uint32_t>(rng() % Size()));
      *field = PackedStrings::Next(buf, &off);
      *value = PackedStrings::Next(buf, &off);
    } else {
      const StringTable* t = Table();
      const char* b = t->Random(rng);
      *field = t->Key(b);
      *value = t->Value(b);
    }
  }

  // For value_object.cc.
  static void Destroy(void* obj, uint8_t encoding);
  static void* Clone(const void* obj, uint8_t encoding);

 private:
  char* Packed() const { return static_cast<char*>(cell_.object()); }
  StringTable* Table() const { return static_cast<StringTable*>(cell_.object()); }
  void ConvertToTable();

  CompactValue& cell_;
};

}  // namespace shardis::core

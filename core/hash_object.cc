#include "core/hash_object.h"

#include <gflags/gflags.h>

#include "core/runtime_setting.h"
#include "core/value_object.h"

DEFINE_uint64(hash_max_listpack_entries, 512,
              "hashes with at most this many fields stay in one packed buffer (listpack)");
DEFINE_uint64(hash_max_listpack_value, 64,
              "hashes whose fields and values are at most this many bytes stay packed");

namespace shardis::core {

namespace {

// The flags' values are copied in at start (ApplyConfigFlags), then CONFIG SET writes them.
RuntimeSetting<size_t> g_hash_max_listpack_entries{512};
RuntimeSetting<size_t> g_hash_max_listpack_value{64};

}  // namespace

size_t HashMaxListpackEntries() { return g_hash_max_listpack_entries.get(); }
size_t HashMaxListpackValue() { return g_hash_max_listpack_value.get(); }
void SetHashMaxListpackEntries(size_t n) { g_hash_max_listpack_entries.set(n); }
void SetHashMaxListpackValue(size_t n) { g_hash_max_listpack_value.set(n); }

void HashRef::InitCell(CompactValue* cell) {
  cell->SetObject(ValueType::kHash, PackedStrings::New(), kHashListpack);
}

size_t HashRef::Size() const {
  return packed() ? PackedStrings::Count(Packed()) / 2 : Table()->size();
}

bool HashRef::Get(std::string_view field, std::string_view* value) const {
  if (packed()) {
    const char* buf = Packed();
    uint32_t off = PackedStrings::Find(buf, field, 2);
    if (off == PackedStrings::kNpos) return false;
    PackedStrings::Next(buf, &off);
    *value = PackedStrings::Next(buf, &off);
    return true;
  }
  const StringTable* t = Table();
  const char* b = t->Find(field);
  if (b == nullptr) return false;
  *value = t->Value(b);
  return true;
}

bool HashRef::Set(std::string_view field, std::string_view value, bool overwrite) {
  if (packed()) {
    const size_t max_value = HashMaxListpackValue();
    if (field.size() > max_value || value.size() > max_value) {
      ConvertToTable();
      return Table()->Insert(field, value, overwrite);
    }
    char* buf = Packed();
    uint32_t off = PackedStrings::Find(buf, field, 2);
    if (off != PackedStrings::kNpos) {
      if (!overwrite) return false;
      PackedStrings::Next(buf, &off);  // to the value
      cell_.ReleaseObject();
      buf = PackedStrings::Replace(buf, off, value);
      cell_.SetObject(ValueType::kHash, buf, kHashListpack);
      return false;
    }
    cell_.ReleaseObject();
    buf = PackedStrings::Append(PackedStrings::Append(buf, field), value);
    cell_.SetObject(ValueType::kHash, buf, kHashListpack);
    if (PackedStrings::Count(buf) / 2 > HashMaxListpackEntries()) ConvertToTable();
    return true;
  }
  return Table()->Insert(field, value, overwrite);
}

bool HashRef::Delete(std::string_view field) {
  if (packed()) {
    char* buf = Packed();
    const uint32_t off = PackedStrings::Find(buf, field, 2);
    if (off == PackedStrings::kNpos) return false;
    PackedStrings::Erase(buf, off, 2);
    return true;
  }
  return Table()->Erase(field);
}

void HashRef::ConvertToTable() {
  char* buf = Packed();
  StringTable* t = ShardNew<StringTable>(/*with_values=*/true);
  t->Reserve(PackedStrings::Count(buf) / 2 + 1);
  uint32_t off = PackedStrings::Begin();
  const uint32_t end = PackedStrings::End(buf);
  while (off < end) {
    std::string_view f = PackedStrings::Next(buf, &off);
    std::string_view v = PackedStrings::Next(buf, &off);
    t->Insert(f, v);
  }
  // SetObject frees the packed block through DestroyObject.
  cell_.SetObject(ValueType::kHash, t, kHashTable);
}

void HashRef::Destroy(void* obj, uint8_t encoding) {
  if (encoding == kHashListpack) {
    PackedStrings::Free(static_cast<char*>(obj));
  } else {
    ShardDelete(static_cast<StringTable*>(obj));
  }
}

void* HashRef::Clone(const void* obj, uint8_t encoding) {
  if (encoding == kHashListpack) return PackedStrings::Clone(static_cast<const char*>(obj));
  const StringTable* src = static_cast<const StringTable*>(obj);
  StringTable* t = ShardNew<StringTable>(/*with_values=*/true);
  t->Reserve(src->size());
  src->ForEach([&](const char* b) { t->Insert(src->Key(b), src->Value(b)); });
  return t;
}

}  // namespace shardis::core

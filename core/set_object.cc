#include "core/set_object.h"

#include <gflags/gflags.h>

#include "core/runtime_setting.h"
#include "core/value_object.h"

DEFINE_uint64(set_max_intset_entries, 512,
              "sets of at most this many integers stay in one sorted integer array (intset)");
DEFINE_uint64(set_max_listpack_entries, 128,
              "sets of at most this many members stay in one packed buffer (listpack)");
DEFINE_uint64(set_max_listpack_value, 64,
              "sets whose members are at most this many bytes stay packed (listpack)");

namespace shardis::core {

namespace {

// The flags' values are copied in at start (ApplyConfigFlags), then CONFIG SET writes them.
RuntimeSetting<size_t> g_set_max_intset_entries{512};
RuntimeSetting<size_t> g_set_max_listpack_entries{128};
RuntimeSetting<size_t> g_set_max_listpack_value{64};

}  // namespace

size_t SetMaxIntsetEntries() { return g_set_max_intset_entries.get(); }
size_t SetMaxListpackEntries() { return g_set_max_listpack_entries.get(); }
size_t SetMaxListpackValue() { return g_set_max_listpack_value.get(); }
void SetSetMaxIntsetEntries(size_t n) { g_set_max_intset_entries.set(n); }
void SetSetMaxListpackEntries(size_t n) { g_set_max_listpack_entries.set(n); }
void SetSetMaxListpackValue(size_t n) { g_set_max_listpack_value.set(n); }

void SetRef::InitCell(CompactValue* cell, std::string_view first) {
  int64_t v;
  if (ParseInt64(first, &v) && SetMaxIntsetEntries() > 0) {
    cell->SetObject(ValueType::kSet, IntSet::New(), kSetIntset);
  } else if (first.size() <= SetMaxListpackValue() && SetMaxListpackEntries() > 0) {
    cell->SetObject(ValueType::kSet, PackedStrings::New(), kSetListpack);
  } else {
    cell->SetObject(ValueType::kSet, ShardNew<StringTable>(/*with_values=*/false), kSetTable);
  }
}

size_t SetRef::Size() const {
  switch (encoding()) {
    case kSetIntset:
      return IntSet::Count(static_cast<const char*>(cell_.object()));
    case kSetListpack:
      return PackedStrings::Count(static_cast<const char*>(cell_.object()));
    case kSetTable:
      break;
  }
  return Table()->size();
}

bool SetRef::Contains(std::string_view member) const {
  switch (encoding()) {
    case kSetIntset: {
      int64_t v;
      return ParseInt64(member, &v) &&
             IntSet::Contains(static_cast<const char*>(cell_.object()), v);
    }
    case kSetListpack:
      return PackedStrings::Find(static_cast<const char*>(cell_.object()), member, 1) !=
             PackedStrings::kNpos;
    case kSetTable:
      break;
  }
  return Table()->Find(member) != nullptr;
}

bool SetRef::Add(std::string_view member) {
  switch (encoding()) {
    case kSetIntset: {
      int64_t v;
      if (ParseInt64(member, &v)) {
        char* buf = static_cast<char*>(cell_.ReleaseObject());
        bool added;
        buf = IntSet::Insert(buf, v, &added);
        cell_.SetObject(ValueType::kSet, buf, kSetIntset);
        if (IntSet::Count(buf) > SetMaxIntsetEntries()) ConvertTo(kSetTable);
        return added;
      }
      // A non-integer member: packed strings while small enough (Redis 7.2's rule), else a table.
      if (Size() < SetMaxListpackEntries() && member.size() <= SetMaxListpackValue()) {
        ConvertTo(kSetListpack);
      } else {
        ConvertTo(kSetTable);
      }
      return Add(member);
    }
    case kSetListpack: {
      char* buf = static_cast<char*>(cell_.object());
      if (PackedStrings::Find(buf, member, 1) != PackedStrings::kNpos) return false;
      if (member.size() > SetMaxListpackValue() ||
          PackedStrings::Count(buf) + 1 > SetMaxListpackEntries()) {
        ConvertTo(kSetTable);
        return Table()->Insert(member);
      }
      cell_.ReleaseObject();
      cell_.SetObject(ValueType::kSet, PackedStrings::Append(buf, member), kSetListpack);
      return true;
    }
    case kSetTable:
      break;
  }
  return Table()->Insert(member);
}

bool SetRef::Remove(std::string_view member) {
  switch (encoding()) {
    case kSetIntset: {
      int64_t v;
      return ParseInt64(member, &v) && IntSet::Remove(static_cast<char*>(cell_.object()), v);
    }
    case kSetListpack: {
      char* buf = static_cast<char*>(cell_.object());
      const uint32_t off = PackedStrings::Find(buf, member, 1);
      if (off == PackedStrings::kNpos) return false;
      PackedStrings::Erase(buf, off, 1);
      return true;
    }
    case kSetTable:
      break;
  }
  return Table()->Erase(member);
}

void SetRef::ConvertTo(SetEncoding to) {
  void* obj = nullptr;
  if (to == kSetListpack) {
    char* buf = PackedStrings::New(Size() * 8);
    ForEach([&](std::string_view m) { buf = PackedStrings::Append(buf, m); });
    obj = buf;
  } else {
    StringTable* t = ShardNew<StringTable>(/*with_values=*/false);
    t->Reserve(Size() + 1);
    ForEach([&](std::string_view m) { t->Insert(m); });
    obj = t;
  }
  // SetObject frees the old encoding through DestroyObject.
  cell_.SetObject(ValueType::kSet, obj, to);
}

void SetRef::Destroy(void* obj, uint8_t encoding) {
  switch (encoding) {
    case kSetIntset:
      IntSet::Free(static_cast<char*>(obj));
      return;
    case kSetListpack:
      PackedStrings::Free(static_cast<char*>(obj));
      return;
    default:
      ShardDelete(static_cast<StringTable*>(obj));
  }
}

void* SetRef::Clone(const void* obj, uint8_t encoding) {
  switch (encoding) {
    case kSetIntset:
      return IntSet::Clone(static_cast<const char*>(obj));
    case kSetListpack:
      return PackedStrings::Clone(static_cast<const char*>(obj));
    default:
      break;
  }
  const StringTable* src = static_cast<const StringTable*>(obj);
  StringTable* t = ShardNew<StringTable>(/*with_values=*/false);
  t->Reserve(src->size());
  src->ForEach([&](const char* b) { t->Insert(src->Key(b)); });
  return t;
}

}  // namespace shardis::core

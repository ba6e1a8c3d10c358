#include "core/value_object.h"

#include <glog/logging.h>

#include "core/hash_object.h"
#include "core/list.h"
#include "core/set_object.h"
#include "core/stream.h"
#include "core/zset.h"

namespace shardis::core {

// Each data type adds its case to the three switches below when it lands.

void DestroyObject(ValueType type, void* obj, uint8_t encoding) {
  switch (type) {
    case ValueType::kHash:
      return HashRef::Destroy(obj, encoding);
    case ValueType::kSet:
      return SetRef::Destroy(obj, encoding);
    case ValueType::kString:
      break;
    case ValueType::kList:
      ShardDelete(static_cast<List*>(obj));
      return;
    case ValueType::kZSet:
      ShardDelete(static_cast<ZSet*>(obj));
      return;
    case ValueType::kStream:
      ShardDelete(static_cast<Stream*>(obj));
      return;
    default:
      break;
  }
  LOG(FATAL) << "DestroyObject: no object type " << static_cast<int>(type);
}

size_t ObjectMemoryBytes(const CompactValue& value, size_t samples) {
  if (value.encoding() != CompactValue::Encoding::kObject) return 0;
  const void* obj = value.object();
  const size_t obj_bytes = ShardHeap::UsableSize(obj);
  switch (value.type()) {
    case ValueType::kHash:
      if (value.object_encoding() == kHashListpack) return obj_bytes;
      return obj_bytes + static_cast<const StringTable*>(obj)->MemoryBytes(samples);
    case ValueType::kSet:
      if (value.object_encoding() != kSetTable) return obj_bytes;  // one intset or packed block
      return obj_bytes + static_cast<const StringTable*>(obj)->MemoryBytes(samples);
    case ValueType::kList:
      return obj_bytes + static_cast<const List*>(obj)->NodeBytes(samples);
    case ValueType::kZSet:
      return obj_bytes + static_cast<const ZSet*>(obj)->MallocBytes(samples);
    case ValueType::kStream:
      return obj_bytes + static_cast<const Stream*>(obj)->MallocBytes(samples);
    default:
      return obj_bytes;
  }
}

size_t FreeEffort(const CompactValue& value) {
  if (value.IsString()) return 1;
  const void* obj = value.object();
  switch (value.type()) {
    case ValueType::kList: {
      const List* list = static_cast<const List*>(obj);
      return list->listpack() ? 1 : list->node_count();  // Redis: the quicklist's node count
    }
    case ValueType::kSet:
      return value.object_encoding() == kSetTable ? static_cast<const StringTable*>(obj)->size()
                                                  : 1;
    case ValueType::kHash:
      return value.object_encoding() == kHashTable ? static_cast<const StringTable*>(obj)->size()
                                                   : 1;
    case ValueType::kZSet: {
      const ZSet* zset = static_cast<const ZSet*>(obj);
      return zset->encoding() == ZSet::kLarge ? zset->size() : 1;
    }
    case ValueType::kStream: {
      // Redis counts its radix tree's nodes, of which there are at least as many as listpacks:
      // the node count is the nearest figure shardis has (a lower bound of Redis').
      const Stream* stream = static_cast<const Stream*>(obj);
      size_t effort = stream->node_count();
      const auto& groups = stream->groups();
      if (!groups.empty()) effort += groups.size() * (1 + groups.begin()->second->pel.size());
      return effort;
    }
    default:
      return 1;
  }
}

size_t FreeSomeElements(CompactValue& value, size_t max) {
  if (value.IsString()) return 0;
  const bool table = (value.type() == ValueType::kSet && value.object_encoding() == kSetTable) ||
                     (value.type() == ValueType::kHash && value.object_encoding() == kHashTable);
  return table ? static_cast<StringTable*>(value.object())->ReleaseSome(max) : 0;
}

std::string_view EncodingName(const CompactValue& value) {
  if (value.raw()) return "raw";  // changed in place: Redis' raw object, whatever it holds
  switch (value.encoding()) {
    case CompactValue::Encoding::kInt:
      return "int";
    case CompactValue::Encoding::kInline:
    case CompactValue::Encoding::kPacked:
      return "embstr";
    case CompactValue::Encoding::kHeap:
      // Redis keeps strings of up to 44 bytes in one allocation with the object (embstr).
      return value.StringSize() <= 44 ? "embstr" : "raw";
    case CompactValue::Encoding::kObject:
      break;
  }
  switch (value.type()) {
    case ValueType::kList:
      // Redis 7.2's name (7.0 says "quicklist" for every list): a label, see List::listpack().
      return static_cast<const List*>(value.object())->listpack() ? "listpack" : "quicklist";
    case ValueType::kZSet:
      return static_cast<const ZSet*>(value.object())->encoding() == ZSet::kPacked ? "listpack"
                                                                                    : "skiplist";
    case ValueType::kHash:
      return value.object_encoding() == kHashListpack ? "listpack" : "hashtable";
    case ValueType::kSet:
      switch (value.object_encoding()) {
        case kSetIntset:
          return "intset";
        case kSetListpack:
          return "listpack";  // Redis 7.2's name; 7.0 has no packed sets of strings
        default:
          return "hashtable";
      }
    case ValueType::kStream:
      return "stream";
    default:
      break;
  }
  return "unknown";
}

int64_t ObjectRefCount(const CompactValue& value) {
  constexpr int64_t kSharedIntegers = 10000;
  constexpr int64_t kSharedRefCount = 2147483647;
  // A string changed in place is an object of its own (raw), even when it holds such a number.
  return value.IsInt() && !value.raw() && value.AsInt() >= 0 && value.AsInt() < kSharedIntegers
             ? kSharedRefCount
             : 1;
}

CompactValue CloneObject(const CompactValue& value) {
  const uint8_t enc = value.object_encoding();
  switch (value.type()) {
    case ValueType::kList:
      return CompactValue::FromObject(ValueType::kList,
                                      static_cast<const List*>(value.object())->Clone(),
                                      value.object_encoding());
    case ValueType::kZSet:
      return CompactValue::FromObject(ValueType::kZSet,
                                      static_cast<const ZSet*>(value.object())->Clone());
    case ValueType::kHash:
      return CompactValue::FromObject(ValueType::kHash, HashRef::Clone(value.object(), enc), enc);
    case ValueType::kSet:
      return CompactValue::FromObject(ValueType::kSet, SetRef::Clone(value.object(), enc), enc);
    case ValueType::kStream:
      return CompactValue::FromObject(ValueType::kStream,
                                      static_cast<const Stream*>(value.object())->Clone());
    default:
      break;
  }
  LOG(FATAL) << "CloneObject: no object type " << static_cast<int>(value.type());
  return CompactValue();
}

}  // namespace shardis::core

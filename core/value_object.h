// The objects a CompactValue cell may own (lists, hashes, sets, sorted sets, streams) and the few
// operations every one of them supports, dispatched on the cell's ValueType by one switch each in
// value_object.cc. Each data type lives in its own files under core/ (its packed and large
// encodings); this file only joins them to the cell.
//
// Objects live on the shard's heap: create them with ShardNew<T>(...) and the cell frees them
// with ShardDelete (through DestroyObject), so INFO used_memory counts them exactly. Containers
// inside an object use ShardAllocator<T>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>
#include <utility>

#include "core/compact_value.h"
#include "core/shard_heap.h"

namespace shardis::core {

// Frees an object that a cell owned (called by CompactValue; nothing else should need it).
void DestroyObject(ValueType type, void* obj, uint8_t encoding);

// MEMORY USAGE's estimate of the heap bytes an object value owns: the object and every block it
// points to (usable sizes on the shard heap). A large collection is estimated from its first
// `samples` elements (0 = all), as Redis' objectComputeSize. Strings: 0 (the cell tells).
size_t ObjectMemoryBytes(const CompactValue& value, size_t samples);

// The work of freeing a value, in Redis' units (lazyfreeGetFreeEffort): the nodes of a list past
// its packed form, the members of a set or hash table, of a skiplist, a stream's nodes plus its
// consumer groups times (1 + the first group's pending entries); 1 for strings and packed
// encodings (one block). The lazy-free queue (shard/lazy_free.h) takes values above 64.
size_t FreeEffort(const CompactValue& value);

// Lazy freeing in pieces: frees up to `max` elements of a set or hash in its table encoding, a
// value on its way to destruction that nothing reads any more; returns how many. 0: nothing left
// to free this way (the other types and encodings are freed whole when the cell goes).
size_t FreeSomeElements(CompactValue& value, size_t max);

// OBJECT ENCODING's name for a value: "embstr"/"int"/"raw" for strings, the encoding of an
// object ("listpack", "quicklist", "hashtable", "intset", "skiplist", "stream").
std::string_view EncodingName(const CompactValue& value);

// OBJECT REFCOUNT's (and DEBUG OBJECT's) count: Redis 7.0 shares the integers 0..9999
// (OBJ_SHARED_INTEGERS) between keys and reports their refcount as INT_MAX; every other value
// has one owner.
int64_t ObjectRefCount(const CompactValue& value);

// A deep copy of an object value (COPY), on the calling thread's heap. Strings are copied by the
// caller (CompactValue::FromString).
CompactValue CloneObject(const CompactValue& value);

// A deep copy, on the calling thread's heap, of an object that another shard owns (cross-shard
// RENAME and COPY). It only reads the object; the caller guarantees that nothing changes or frees
// it meanwhile (the transaction holds its key).
inline CompactValue CloneForeignObject(ValueType type, void* obj, uint8_t encoding) {
  CompactValue view = CompactValue::FromObject(type, obj, encoding);
  CompactValue copy = CloneObject(view);
  view.ReleaseObject();  // the view never owned it
  return copy;
}

// ---- Allocation on the calling thread's ShardHeap.

template <typename T, typename... Args>
T* ShardNew(Args&&... args) {
  void* p = ShardHeap::Current()->Allocate(sizeof(T));
  return new (p) T(std::forward<Args>(args)...);
}

template <typename T>
void ShardDelete(T* p) {
  if (p == nullptr) return;
  p->~T();
  ShardHeap::Current()->Free(p);
}

// A standard allocator over ShardHeap::Current(), for containers inside objects. Stateless: a
// container must be used (and destroyed) on the shard thread that owns it, like every cell.
template <typename T>
struct ShardAllocator {
  using value_type = T;
  ShardAllocator() noexcept = default;
  template <typename U>
  ShardAllocator(const ShardAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(ShardHeap::Current()->Allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { ShardHeap::Current()->Free(p); }
  template <typename U>
  bool operator==(const ShardAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace shardis::core

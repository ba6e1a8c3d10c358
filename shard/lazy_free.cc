#include "shard/lazy_free.h"

#include <atomic>
#include <utility>

#include "core/cycle_clock.h"
#include "core/value_object.h"

namespace shardis::shard {

namespace {

// Elements of a set or hash table freed between two looks at the clock: ~20-50 us of work.
constexpr size_t kElementsPerPiece = 1024;

constexpr size_t kNumPaths = size_t(LazyFreePath::kUserFlush) + 1;
std::atomic<bool> g_lazy_free_on[kNumPaths] = {};  // Redis 7.2: every setting `no`

}  // namespace

bool LazyFreeOn(LazyFreePath path) {
  return g_lazy_free_on[size_t(path)].load(std::memory_order_relaxed);
}
void SetLazyFree(LazyFreePath path, bool on) {
  g_lazy_free_on[size_t(path)].store(on, std::memory_order_relaxed);
}

bool LazyFreeQueue::TakeIfCostly(core::CompactValue& cell) {
  if (cell.IsString() || core::FreeEffort(cell) <= kLazyFreeThreshold) return false;
  const uint8_t flags = cell.flags();
  // A sampled estimate (16 elements): exact bytes would cost the walk this queue is to avoid.
  const size_t bytes = core::ObjectMemoryBytes(cell, /*samples=*/16);
  values_.push_back(Value{std::move(cell), bytes});
  value_bytes_ += bytes;
  cell.set_flags(flags);  // the table's bookkeeping (has-expiry) stays true until it erases
  ++pending_;
  return true;
}

void LazyFreeQueue::TakeTables(PrimeTable prime, ExpireTable expire, McMetaTable mc_meta) {
  pending_ += prime.size();
  tables_.push_back(Tables{std::move(prime), std::move(expire), std::move(mc_meta)});
}

bool LazyFreeQueue::EraseSome(Tables& t, uint64_t deadline) {
  // A walk erasing every entry it is handed erases every entry: no insert happens meanwhile.
  while (!t.prime.empty()) {
    t.cursor = t.prime.Traverse(t.cursor, [&](PrimeTable::Iterator it) {
      t.prime.Erase(it);
      --pending_;
      ++freed_;
    });
    if (core::CycleClock::Now() >= deadline) break;
  }
  return t.prime.empty();
}

bool LazyFreeQueue::FreeUntil(uint64_t deadline) {
  while (!values_.empty()) {
    // A set or hash table goes in pieces of kElementsPerPiece, the clock read after each (a
    // table of 1,000,000 members would hold the thread some tens of ms in one go); the other
    // values whole.
    Value& v = values_.back();
    while (core::FreeSomeElements(v.cell, kElementsPerPiece) == kElementsPerPiece) {
      if (core::CycleClock::Now() >= deadline) return false;  // maybe more to free
    }
    value_bytes_ -= v.bytes;
    values_.pop_back();  // frees the value
    --pending_;
    ++freed_;
    if (core::CycleClock::Now() >= deadline) return empty();
  }
  // Give the vector's own block back once a burst is over.
  if (values_.capacity() > 1024) std::vector<Value>().swap(values_);
  while (!tables_.empty()) {
    if (!EraseSome(tables_.back(), deadline)) return false;
    // The keys of the expire and memcached tables are small: cleared in one go.
    tables_.pop_back();
    if (core::CycleClock::Now() >= deadline) break;
  }
  return empty();
}

void LazyFreeQueue::Clear() {
  freed_ += pending_;
  pending_ = 0;
  value_bytes_ = 0;
  values_.clear();
  tables_.clear();
}

}  // namespace shardis::shard

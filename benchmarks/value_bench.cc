// Micro-benchmarks of the value cell: HashBytes against absl::HashOf (and libstdc++'s std::hash)
// for typical key sizes, CompactValue::EqualsString per encoding, FromString/SetString.
//
//   ninja -C build/release value_bench && build/release/benchmarks/value_bench
//
// Hash benchmarks come in two forms: "Thru" hashes 1024 independent keys in a row (the batched
// path, where the CPU overlaps consecutive hashes), "Lat" makes each key depend on the previous
// hash (a lookup whose next step waits for the hash).
#include <absl/hash/hash.h>
#include <benchmark/benchmark.h>
#include <mimalloc.h>

#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/compact_value.h"
#include "core/shard_heap.h"
#include "core/string_util.h"

namespace shardis::core {
namespace {

constexpr size_t kKeys = 1024;  // a power of two: the latency chain masks the hash

std::vector<std::string> RandomKeys(size_t len) {
  std::mt19937_64 rng(len);
  std::vector<std::string> keys(kKeys, std::string(len, ' '));
  for (std::string& k : keys) {
    for (char& c : k) c = static_cast<char>('!' + rng() % 90);
  }
  return keys;
}

struct OurHash {
  uint64_t operator()(std::string_view s) const { return HashBytes(s); }
};
struct AbslHash {
  uint64_t operator()(std::string_view s) const { return absl::HashOf(ToAbsl(s)); }
};
struct StdHash {
  uint64_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

template <typename Hash>
void BM_HashThru(benchmark::State& state) {
  const std::vector<std::string> keys = RandomKeys(state.range(0));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  Hash hash;
  for (auto _ : state) {
    for (std::string_view k : views) benchmark::DoNotOptimize(hash(k));
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
  state.SetBytesProcessed(state.iterations() * kKeys * state.range(0));
}

template <typename Hash>
void BM_HashLat(benchmark::State& state) {
  const std::vector<std::string> keys = RandomKeys(state.range(0));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  Hash hash;
  uint64_t h = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kKeys; ++i) h = hash(views[h & (kKeys - 1)]);
  }
  benchmark::DoNotOptimize(h);
  state.SetItemsProcessed(state.iterations() * kKeys);
}

#define HASH_SIZES ->Arg(8)->Arg(16)->Arg(32)->Arg(128)
BENCHMARK(BM_HashThru<OurHash>) HASH_SIZES;
BENCHMARK(BM_HashThru<AbslHash>) HASH_SIZES;
BENCHMARK(BM_HashThru<StdHash>) HASH_SIZES;
BENCHMARK(BM_HashLat<OurHash>) HASH_SIZES;
BENCHMARK(BM_HashLat<AbslHash>) HASH_SIZES;
BENCHMARK(BM_HashLat<StdHash>) HASH_SIZES;

// CompactValue::Hash of a key cell (int keys format first).
void BM_CellHash(benchmark::State& state) {
  std::vector<CompactValue> cells;
  for (size_t i = 0; i < kKeys; ++i) {
    if (state.range(0) == 0) {
      cells.push_back(CompactValue::FromString(std::to_string(i * 7919)));
    } else if (state.range(0) == 1) {
      cells.push_back(CompactValue::FromKey(std::to_string(i * 7919)));
    } else {
      cells.push_back(CompactValue::FromString(RandomKeys(state.range(0))[i]));
    }
  }
  for (auto _ : state) {
    for (const CompactValue& c : cells) benchmark::DoNotOptimize(c.Hash());
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
  state.SetLabel(state.range(0) == 0   ? "digits, FromString (int)"
                 : state.range(0) == 1 ? "digits, FromKey (inline)"
                                       : "string keys");
}
BENCHMARK(BM_CellHash)->Arg(0)->Arg(1)->Arg(12)->Arg(32);

// EqualsString on a match (the full comparison): 0 = int, else a string of that length.
void BM_EqualsString(benchmark::State& state) {
  std::vector<std::string> strings;
  if (state.range(0) == 0) {
    for (size_t i = 0; i < kKeys; ++i) strings.push_back(std::to_string(1000000 + i * 7919));
  } else {
    strings = RandomKeys(state.range(0));
  }
  std::vector<CompactValue> cells;
  for (const std::string& s : strings) {
    cells.push_back(state.range(1) ? CompactValue::FromKey(s) : CompactValue::FromString(s));
  }
  for (auto _ : state) {
    for (size_t i = 0; i < kKeys; ++i) benchmark::DoNotOptimize(cells[i].EqualsString(strings[i]));
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
  state.SetLabel(cells[0].IsInt()      ? "int"
                 : cells[0].IsInline() ? "inline"
                 : cells[0].IsPacked() ? "packed"
                                       : "heap");
}
BENCHMARK(BM_EqualsString)
    ->Args({0, 0})
    ->Args({0, 1})  // the same digits as a FromKey cell
    ->Args({8, 0})
    ->Args({15, 0})
    ->Args({16, 0})
    ->Args({32, 0});

// The same comparison between two std::string_views, for reference.
void BM_StringViewEquals(benchmark::State& state) {
  const std::vector<std::string> a = RandomKeys(state.range(0)), b = a;
  for (auto _ : state) {
    for (size_t i = 0; i < kKeys; ++i) {
      benchmark::DoNotOptimize(std::string_view(a[i]) == std::string_view(b[i]));
    }
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}
BENCHMARK(BM_StringViewEquals)->Arg(8)->Arg(15)->Arg(32);

// FromString and destruction of a 10-byte (inline) or 100-byte (heap) value, and an int.
void BM_FromString(benchmark::State& state) {
  const std::string s = state.range(0) == 0 ? "1234567890" : std::string(state.range(0), 'v');
  for (auto _ : state) {
    CompactValue cv = CompactValue::FromString(s);
    benchmark::DoNotOptimize(cv);
  }
  state.SetLabel(state.range(0) == 0 ? "int" : state.range(0) <= 15 ? "inline" : "heap");
}
BENCHMARK(BM_FromString)->Arg(0)->Arg(10)->Arg(100);

// What the accounting costs: ShardHeap::Allocate+Free (two mi_usable_size lookups and the
// counters) against bare mi_heap_malloc+mi_free on the same heap.
void BM_ShardHeapAllocFree(benchmark::State& state) {
  ShardHeap heap;
  for (auto _ : state) {
    void* p = heap.Allocate(state.range(0));
    benchmark::DoNotOptimize(p);
    heap.Free(p);
  }
}
BENCHMARK(BM_ShardHeapAllocFree)->Arg(100);

void BM_MiHeapMallocFree(benchmark::State& state) {
  mi_heap_t* heap = mi_heap_new();
  for (auto _ : state) {
    void* p = mi_heap_malloc(heap, state.range(0));
    benchmark::DoNotOptimize(p);
    mi_free(p);
  }
  mi_heap_delete(heap);
}
BENCHMARK(BM_MiHeapMallocFree)->Arg(100);

// SET over an existing value: the heap block is reused when the size class is the same.
void BM_SetStringOverwrite(benchmark::State& state) {
  const std::string a(state.range(0), 'a'), b(state.range(0), 'b');
  CompactValue cv = CompactValue::FromString(a);
  bool flip = false;
  for (auto _ : state) {
    cv.SetString((flip = !flip) ? b : a);
    benchmark::DoNotOptimize(cv);
  }
}
BENCHMARK(BM_SetStringOverwrite)->Arg(10)->Arg(100);

// Materialising a value for a reply.
void BM_AppendTo(benchmark::State& state) {
  CompactValue cv = state.range(0) == 0
                        ? CompactValue::FromInt(1234567890123)
                        : CompactValue::FromString(std::string(state.range(0), 'g'));
  std::string out;
  out.reserve(256);
  for (auto _ : state) {
    out.clear();
    cv.AppendTo(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(state.range(0) == 0 ? "int" : state.range(0) <= 15 ? "inline" : "heap");
}
BENCHMARK(BM_AppendTo)->Arg(0)->Arg(10)->Arg(100);

}  // namespace
}  // namespace shardis::core

BENCHMARK_MAIN();

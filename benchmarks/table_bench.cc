// DashTable micro-benchmarks, with absl::flat_hash_map for reference.
//
// BM_FindBatch*: batches of random lookups in a table much larger than the last-level cache (16M
// entries of 16-byte key and value cells: ~0.9 GB, against a 32 MiB L3 on the development
// machines), as a shard executes a pipelined batch. Modes:
//   0  one by one: hash, find, hash, find, ...
//   1  prefetch: hash every key and Prefetch its control bytes, then find them all
//   2  two-stage: as 1, then a pass that matches fingerprints and prefetches the slots, then find
// BM_FindInCache: one lookup at a time in a table that fits in L2 (the hot-path instruction cost).
// BM_Insert: filling an empty table with N random keys.
//
//   ninja -C build/release table_bench && build/release/benchmarks/table_bench
//   TABLE_BENCH_ENTRIES=4000000 build/release/benchmarks/table_bench   # smaller table
#include <absl/container/flat_hash_map.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "core/dash_table.h"

namespace shardis::core {
namespace {

struct Cell {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Cell&) const = default;
};

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// A folded 64x64->128 multiply: cheap and good enough for random cells. Both tables use it.
inline uint64_t HashCell(const Cell& c) {
  __uint128_t m = __uint128_t(c.lo ^ 0x9e3779b97f4a7c15ULL) * (c.hi ^ 0xc2b2ae3d27d4eb4fULL);
  return uint64_t(m) ^ uint64_t(m >> 64);
}
Cell KeyCell(uint64_t i) { return Cell{Mix(i), Mix(i ^ 0x5555555555555555ULL)}; }

struct CellPolicy {
  static constexpr bool kTriviallyRelocatable = true;
  static uint64_t Hash(const Cell& c) { return HashCell(c); }
  static bool Equal(const Cell& key, const Cell& probe) { return key == probe; }
};
struct CellHasher {
  size_t operator()(const Cell& c) const { return HashCell(c); }
};
using Dash = DashTable<Cell, Cell, CellPolicy>;
using Absl = absl::flat_hash_map<Cell, Cell, CellHasher>;

size_t BigEntries() {
  const char* env = std::getenv("TABLE_BENCH_ENTRIES");
  return env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(16) << 20;
}

// Built once, on first use, shared by all benchmarks of a kind.
struct BigTables {
  size_t entries = BigEntries();
  std::unique_ptr<Dash> dash;
  std::unique_ptr<Absl> absl;
  std::vector<Cell> stream;  // lookup keys: random present keys, read sequentially
};
BigTables& Big() {
  static BigTables t;
  if (t.stream.empty()) {
    std::mt19937_64 rng(42);
    t.stream.resize(size_t(1) << 20);
    for (Cell& c : t.stream) c = KeyCell(rng() % t.entries);
  }
  return t;
}
Dash& BigDash() {
  BigTables& t = Big();
  if (!t.dash) {
    t.dash = std::make_unique<Dash>();
    for (size_t i = 0; i < t.entries; ++i) {
      Cell k = KeyCell(i);
      t.dash->FindOrInsert(HashCell(k), k, [&] { return k; }).first.value() = Cell{i, i};
    }
  }
  return *t.dash;
}
Absl& BigAbsl() {
  BigTables& t = Big();
  if (!t.absl) {
    t.absl = std::make_unique<Absl>();
    for (size_t i = 0; i < t.entries; ++i) (*t.absl)[KeyCell(i)] = Cell{i, i};
  }
  return *t.absl;
}

void SetCounters(benchmark::State& state, size_t batch, size_t memory) {
  state.SetItemsProcessed(int64_t(state.iterations() * batch));
  state.counters["per_lookup"] = benchmark::Counter(
      double(batch), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["table_MB"] = double(memory) / 1e6;
}

void BM_FindBatchDash(benchmark::State& state) {
  const size_t batch = size_t(state.range(0));
  const int mode = int(state.range(1));
  Dash& table = BigDash();
  const std::vector<Cell>& stream = Big().stream;
  size_t pos = 0;
  uint64_t hashes[64];
  uint64_t sum = 0;
  for (auto _ : state) {
    if (pos + batch > stream.size()) pos = 0;
    const Cell* keys = &stream[pos];
    pos += batch;
    if (mode == 0) {
      for (size_t i = 0; i < batch; ++i) sum += table.Find(HashCell(keys[i]), keys[i]).value().lo;
      continue;
    }
    for (size_t i = 0; i < batch; ++i) {
      hashes[i] = HashCell(keys[i]);
      table.Prefetch(hashes[i]);
    }
    if (mode == 2) {
      for (size_t i = 0; i < batch; ++i) table.PrefetchSlots(hashes[i]);
    }
    for (size_t i = 0; i < batch; ++i) sum += table.Find(hashes[i], keys[i]).value().lo;
  }
  benchmark::DoNotOptimize(sum);
  SetCounters(state, batch, table.memory_bytes());
}

void BM_FindBatchAbsl(benchmark::State& state) {
  const size_t batch = size_t(state.range(0));
  const int mode = int(state.range(1));
  Absl& table = BigAbsl();
  const std::vector<Cell>& stream = Big().stream;
  size_t pos = 0;
  uint64_t hashes[64];
  uint64_t sum = 0;
  for (auto _ : state) {
    if (pos + batch > stream.size()) pos = 0;
    const Cell* keys = &stream[pos];
    pos += batch;
    if (mode == 0) {
      for (size_t i = 0; i < batch; ++i) sum += table.find(keys[i])->second.lo;
      continue;
    }
    // absl's prefetch hashes again and fetches the probe start (control bytes and first slot).
    for (size_t i = 0; i < batch; ++i) {
      hashes[i] = HashCell(keys[i]);
      table.prefetch(keys[i]);
    }
    for (size_t i = 0; i < batch; ++i) sum += table.find(keys[i], hashes[i])->second.lo;
  }
  benchmark::DoNotOptimize(sum);
  SetCounters(state, batch, table.capacity() * (sizeof(Absl::value_type) + 1));
}

void FindBatchArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "mode"});
  for (int batch : {16, 32}) {
    for (int mode : {0, 1, 2}) b->Args({batch, mode});
  }
}
BENCHMARK(BM_FindBatchDash)->Apply(FindBatchArgs);
BENCHMARK(BM_FindBatchAbsl)
    ->ArgNames({"batch", "mode"})
    ->Args({16, 0})
    ->Args({16, 1})
    ->Args({32, 0})
    ->Args({32, 1});

// The hot path without cache misses: 16K entries (~0.6 MB of slots) fit in L2.
template <typename Table>
void FindInCache(benchmark::State& state, Table& table, std::vector<Cell>& keys) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> order(4096);
  for (uint32_t& o : order) o = uint32_t(rng() % keys.size());
  size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    const Cell& k = keys[order[i++ & 4095]];
    if constexpr (std::is_same_v<Table, Dash>) {
      sum += table.Find(HashCell(k), k).value().lo;
    } else {
      sum += table.find(k)->second.lo;
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(int64_t(state.iterations()));
}
void BM_FindInCacheDash(benchmark::State& state) {
  Dash table;
  std::vector<Cell> keys;
  for (uint64_t i = 0; i < 16384; ++i) {
    keys.push_back(KeyCell(i));
    table.FindOrInsert(HashCell(keys.back()), keys.back(), [&] { return keys.back(); });
  }
  FindInCache(state, table, keys);
}
void BM_FindInCacheAbsl(benchmark::State& state) {
  Absl table;
  std::vector<Cell> keys;
  for (uint64_t i = 0; i < 16384; ++i) {
    keys.push_back(KeyCell(i));
    table[keys.back()] = Cell{};
  }
  FindInCache(state, table, keys);
}
BENCHMARK(BM_FindInCacheDash);
BENCHMARK(BM_FindInCacheAbsl);

// Filling an empty table with N random keys (FindOrInsert, as SET does). Per insert.
void BM_InsertDash(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  for (auto _ : state) {
    Dash table;
    for (size_t i = 0; i < n; ++i) {
      Cell k = KeyCell(i);
      table.FindOrInsert(HashCell(k), k, [&] { return k; }).first.value() = Cell{i, i};
    }
    state.PauseTiming();
    table.Clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}
void BM_InsertAbsl(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  for (auto _ : state) {
    Absl table;
    for (size_t i = 0; i < n; ++i) table[KeyCell(i)] = Cell{i, i};
    state.PauseTiming();
    Absl().swap(table);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}
BENCHMARK(BM_InsertDash)->Arg(1 << 20)->Arg(8 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InsertAbsl)->Arg(1 << 20)->Arg(8 << 20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardis::core

BENCHMARK_MAIN();

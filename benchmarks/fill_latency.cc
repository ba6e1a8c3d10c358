// Insert latency while filling a table: DashTable (grows one segment at a time) against
// absl::flat_hash_map (rehashes everything when it doubles).
//
// Inserts N keys "key:<n>" (std::string, 16-byte value cells), timing every insert, and prints
// total time, percentiles and the maximum, plus the slowest inserts and where they happened (absl's
// are where it doubles). For DashTable it also prints the inserts that resized or split a segment.
//
// Clocks: "wall" (default) reads the TSC around each insert; a preemption of the process (a busy
// shared machine) shows up as a slow insert. "cpu" reads CLOCK_THREAD_CPUTIME_ID instead: the
// thread's own CPU time, page faults included, preemption excluded, ~0.1-0.2 us more per reading.
//
//   taskset -c 1 build/release/benchmarks/fill_latency [N=10000000] [both|dash|absl|cell|density]
//   [wall|cpu]
// "both" runs DashTable<std::string> and absl::flat_hash_map<std::string>; "cell" runs DashTable
// with 16-byte inline key cells (32-byte slots, as the shard stores them). "density" fills the
// cell table without timing and prints the table's bytes per entry (memory_bytes() and the growth
// of the process's resident set) at round sizes up to N, and their range over the whole fill.
#include <absl/container/flat_hash_map.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/dash_table.h"
#include "core/string_util.h"

namespace shardis::core {
namespace {

struct Cell {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

struct StringPolicy {
  static uint64_t Hash(std::string_view s) { return absl::HashOf(ToAbsl(s)); }
  static bool Equal(const std::string& key, std::string_view probe) { return key == probe; }
};

// A 16-byte key cell with the bytes inline (up to 15), as the shard stores short keys: the slot
// is 32 bytes and moves by memcpy when a segment is rebuilt.
struct KeyCell {
  char bytes[15];
  uint8_t len;
  explicit KeyCell(std::string_view s) : len(uint8_t(s.size())) {
    std::memset(bytes, 0, sizeof(bytes));
    std::memcpy(bytes, s.data(), s.size());
  }
  std::string_view view() const { return {bytes, len}; }
};
struct CellPolicy {
  static constexpr bool kTriviallyRelocatable = true;
  static uint64_t Hash(const KeyCell& k) { return StringPolicy::Hash(k.view()); }
  static uint64_t Hash(std::string_view s) { return StringPolicy::Hash(s); }
  static bool Equal(const KeyCell& key, std::string_view probe) { return key.view() == probe; }
  static bool Equal(const KeyCell& key, const KeyCell& probe) { return key.view() == probe.view(); }
};

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// Ticks of the TSC, ordered with the surrounding code by lfence.
inline uint64_t Ticks() {
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
bool use_cpu_clock = false;
// The per-insert clock: TSC ticks, or nanoseconds of thread CPU time.
inline uint64_t Clock() {
  if (!use_cpu_clock) return Ticks();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// Fills "key:<n>" into a reused buffer (stays within the small-string buffer: no allocation).
void FormatKey(uint64_t n, std::string* out) {
  char buf[24];
  char* p = buf + sizeof(buf);
  do {
    *--p = char('0' + n % 10);
    n /= 10;
  } while (n);
  out->assign("key:");
  out->append(p, size_t(buf + sizeof(buf) - p));
}

struct Result {
  const char* name;
  double total_s;
  double ns_per_tick;
  std::vector<uint32_t> ticks;  // per insert
  size_t memory_bytes;
  std::vector<size_t> rebuilds;  // DashTable: the inserts that resized or split a segment
};

void Report(Result& r) {
  const size_t n = r.ticks.size();
  // The slowest inserts and their positions, before sorting loses them.
  std::vector<std::pair<uint32_t, size_t>> top;
  for (size_t i = 0; i < n; ++i) {
    if (top.size() < 5 || r.ticks[i] > top.back().first) {
      top.emplace_back(r.ticks[i], i);
      std::sort(top.rbegin(), top.rend());
      if (top.size() > 5) top.pop_back();
    }
  }
  size_t over_1ms = 0;
  for (uint32_t t : r.ticks) over_1ms += t * r.ns_per_tick > 1e6;
  std::vector<uint32_t> sorted = r.ticks;
  auto pct = [&](double p) {
    size_t k = std::min(n - 1, size_t(p / 100.0 * double(n)));
    std::nth_element(sorted.begin(), sorted.begin() + long(k), sorted.end());
    return sorted[k] * r.ns_per_tick;
  };
  std::printf(
      "%-16s total %7.3f s  mean %6.0f ns  p50 %5.0f ns  p99 %6.0f ns  p99.9 %7.0f ns  "
      "p99.99 %8.0f ns  max %9.3f ms  >1ms: %zu  table %.0f MB\n",
      r.name, r.total_s, r.total_s * 1e9 / double(n), pct(50), pct(99), pct(99.9), pct(99.99),
      top.front().first * r.ns_per_tick / 1e6, over_1ms, double(r.memory_bytes) / 1e6);
  std::printf("%-16s slowest:", "");
  for (auto [t, i] : top) std::printf(" %.3f ms @%zu", t * r.ns_per_tick / 1e6, i);
  std::printf("\n");
  if (!r.rebuilds.empty()) {
    std::vector<uint32_t> rebuild_ticks;
    for (size_t i : r.rebuilds) rebuild_ticks.push_back(r.ticks[i]);
    std::sort(rebuild_ticks.begin(), rebuild_ticks.end());
    auto at = [&](double p) {
      const size_t n = rebuild_ticks.size();
      return rebuild_ticks[std::min(n - 1, size_t(p / 100 * double(n)))] * r.ns_per_tick / 1e3;
    };
    std::printf("%-16s %zu inserts resized or split a segment: p50 %.1f us  p99 %.1f us  "
                "max %.1f us\n",
                "", rebuild_ticks.size(), at(50), at(99), at(100));
  }
}

// insert(key, i) returns true when the insert resized or split a segment.
template <typename InsertFn>
Result Fill(const char* name, size_t n, InsertFn insert) {
  Result r{name, 0, 0, std::vector<uint32_t>(n, 0), 0, {}};  // touched now, not during the fill
  std::string key;
  key.reserve(32);
  const uint64_t ns0 = NowNs(), t0 = Ticks();
  for (size_t i = 0; i < n; ++i) {
    FormatKey(i, &key);
    const uint64_t a = Clock();
    const bool rebuilt = insert(key, i);
    const uint64_t b = Clock();
    r.ticks[i] = uint32_t(std::min<uint64_t>(b - a, UINT32_MAX));
    if (rebuilt) r.rebuilds.push_back(i);
  }
  const uint64_t ns1 = NowNs(), t1 = Ticks();
  r.total_s = double(ns1 - ns0) / 1e9;
  r.ns_per_tick = use_cpu_clock ? 1.0 : double(ns1 - ns0) / double(t1 - t0);
  return r;
}

// The process's resident set, from /proc/self/statm.
size_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

// Bytes per entry of DashTable<cell> (32-byte slots, the shard's layout) while it fills to n.
void Density(size_t n) {
  std::printf("%10s %9s %10s %6s %12s %11s\n", "entries", "segments", "capacity", "load",
              "table B/key", "RSS B/key");
  DashTable<KeyCell, Cell, CellPolicy> table;
  const size_t rss0 = RssBytes();
  const size_t marks[] = {100'000,   250'000,   500'000,   750'000,    1'000'000, 1'500'000,
                          2'000'000, 4'000'000, 8'000'000, 10'000'000, 16'000'000};
  size_t next_mark = 0;
  // The ranges over the fill, sampled every 1000 inserts from 100K (below that the first
  // segments dominate) and from 1M (below that the allocator's partly used pages weigh on RSS).
  struct Range {
    size_t from;
    double lo = 1e9, hi = 0, lo_rss = 1e9, hi_rss = 0;
  } ranges[] = {{100'000}, {1'000'000}};
  std::string key;
  for (size_t i = 0; i < n; ++i) {
    FormatKey(i, &key);
    std::string_view k(key);
    table.FindOrInsert(CellPolicy::Hash(k), k, [&] { return KeyCell(k); }).first.value().lo = i;
    const size_t size = i + 1;
    const bool mark = next_mark < std::size(marks) && size == marks[next_mark];
    if (size < 100'000 || (size % 1000 != 0 && !mark)) continue;
    const double per_key = double(table.memory_bytes()) / double(size);
    const double rss_per_key = double(RssBytes() - rss0) / double(size);
    for (Range& r : ranges) {
      if (size < r.from) continue;
      r.lo = std::min(r.lo, per_key), r.hi = std::max(r.hi, per_key);
      r.lo_rss = std::min(r.lo_rss, rss_per_key), r.hi_rss = std::max(r.hi_rss, rss_per_key);
    }
    if (mark) {
      ++next_mark;
      std::printf("%10zu %9zu %10zu %6.3f %12.1f %11.1f\n", size, table.segment_count(),
                  table.capacity(), double(size) / double(table.capacity()), per_key, rss_per_key);
    }
  }
  for (const Range& r : ranges) {
    if (n < r.from) continue;
    std::printf("from %zu to %zu entries, every 1000: table %.1f-%.1f, RSS %.1f-%.1f B/key\n",
                r.from, n, r.lo, r.hi, r.lo_rss, r.hi_rss);
  }
}

int Main(int argc, char** argv) {
  const size_t n = argc > 1 ? size_t(std::strtoull(argv[1], nullptr, 10)) : 10'000'000;
  const std::string which = argc > 2 ? argv[2] : "both";
  use_cpu_clock = argc > 3 && std::string_view(argv[3]) == "cpu";
  if (which == "density") {
    Density(n);
    return 0;
  }
  std::printf("fill_latency: %zu inserts of \"key:<n>\" -> 16-byte value, per-insert %s\n", n,
              use_cpu_clock ? "thread CPU time" : "wall time (TSC)");
  if (which == "both" || which == "dash") {
    DashTable<std::string, Cell, StringPolicy> table;
    Result r = Fill("DashTable", n, [&](const std::string& key, uint64_t i) {
      std::string_view k(key);
      const size_t capacity = table.capacity();
      table.FindOrInsert(StringPolicy::Hash(k), k, [&] { return key; }).first.value().lo = i;
      return table.capacity() != capacity;
    });
    r.memory_bytes = table.memory_bytes();
    Report(r);
  }
  if (which == "cell") {
    DashTable<KeyCell, Cell, CellPolicy> table;
    Result r = Fill("DashTable<cell>", n, [&](const std::string& key, uint64_t i) {
      std::string_view k(key);
      const size_t capacity = table.capacity();
      table.FindOrInsert(CellPolicy::Hash(k), k, [&] { return KeyCell(k); }).first.value().lo = i;
      return table.capacity() != capacity;
    });
    r.memory_bytes = table.memory_bytes();
    Report(r);
  }
  if (which == "both" || which == "absl") {
    absl::flat_hash_map<std::string, Cell, StringHash, StringEq> table;
    Result r = Fill("absl::flat_hash", n, [&](const std::string& key, uint64_t i) {
      table[key].lo = i;
      return false;
    });
    r.memory_bytes = table.capacity() * (sizeof(std::pair<const std::string, Cell>) + 1);
    Report(r);
  }
  return 0;
}

}  // namespace
}  // namespace shardis::core

int main(int argc, char** argv) { return shardis::core::Main(argc, argv); }

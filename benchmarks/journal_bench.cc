// Micro-benchmark of the journal's path for one write, in isolation: ShardJournal::AppendRequest
// of a SET's RESP array (a 16-byte key, a 128-byte value: aof_bench's load), and per round of
// `range` records the writer's part: Take, JournalMerger::Add and Drain into the file's buffer.
// BM_AppendOnly is the floor: the same bytes appended to a string, nothing else.
//
//   ninja -C build/release journal_bench && taskset -c 0 build/release/benchmarks/journal_bench
//
// Its buffers stay warm from round to round, which a server's do not: it measures the
// instructions, not the cache misses (benchmarks/RESULTS.md compares it with the journal's cost
// measured in the server).
#include <benchmark/benchmark.h>

#include <string>

#include "core/aligned_string.h"
#include "shard/journal.h"

namespace shardis::shard {
namespace {

std::string SetRequest() {
  return "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000123456\r\n$128\r\n" + std::string(128, 'x') + "\r\n";
}

// Calls append() per iteration and end_round() after every state.range(0) of them.
template <typename Append, typename EndRound>
void Rounds(benchmark::State& state, Append&& append, EndRound&& end_round) {
  const size_t round = size_t(state.range(0));
  size_t records = 0;
  for (auto _ : state) {
    append();
    if (++records % round == 0) end_round();
  }
  state.SetItemsProcessed(int64_t(state.iterations()));
}

void BM_JournalRecord(benchmark::State& state) {
  ShardJournal journal;
  journal.set_on(true);
  JournalMerger merger(1);
  core::PageAlignedString out;
  out.reserve(4 << 20);
  const std::string request = SetRequest();
  Rounds(state, [&] { journal.AppendRequest(0, request); },
         [&] {
           merger.Add(0, journal.Take());
           merger.Drain(&out);
           benchmark::DoNotOptimize(out.data());
           out.clear();
         });
}
// A round of the writer at everysec under SET P16: 10 ms of ~0.07-0.7M SET/s.
BENCHMARK(BM_JournalRecord)->Arg(700)->Arg(7000);

void BM_AppendOnly(benchmark::State& state) {
  std::string buffer;
  buffer.reserve(8 << 20);
  const std::string request = SetRequest();
  Rounds(state, [&] { buffer.append(request); },
         [&] {
           benchmark::DoNotOptimize(buffer.data());
           buffer.clear();
         });
}
BENCHMARK(BM_AppendOnly)->Arg(7000);

}  // namespace
}  // namespace shardis::shard

BENCHMARK_MAIN();

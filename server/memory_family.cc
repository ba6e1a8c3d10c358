// MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP.
//
// USAGE estimates a key's footprint on its shard from the usable sizes of the blocks it really
// owns (core::ObjectMemoryBytes); STATS gives Redis' field names with shardis' figures, summed
// over the shards. The allocator is mimalloc: MALLOC-STATS prints its statistics and PURGE asks
// every shard's heap to return its free pages.
#include <mimalloc.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/dash_table.h"
#include "core/number.h"
#include "core/shard_heap.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/key_lookup.h"
#include "server/metrics.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Db;
using shard::Shard;

// Redis' OBJ_COMPUTE_SIZE_DEF_SAMPLES.
constexpr size_t kDefaultSamples = 5;
// A key's slot in its shard's table: the key cell, the value cell and the key's access clock.
constexpr size_t kSlotBytes =
    2 * sizeof(core::CompactValue) + core::dash_internal::kAccessClockBytes;

// MEMORY USAGE key [SAMPLES count]: as Redis, a bad count is "not an integer", a negative one or
// any other option a syntax error, and 0 samples every element.
void MemoryUsage(ArgSlice args, ConnContext& ctx) {
  size_t samples = kDefaultSamples;
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("SAMPLES", 1)) {
      const int64_t n = p.Next<int64_t>();
      if (p.ok() && n < 0) p.Fail(kSyntaxErr);
      samples = size_t(n);  // 0: all
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  size_t bytes = 0;
  const bool found = InspectSubKey(args, ctx, [&](const Db::Iterator& it) {
    const core::CompactValue& v = it.value();
    bytes = kSlotBytes + it.key().HeapBytes() + v.HeapBytes() + core::ObjectMemoryBytes(v, samples);
  });
  if (!found) return ctx.rb.Null();
  ctx.rb.Integer(int64_t(bytes));
}

// The tables' own memory, by database, summed over the shards.
struct TableBytes {
  size_t main = 0;
  size_t expires = 0;
};

std::vector<TableBytes> GatherTableBytes() {
  std::vector<std::vector<TableBytes>> per_shard(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](Shard& s) {
    std::vector<TableBytes>& mine = per_shard[s.id()];
    mine.resize(Shard::kNumDbs);
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      const Db& db = s.db(i);
      if (db.size() == 0) continue;  // as Redis: only databases with keys are listed
      mine[i].expires = db.expire_table_bytes();
      mine[i].main = db.table_bytes() - mine[i].expires;
    }
  });
  std::vector<TableBytes> total(Shard::kNumDbs);
  for (const std::vector<TableBytes>& mine : per_shard) {
    for (int i = 0; i < Shard::kNumDbs; ++i) {
      total[i].main += mine[i].main;
      total[i].expires += mine[i].expires;
    }
  }
  return total;
}

double Ratio(size_t a, size_t b) { return b != 0 ? double(a) / double(b) : 0; }
int64_t Difference(size_t a, size_t b) { return int64_t(a) - int64_t(b); }

void MemoryStats(ArgSlice, ConnContext& ctx) {
  const MetricsSnapshot m = GatherMetrics(kGatherThreads);
  const ThreadSample& total = m.total;
  const std::vector<TableBytes> tables = GatherTableBytes();
  const MemoryFigures mem = ComputeMemoryFigures(m);
  const size_t used = mem.used;

  size_t dbs_with_keys = 0;
  for (int i = 0; i < Shard::kNumDbs; ++i) dbs_with_keys += total.dbs[i].keys != 0;

  ctx.rb.MapHeader(27 + dbs_with_keys);
  auto field = [&](std::string_view name, int64_t value) {
    ctx.rb.Bulk(name);
    ctx.rb.Integer(value);
  };
  auto ratio = [&](std::string_view name, double value) {
    ctx.rb.Bulk(name);
    ctx.rb.Double(value);
  };
  field("peak.allocated", int64_t(mem.peak));
  field("total.allocated", int64_t(used));
  field("startup.allocated", int64_t(mem.startup));
  field("replication.backlog", 0);
  field("clients.slaves", 0);
  field("clients.normal", int64_t(mem.clients));
  field("cluster.links", 0);
  field("aof.buffer", int64_t(mem.aof_buffer));
  field("lua.caches", int64_t(mem.lua_caches));
  field("functions.caches", int64_t(mem.functions_caches));
  for (int i = 0; i < Shard::kNumDbs; ++i) {
    if (total.dbs[i].keys == 0) continue;
    ctx.rb.Bulk(core::Concat("db.", i));
    ctx.rb.MapHeader(3);
    field("overhead.hashtable.main", int64_t(tables[i].main));
    field("overhead.hashtable.expires", int64_t(tables[i].expires));
    field("overhead.hashtable.slot-to-keys", 0);
  }
  field("overhead.total", int64_t(mem.overhead));
  field("keys.count", int64_t(total.keys));
  // Redis: what the server holds beyond its start-up memory, per key.
  const size_t net = used > mem.startup ? used - mem.startup : 0;
  field("keys.bytes-per-key", total.keys != 0 ? int64_t(net / total.keys) : 0);
  field("dataset.bytes", int64_t(mem.dataset));
  ratio("dataset.percentage", mem.dataset_perc);
  ratio("peak.percentage", mem.peak_perc);
  // mimalloc's committed memory stands for jemalloc's "active" pages.
  field("allocator.allocated", int64_t(used));
  field("allocator.active", int64_t(mem.committed));
  field("allocator.resident", int64_t(mem.rss));
  ratio("allocator-fragmentation.ratio", Ratio(mem.committed, used));
  field("allocator-fragmentation.bytes", Difference(mem.committed, used));
  ratio("allocator-rss.ratio", Ratio(mem.rss, mem.committed));
  field("allocator-rss.bytes", Difference(mem.rss, mem.committed));
  ratio("rss-overhead.ratio", 1);
  field("rss-overhead.bytes", 0);
  ratio("fragmentation", Ratio(mem.rss, used));
  field("fragmentation.bytes", Difference(mem.rss, used));
}

// Fragmentation (resident over used) above which DOCTOR speaks up, once the process holds enough
// memory for the ratio to mean something (Redis' doctor uses the same kind of thresholds).
constexpr double kHighFragmentation = 1.4;
constexpr size_t kMeaningfulRss = size_t(10) << 20;

void MemoryDoctor(ArgSlice, ConnContext& ctx) {
  const MetricsSnapshot m = GatherMetrics(kGatherThreads);
  const size_t used = m.total.used_memory;
  const size_t rss = ResidentBytes(0);
  std::string report = core::Concat("used_memory: ", used, " bytes; resident: ", rss,
                                    " bytes; keys: ", m.total.keys, ".\n");
  if (rss >= kMeaningfulRss && Ratio(rss, used) > kHighFragmentation) {
    core::Append(&report, "High fragmentation: the process holds ", Ratio(rss, used),
                 " times the memory in use. MEMORY PURGE returns free pages to the system.\n");
  } else {
    report += "No memory problem found.\n";
  }
  ctx.rb.Verbatim(report);
}

void MemoryMallocStats(ArgSlice, ConnContext& ctx) {
  std::string text;
  mi_stats_print_out(
      [](const char* msg, void* arg) { static_cast<std::string*>(arg)->append(msg); }, &text);
  ctx.rb.Verbatim(text);
}

void MemoryPurge(ArgSlice, ConnContext& ctx) {
  shard::shard_set->AwaitAll([](Shard&) {
    if constexpr (core::ShardHeap::kUsesMimalloc) {
      mi_heap_collect(core::ShardHeap::Current()->mi_heap(), /*force=*/true);
    }
    mi_collect(/*force=*/true);  // the thread's default heap (connections, Lua)
  });
  ctx.rb.Ok();
}

void MemoryHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "MEMORY",
            {"DOCTOR", "    Return memory problems reports.", "MALLOC-STATS",
             "    Return internal statistics report from the memory allocator.", "PURGE",
             "    Attempt to purge dirty pages for reclamation by the allocator.", "STATS",
             "    Return information about the memory usage of the server.",
             "USAGE <key> [SAMPLES <count>]",
             "    Return memory in bytes used by <key> and its value. Nested values are",
             "    sampled up to <count> times (default: 5, 0 means sample all)."});
}

constexpr std::string_view kAllShardsSpecial =
    "nondeterministic_output request_policy:all_shards response_policy:special";

constexpr SubCommand kMemorySubs[] = {
    {.name = "doctor", .arity = 2, .flags = 0, .acl_categories = "slow",
     .handler = MemoryDoctor,
     .docs = {.group = "server", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Outputs a memory problems report.", .tips = kAllShardsSpecial}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = MemoryHelp,
     .docs = {.group = "server", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
    {.name = "malloc-stats", .arity = 2, .flags = 0, .acl_categories = "slow",
     .handler = MemoryMallocStats,
     .docs = {.group = "server", .since = "4.0.0",
              .complexity = "Depends on how much memory is allocated, could be slow",
              .summary = "Returns the allocator statistics.", .tips = kAllShardsSpecial}},
    {.name = "purge", .arity = 2, .flags = 0, .acl_categories = "slow",
     .handler = MemoryPurge,
     .docs = {.group = "server", .since = "4.0.0",
              .complexity = "Depends on how much memory is allocated, could be slow",
              .summary = "Asks the allocator to release memory.",
              .tips = "request_policy:all_shards response_policy:all_succeeded"}},
    {.name = "stats", .arity = 2, .flags = 0, .acl_categories = "slow",
     .handler = MemoryStats,
     .docs = {.group = "server", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Returns details about memory usage.", .tips = kAllShardsSpecial}},
    {.name = "usage", .arity = -3, .flags = kReadOnly, .keys = kSubKey,
     .acl_categories = "read slow", .handler = MemoryUsage,
     .docs = {.group = "server", .since = "4.0.0",
              .complexity = "O(N) where N is the number of samples.",
              .summary = "Estimates the memory usage of a key."}},
};

constexpr Container kMemory = {"memory", kMemorySubs};

void CmdMemory(ArgSlice args, ConnContext& ctx) { DispatchSub(kMemory, args, ctx); }

}  // namespace

void RegisterMemoryFamily(CommandRegistry* r) {
  r->Register({.name = "memory", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdMemory,
               .docs = {.group = "server", .since = "4.0.0", .complexity = "Depends on subcommand.",
                        .summary = "A container for memory diagnostics commands."},
               .container = &kMemory});
}

}  // namespace shardis::server

#include "server/command_stats.h"

#include <absl/container/flat_hash_map.h>
#include <glog/logging.h>

#include <algorithm>
#include <mutex>

#include "core/string_util.h"
#include "server/latency_monitor.h"
#include "server/slowlog.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

// Redis stops tracking new error prefixes past this many (a client that makes up error codes must
// not grow the table without bound); total_error_replies still counts them.
constexpr size_t kMaxErrorPrefixes = 128;

// Names by stats id; written once by AssignCommandStatsIds before any client is served.
std::vector<std::string>& Names() {
  static std::vector<std::string>* names = new std::vector<std::string>();
  return *names;
}

// By stats id, written with Names(): calls that SLOWLOG and LATENCY leave out: EXEC (its commands
// are logged one by one, as Redis does). A blocking command is offered with its execution time,
// without its wait (Connection::AfterBlocking), as Redis logs it once it is unblocked.
std::vector<bool>& Untimed() {
  static std::vector<bool>* untimed = new std::vector<bool>();
  return *untimed;
}

// One thread's statistics, touched only by that thread (readers hop to it). `arrays` points into
// counters and latency for RecordCall's inline part.
struct ThreadCommandStats {
  std::vector<CommandCounters> counters;
  std::vector<std::unique_ptr<core::LatencyHistogram>> latency;
  absl::flat_hash_map<std::string, uint64_t, core::StringHash, core::StringEq> errors;
  uint64_t total_errors = 0;
  detail::CallStatsArrays arrays;
};

// The objects are owned by a process-wide list so that they outlive their threads' last use.
thread_local ThreadCommandStats* tl_stats = nullptr;

ThreadCommandStats* NewThreadStats() {
  static std::mutex mu;  // once per thread, at its first command
  static std::vector<std::unique_ptr<ThreadCommandStats>>* all =
      new std::vector<std::unique_ptr<ThreadCommandStats>>();
  auto stats = std::make_unique<ThreadCommandStats>();
  stats->counters.resize(NumCommandStatsIds());
  stats->latency.resize(NumCommandStatsIds());
  stats->arrays = {stats->counters.data(), stats->latency.data()};
  std::lock_guard<std::mutex> lock(mu);
  all->push_back(std::move(stats));
  return all->back().get();
}

ThreadCommandStats& Local() {
  if (tl_stats == nullptr) [[unlikely]] {
    tl_stats = NewThreadStats();
    detail::tl_call_stats = &tl_stats->arrays;
  }
  return *tl_stats;
}

// The ReplyBuilder's error observer: Redis counts every error reply by its first word.
void NoteErrorReply(std::string_view msg) {
  ThreadCommandStats& s = Local();
  ++s.total_errors;
  std::string_view prefix = msg.substr(0, msg.find(' '));
  auto it = s.errors.find(prefix);
  if (it != s.errors.end()) {
    ++it->second;
  } else if (s.errors.size() < kMaxErrorPrefixes) {
    s.errors.emplace(std::string(prefix), 1);
  }
}

}  // namespace

void AssignCommandStatsIds(CommandRegistry* registry) {
  std::vector<std::string>& names = Names();
  CHECK(names.empty()) << "AssignCommandStatsIds runs once";
  // In name order, so that INFO commandstats lists commands in a stable order.
  std::vector<CommandSpec*> specs;
  for (auto& [name, spec] : registry->mutable_all()) specs.push_back(&spec);
  std::sort(specs.begin(), specs.end(),
            [](const CommandSpec* a, const CommandSpec* b) { return a->name < b->name; });
  std::vector<bool>& untimed = Untimed();
  for (CommandSpec* spec : specs) {
    spec->stats_id = uint32_t(names.size());
    names.emplace_back(spec->name);
    untimed.push_back(spec->name == "exec");
    if (spec->container != nullptr) {
      spec->sub_stats_base = uint32_t(names.size());
      for (const SubCommand& sub : spec->container->subs) {
        names.push_back(core::Concat(spec->name, "|", sub.name));
        untimed.push_back(false);
      }
    }
  }
  core::ReplyBuilder::SetErrorObserver(NoteErrorReply);
}

size_t NumCommandStatsIds() { return Names().size(); }

std::string_view CommandStatsName(uint32_t id) { return Names()[id]; }

uint32_t StatsIdOf(const CommandSpec& spec, const SubCommand* sub) {
  if (sub == nullptr) return spec.stats_id;
  return spec.sub_stats_base + uint32_t(sub - spec.container->subs.data());
}

uint32_t StatsIdOf(const CommandSpec& spec, ArgSlice args) {
  if (spec.container == nullptr || args.size() < 2) return spec.stats_id;
  return StatsIdOf(spec, FindSub(*spec.container, args[1]));
}

namespace detail {

constinit thread_local CallStatsArrays* tl_call_stats = nullptr;

CallStatsArrays* InitThreadCallStats() { return &Local().arrays; }

core::LatencyHistogram* NewLatencyHistogram(uint32_t stats_id) {
  std::unique_ptr<core::LatencyHistogram>& h = Local().latency[stats_id];
  if (h == nullptr) h = std::make_unique<core::LatencyHistogram>();
  return h.get();
}

void OfferSlowCall(const CommandSpec& spec, uint32_t stats_id, uint64_t duration_ns, ArgSlice args,
                   const ConnectionState& conn) {
  if (Untimed()[stats_id]) return;
  const uint64_t duration_us = duration_ns / 1000;
  SlowlogMaybeAdd(duration_us, args, conn);
  LatencyMaybeAdd(spec, duration_us);
}

}  // namespace detail

void RecordRejected(uint32_t stats_id) { ++Local().counters[stats_id].rejected; }

CommandStatsSnapshot GatherCommandStats(bool with_latency) {
  const size_t n = NumCommandStatsIds();
  std::vector<CommandStatsSnapshot> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& shard) {
    const ThreadCommandStats& s = Local();
    CommandStatsSnapshot& out = per_thread[shard.id()];
    out.counters = s.counters;
    out.errors.assign(s.errors.begin(), s.errors.end());
    out.total_error_replies = s.total_errors;
    if (with_latency) {
      out.latency.resize(n);
      for (size_t i = 0; i < n; ++i) {
        if (s.latency[i] != nullptr) {
          out.latency[i] = std::make_unique<core::LatencyHistogram>(*s.latency[i]);
        }
      }
    }
  });
  CommandStatsSnapshot total;
  total.counters.resize(n);
  total.latency.resize(n);
  absl::flat_hash_map<std::string, uint64_t, core::StringHash, core::StringEq> errors;
  for (CommandStatsSnapshot& t : per_thread) {
    for (size_t i = 0; i < n; ++i) {
      total.counters[i].calls += t.counters[i].calls;
      total.counters[i].duration_ns += t.counters[i].duration_ns;
      total.counters[i].rejected += t.counters[i].rejected;
      total.counters[i].failed += t.counters[i].failed;
    }
    for (auto& [prefix, count] : t.errors) errors[prefix] += count;
    total.total_error_replies += t.total_error_replies;
    if (!with_latency) continue;
    for (size_t i = 0; i < n; ++i) {
      if (t.latency[i] == nullptr) continue;
      if (total.latency[i] == nullptr) {
        total.latency[i] = std::move(t.latency[i]);
      } else {
        total.latency[i]->Merge(*t.latency[i]);
      }
    }
  }
  total.errors.assign(errors.begin(), errors.end());
  std::sort(total.errors.begin(), total.errors.end());
  return total;
}

namespace {

// Redis' LATENCY HISTOGRAM buckets: its HdrHistogram (2 significant digits) iterated by powers of
// two from 1024 ns, each step labelled with the highest value of the HDR bucket holding 1024 * 2^k
// ns, in us: 1, 2, 4, 8, 16, 33, 66, 132, ... Redis caps durations at 1 s, so step 20 (2^30 ns)
// is its last. Ours counts the values below 1024 * 2^k ns (exact: a bucket boundary), and the
// last step everything.
constexpr int kHistogramSteps = 21;

uint64_t HistogramStepLabelUs(int k) {
  const uint64_t level = uint64_t(1024) << k;
  return (level + (uint64_t(8) << k) - 1) / 1000;
}

// Redis' fillCommandCDF: calls, then the steps where the cumulative count grows.
void ReplyCommandCdf(const core::LatencyHistogram& h, core::ReplyBuilder& rb) {
  uint64_t counts[kHistogramSteps];
  size_t shown = 0;
  uint64_t previous = 0;
  for (int k = 0; k < kHistogramSteps; ++k) {
    counts[k] = k + 1 == kHistogramSteps ? h.count() : h.CountBelow(uint64_t(1024) << k);
    shown += counts[k] > previous;
    previous = counts[k];
  }
  rb.MapHeader(2);
  rb.Bulk("calls");
  rb.Integer(int64_t(h.count()));
  rb.Bulk("histogram_usec");
  rb.MapHeader(shown);
  previous = 0;
  for (int k = 0; k < kHistogramSteps; ++k) {
    if (counts[k] > previous) {
      rb.Integer(int64_t(HistogramStepLabelUs(k)));
      rb.Integer(int64_t(counts[k]));
    }
    previous = counts[k];
  }
}

}  // namespace

void ReplyLatencyHistogram(ArgSlice args, ConnContext& ctx) {
  const CommandStatsSnapshot stats = GatherCommandStats(/*with_latency=*/true);
  // The stats ids to show, in order: every command with data, or the named ones (a container
  // with its subcommands; "name|sub" for one subcommand; unknown names are left out, as Redis).
  std::vector<uint32_t> ids;
  auto add = [&](uint32_t id) {
    if (stats.latency[id] != nullptr) ids.push_back(id);
  };
  if (args.size() == 2) {
    for (uint32_t id = 0; id < stats.latency.size(); ++id) add(id);
  }
  for (size_t i = 2; i < args.size(); ++i) {
    const size_t bar = args[i].find('|');
    const CommandSpec* spec = Registry().Find(args[i].substr(0, bar));
    if (spec == nullptr) continue;
    if (bar != std::string_view::npos) {
      const SubCommand* sub = spec->container == nullptr
                                  ? nullptr
                                  : FindSub(*spec->container, args[i].substr(bar + 1));
      if (sub != nullptr) add(StatsIdOf(*spec, sub));
      continue;
    }
    add(spec->stats_id);
    if (spec->container == nullptr) continue;
    for (const SubCommand& sub : spec->container->subs) add(StatsIdOf(*spec, &sub));
  }
  ctx.rb.MapHeader(ids.size());
  for (uint32_t id : ids) {
    ctx.rb.Bulk(CommandStatsName(id));
    ReplyCommandCdf(*stats.latency[id], ctx.rb);
  }
}

void ResetThreadCommandStats() {
  ThreadCommandStats& s = Local();
  std::fill(s.counters.begin(), s.counters.end(), CommandCounters{});
  for (auto& h : s.latency) h.reset();
  s.errors.clear();
  s.total_errors = 0;
}

void ResetCommandStats() {
  shard::shard_set->AwaitAll([](shard::Shard&) { ResetThreadCommandStats(); });
}

}  // namespace shardis::server

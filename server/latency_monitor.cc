// LATENCY LATEST / GRAPH <event> / HISTORY <event> / RESET [<event> ...] / DOCTOR / HELP.
#include "server/latency_monitor.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/sparkline.h"
#include "core/string_util.h"
#include "server/command_stats.h"
#include "server/slowlog.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

DEFINE_int64(latency_monitor_threshold, 0,
             "LATENCY records commands that take at least this many milliseconds (0: off)");

namespace shardis::server {

namespace detail {
std::atomic<int64_t> latency_threshold_ms{0};
}  // namespace detail

namespace {

constexpr size_t kHistoryLen = 160;  // Redis' LATENCY_TS_LEN

struct Sample {
  int64_t time = 0;  // Unix seconds; 0 = unused
  uint64_t latency = 0;
};

// One event's samples on one thread: a ring with at most one sample per second.
struct Series {
  std::string event;
  std::array<Sample, kHistoryLen> samples{};
  size_t next = 0;
  uint64_t max = 0;
};

// This thread's events (two at most today: "command" and "fast-command").
thread_local std::vector<Series> tl_series;

// An event merged over every thread: its samples in time order (one per second, the largest).
struct Merged {
  std::vector<Sample> samples;
  uint64_t max = 0;
};

std::map<std::string, Merged> MergedEvents() {
  std::vector<std::vector<Series>> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) { per_thread[s.id()] = tl_series; });
  std::map<std::string, std::map<int64_t, uint64_t>> by_time;
  std::map<std::string, Merged> out;
  for (const auto& series : per_thread) {
    for (const Series& s : series) {
      Merged& m = out[s.event];
      m.max = std::max(m.max, s.max);
      auto& times = by_time[s.event];
      for (const Sample& smp : s.samples) {
        if (smp.time == 0) continue;
        uint64_t& l = times[smp.time];
        l = std::max(l, smp.latency);
      }
    }
  }
  for (auto& [event, times] : by_time) {
    std::vector<Sample>& v = out[event].samples;
    for (auto [t, l] : times) v.push_back({t, l});
    if (v.size() > kHistoryLen) v.erase(v.begin(), v.end() - kHistoryLen);
  }
  return out;
}

void LatencyLatest(ArgSlice, ConnContext& ctx) {
  auto events = MergedEvents();
  size_t n = 0;
  for (const auto& [event, m] : events) n += !m.samples.empty();
  ctx.rb.ArrayHeader(n);
  for (const auto& [event, m] : events) {
    if (m.samples.empty()) continue;
    ctx.rb.ArrayHeader(4);
    ctx.rb.Bulk(event);
    ctx.rb.Integer(m.samples.back().time);
    ctx.rb.Integer(int64_t(m.samples.back().latency));
    ctx.rb.Integer(int64_t(m.max));
  }
}

void LatencyHistory(ArgSlice args, ConnContext& ctx) {
  auto events = MergedEvents();
  auto it = events.find(std::string(args[2]));
  if (it == events.end()) return ctx.rb.ArrayHeader(0);
  ctx.rb.ArrayHeader(it->second.samples.size());
  for (const Sample& s : it->second.samples) {
    ctx.rb.ArrayHeader(2);
    ctx.rb.Integer(s.time);
    ctx.rb.Integer(int64_t(s.latency));
  }
}

void LatencyReset(ArgSlice args, ConnContext& ctx) {
  std::vector<std::string> names;
  for (size_t i = 2; i < args.size(); ++i) names.emplace_back(args[i]);
  std::vector<size_t> reset(shard::shard_set->size());
  std::vector<std::vector<std::string>> dropped(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    auto& series = tl_series;
    for (auto it = series.begin(); it != series.end();) {
      if (names.empty() || std::find(names.begin(), names.end(), it->event) != names.end()) {
        dropped[s.id()].push_back(it->event);
        it = series.erase(it);
      } else {
        ++it;
      }
    }
  });
  // Redis replies how many events were reset: count each event once, whatever thread had it.
  std::vector<std::string> all;
  for (auto& d : dropped) all.insert(all.end(), d.begin(), d.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  ctx.rb.Integer(int64_t(all.size()));
}

// Redis' label of a sample in LATENCY GRAPH: how long ago, in s, m, h or d.
std::string AgoLabel(int64_t elapsed_s) {
  if (elapsed_s < 60) return core::Concat(elapsed_s, "s");
  if (elapsed_s < 3600) return core::Concat(elapsed_s / 60, "m");
  if (elapsed_s < 3600 * 24) return core::Concat(elapsed_s / 3600, "h");
  return core::Concat(elapsed_s / (3600 * 24), "d");
}

void LatencyGraph(ArgSlice args, ConnContext& ctx) {
  constexpr int kGraphColumns = 80, kGraphRows = 4;  // Redis' LATENCY_GRAPH_COLS, 4 rows
  auto events = MergedEvents();
  auto it = events.find(std::string(args[2]));
  if (it == events.end() || it->second.samples.empty()) {
    return ctx.rb.Error(core::Concat("ERR No samples available for event '", args[2], "'"));
  }
  const Merged& m = it->second;
  const int64_t now = shard::NowMs() / 1000;
  std::vector<std::string> labels;
  labels.reserve(m.samples.size());
  uint64_t low = m.samples[0].latency, high = low;
  for (const Sample& s : m.samples) {
    labels.push_back(AgoLabel(now - s.time));
    low = std::min(low, s.latency);
    high = std::max(high, s.latency);
  }
  std::vector<core::SparklineSample> points;
  points.reserve(m.samples.size());
  for (size_t i = 0; i < m.samples.size(); ++i) {
    points.push_back({double(m.samples[i].latency), labels[i]});
  }
  std::string graph = core::Concat(it->first, " - high ", high, " ms, low ", low,
                                   " ms (all time high ", m.max, " ms)\n");
  graph.append(kGraphColumns, '-');
  graph.push_back('\n');
  core::RenderSparkline(points, kGraphColumns, kGraphRows, &graph);
  if (ctx.rb.resp3()) return ctx.rb.Verbatim(graph, "txt");
  ctx.rb.Bulk(graph);
}

std::string Doctor() {
  if (LatencyMonitorThreshold() <= 0) {
    return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis "
           "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in "
           "order to enable it. If we weren't in a deep space mission I'd suggest to take a look "
           "at https://redis.io/topics/latency-monitor.\n";
  }
  auto events = MergedEvents();
  std::string report;
  int i = 0;
  for (const auto& [event, m] : events) {
    if (m.samples.empty()) continue;
    // Redis' analysis: the mean of the samples, their mean deviation, and the mean period
    // between them.
    double sum = 0;
    for (const Sample& s : m.samples) sum += double(s.latency);
    const double avg = sum / double(m.samples.size());
    double dev = 0;
    for (const Sample& s : m.samples) dev += std::fabs(double(s.latency) - avg);
    dev /= double(m.samples.size());
    const int64_t span = m.samples.back().time - m.samples.front().time;
    const double period = m.samples.size() > 1 ? double(span) / double(m.samples.size() - 1) : 1;
    char line[512];
    snprintf(line, sizeof(line),
             "%d. %s: %zu latency spikes (average %.0fms, mean deviation %.0fms, period %.2f "
             "sec). Worst all time event %llums.\n",
             ++i, event.c_str(), m.samples.size(), avg, dev, period,
             (unsigned long long)m.max);
    report += line;
  }
  if (report.empty()) {
    return "Dave, no latency spike was observed during the lifetime of this Redis instance, not "
           "in the slightest bit. I honestly think you ought to sit down calmly, take a stress "
           "pill, and think things over.\n";
  }
  std::string out =
      "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about "
      "it, do you Dave?\n\n" +
      report + "\nI have a few advices for you:\n\n";
  const int64_t slowlog = SlowlogLogSlowerThan();
  if (slowlog < 0) {
    out += "- The slow log is disabled; enable it with 'CONFIG SET slowlog-log-slower-than "
           "<microseconds>' to see which commands are slow.\n";
  } else if (slowlog / 1000 >= LatencyMonitorThreshold()) {
    out += core::Concat("- Your current Slow Log configuration only logs events that are slower "
                        "than your configured latency monitor threshold. Please use 'CONFIG SET "
                        "slowlog-log-slower-than ",
                        LatencyMonitorThreshold() * 1000, "'.\n");
  }
  out += "- Check your Slow Log to understand what are the commands you are running which are too "
         "slow to execute. Please check https://redis.io/commands/slowlog for more information.\n"
         "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a "
         "blocking operation. If you have very large objects that are often deleted, expired, or "
         "evicted, try to fragment those objects into multiple smaller objects.\n";
  return out;
}

void LatencyDoctor(ArgSlice, ConnContext& ctx) {
  const std::string text = Doctor();
  if (ctx.rb.resp3()) return ctx.rb.Verbatim(text, "txt");
  ctx.rb.Bulk(text);
}

void LatencyHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "LATENCY",
            {"DOCTOR", "    Return a human readable latency analysis report.", "GRAPH <event>",
             "    Return an ASCII latency graph for the <event> class.", "HISTORY <event>",
             "    Return time-latency samples for the <event> class.", "LATEST",
             "    Return the latest latency samples for all events.", "RESET [<event> ...]",
             "    Reset latency data of one or more <event> classes.",
             "    (default: reset all data for all event classes)",
             "HISTOGRAM [COMMAND ...]",
             "    Return a cumulative distribution of latencies in the format of a histogram for "
             "the specified command names.",
             "    If no commands are specified then all histograms are replied."});
}

constexpr std::string_view kAcl = "admin slow dangerous";

constexpr SubCommand kLatencySubs[] = {
    {.name = "doctor", .arity = 2, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = LatencyDoctor,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns a human-readable latency analysis report.",
              .tips = "nondeterministic_output request_policy:all_nodes response_policy:special"}},
    {.name = "graph", .arity = 3, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = LatencyGraph,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns a latency graph for an event.",
              .tips = "nondeterministic_output request_policy:all_nodes response_policy:special"}},
    {.name = "history", .arity = 3, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = LatencyHistory,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns timestamp-latency samples for an event.",
              .tips = "nondeterministic_output request_policy:all_nodes response_policy:special"}},
    {.name = "latest", .arity = 2, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = LatencyLatest,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns the latest latency samples for all events.",
              .tips = "nondeterministic_output request_policy:all_nodes response_policy:special"}},
    {.name = "reset", .arity = -2, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = LatencyReset,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Resets the latency data for one or more events.",
              .tips = "request_policy:all_nodes response_policy:all_succeeded"}},
    {.name = "histogram", .arity = -2, .flags = kAdminSub, .acl_categories = kAcl,
     .handler = ReplyLatencyHistogram,
     .docs = {.group = "server", .since = "7.0.0",
              .complexity = "O(N) where N is the number of commands with latency information "
                            "being retrieved.",
              .summary = "Returns the cumulative distribution of latencies of a subset or all "
                         "commands.",
              .tips = "nondeterministic_output request_policy:all_nodes response_policy:special"}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = LatencyHelp,
     .docs = {.group = "server", .since = "2.8.13", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
};

constexpr Container kLatency = {"latency", kLatencySubs};

void CmdLatency(ArgSlice args, ConnContext& ctx) { DispatchSub(kLatency, args, ctx); }

}  // namespace

int64_t LatencyMonitorThreshold() {
  return detail::latency_threshold_ms.load(std::memory_order_relaxed);
}
void SetLatencyMonitorThreshold(int64_t ms) {
  detail::latency_threshold_ms.store(ms, std::memory_order_relaxed);
}

void LatencyAddSample(const char* event, uint64_t latency_ms) {
  auto it = std::find_if(tl_series.begin(), tl_series.end(),
                         [&](const Series& s) { return s.event == event; });
  if (it == tl_series.end()) {
    tl_series.push_back(Series{.event = event});
    it = tl_series.end() - 1;
  }
  Series& s = *it;
  const int64_t now = shard::NowMs() / 1000;
  s.max = std::max(s.max, latency_ms);
  Sample& prev = s.samples[(s.next + kHistoryLen - 1) % kHistoryLen];
  if (prev.time == now) {  // one sample per second: the largest
    prev.latency = std::max(prev.latency, latency_ms);
    return;
  }
  s.samples[s.next] = {now, latency_ms};
  s.next = (s.next + 1) % kHistoryLen;
}

void RegisterLatencyFamily(CommandRegistry* r) {
  SetLatencyMonitorThreshold(FLAGS_latency_monitor_threshold);
  r->Register({.name = "latency", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdLatency,
               .docs = {.group = "server", .since = "2.8.13",
                        .complexity = "Depends on subcommand.",
                        .summary = "Commands about the latency samples the server records."},
               .container = &kLatency});
}

}  // namespace shardis::server

// Per-command statistics: calls, execution time, rejected and failed calls, a latency histogram
// per command (INFO commandstats and latencystats, /metrics), and error replies counted by their
// first word (INFO errorstats). Counted per thread without locks: each thread owns its counters
// and a reader hops to every thread (shard_set->AwaitAll) to copy them, then sums the copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cycle_clock.h"
#include "core/latency_histogram.h"
#include "server/latency_tracking.h"
#include "server/command.h"
#include "server/slowlog.h"

namespace shardis::server {

struct SubCommand;

// Gives every command and subcommand of the registry its statistics index and name ("get",
// "config|get"), and installs the error-reply observer. Called once, after every family is
// registered and before any client is served.
void AssignCommandStatsIds(CommandRegistry* registry);
size_t NumCommandStatsIds();
std::string_view CommandStatsName(uint32_t id);

// The statistics index of a command, or of its subcommand when `sub` is set.
uint32_t StatsIdOf(const CommandSpec& spec, const SubCommand* sub);
// The same, looking the subcommand up by name (args[1]) for containers: for the cold paths
// (EXEC's queued commands) that did not resolve it at dispatch.
uint32_t StatsIdOf(const CommandSpec& spec, ArgSlice args);

// The clock that times commands: core::CycleClock ticks (a TSC read); RecordCall converts the
// difference of two readings to ns.
inline uint64_t CommandClockNow() { return core::CycleClock::Now(); }

// Whether the reply written at out[from..] is an error (RESP "-" or a RESP3 blob error "!").
inline bool IsErrorReply(const std::string& out, size_t from) {
  return out.size() > from && (out[from] == '-' || out[from] == '!');
}

// Whether that error is the one a shard answers a write over maxmemory with, before running it
// (RunShardCommand). Redis refuses such a command before calling it, so it counts as rejected.
inline bool IsOomRejection(const std::string& out, size_t from) {
  constexpr std::string_view kOomReply = "-OOM command not allowed";
  return out.compare(from, kOomReply.size(), kOomReply) == 0;
}

// A command refused before it ran (wrong arity, EXECABORT, NOAUTH, ...).
void RecordRejected(uint32_t stats_id);

struct CommandCounters {
  uint64_t calls = 0;
  uint64_t duration_ns = 0;
  uint64_t rejected = 0;
  uint64_t failed = 0;
};

namespace detail {

// One thread's counters as RecordCall's inline part needs them: plain arrays by stats id, owned by
// the thread's statistics (command_stats.cc).
struct CallStatsArrays {
  CommandCounters* counters;
  std::unique_ptr<core::LatencyHistogram>* latency;  // null until the command's first call here
};
// A plain pointer per thread (no thread_local constructor or guard on the hot path).
extern constinit thread_local CallStatsArrays* tl_call_stats;
CallStatsArrays* InitThreadCallStats();
core::LatencyHistogram* NewLatencyHistogram(uint32_t stats_id);
// Offers a call to SLOWLOG and to the latency monitor.
void OfferSlowCall(const CommandSpec& spec, uint32_t stats_id, uint64_t duration_ns, ArgSlice args,
                   const ConnectionState& conn);
// Whether a call may be slow enough for SLOWLOG (its threshold; negative: off) or the latency
// monitor (whose threshold is whole milliseconds, so nothing under 1 ms).
inline bool MaybeSlowCall(uint64_t duration_ns) {
  const int64_t slowlog_us = slowlog_slower_than_us.load(std::memory_order_relaxed);
  return duration_ns >= 1000000 || duration_ns / 1000 >= uint64_t(slowlog_us);
}

}  // namespace detail

// On the thread that dispatched the command: it ran for duration_ticks (a difference of two
// CommandClockNow()) and wrote its reply at reply[reply_at..]; an error reply makes it a failed
// call, a shard's maxmemory refusal a rejected one. Also offers the call to SLOWLOG and to the
// latency monitor (args and client are read only when the call is slow enough for either).
// Inline: it runs once per command. client_of() gives the client, called only for a slow call
// (a script's commands make theirs then).
template <typename ClientOf>
inline void RecordCallOf(const CommandSpec& spec, uint32_t stats_id, uint64_t duration_ticks,
                         const std::string& reply, size_t reply_at, ArgSlice args,
                         ClientOf&& client_of) {
  detail::CallStatsArrays* s = detail::tl_call_stats;
  if (s == nullptr) [[unlikely]] s = detail::InitThreadCallStats();
  CommandCounters& c = s->counters[stats_id];
  const bool failed = IsErrorReply(reply, reply_at);
  if (failed && IsOomRejection(reply, reply_at)) [[unlikely]] {
    ++c.rejected;
    return;
  }
  const uint64_t duration_ns = core::CycleClock::ToNs(duration_ticks);
  ++c.calls;
  c.duration_ns += duration_ns;
  c.failed += failed;
  if (LatencyTracking()) {
    core::LatencyHistogram* h = s->latency[stats_id].get();
    // Allocated at a command's first call on this thread, so only the commands in use cost memory.
    if (h == nullptr) [[unlikely]] h = detail::NewLatencyHistogram(stats_id);
    h->Add(duration_ns);
  }
  if (detail::MaybeSlowCall(duration_ns)) [[unlikely]] {
    detail::OfferSlowCall(spec, stats_id, duration_ns, args, client_of());
  }
}
inline void RecordCall(const CommandSpec& spec, uint32_t stats_id, uint64_t duration_ticks,
                       const std::string& reply, size_t reply_at, ArgSlice args,
                       const ConnectionState& conn) {
  RecordCallOf(spec, stats_id, duration_ticks, reply, reply_at, args,
               [&conn]() -> const ConnectionState& { return conn; });
}

struct CommandStatsSnapshot {
  std::vector<CommandCounters> counters;  // by stats id
  // By stats id; null for commands that never ran (only gathered when asked for).
  std::vector<std::unique_ptr<core::LatencyHistogram>> latency;
  std::vector<std::pair<std::string, uint64_t>> errors;  // by prefix, sorted
  uint64_t total_error_replies = 0;
};

// Copies and sums every thread's statistics. Hops to every thread: call from a fiber.
CommandStatsSnapshot GatherCommandStats(bool with_latency);

// LATENCY HISTOGRAM [command ...]: every command's (or the named ones' and, for a container, its
// subcommands') calls and cumulative latency buckets, as Redis 7 replies. Hops to every thread.
void ReplyLatencyHistogram(ArgSlice args, ConnContext& ctx);

// CONFIG RESETSTAT: clears every thread's command, latency and error statistics. Hops to every
// thread: call from a fiber.
void ResetCommandStats();
// The same for the calling thread only (ResetCommandStats runs it on each).
void ResetThreadCommandStats();

}  // namespace shardis::server

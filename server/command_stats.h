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
#include "server/command.h"

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

// On the thread that dispatched the command: it ran for duration_ticks (a difference of two
// CommandClockNow()) and replied an error when `failed`. Also offers the call to SLOWLOG and to
// the latency monitor (args and client are read only when the call is slow enough for either).
void RecordCall(const CommandSpec& spec, uint32_t stats_id, uint64_t duration_ticks, bool failed,
                ArgSlice args, const ConnectionState& conn);
// A command refused before it ran (wrong arity, EXECABORT, NOAUTH, ...).
void RecordRejected(uint32_t stats_id);

struct CommandCounters {
  uint64_t calls = 0;
  uint64_t duration_ns = 0;
  uint64_t rejected = 0;
  uint64_t failed = 0;
};

// Every thread's statistics, summed.
struct CommandStatsSnapshot {
  std::vector<CommandCounters> counters;  // by stats id
  // By stats id; null for commands that never ran (only gathered when asked for).
  std::vector<std::unique_ptr<core::LatencyHistogram>> latency;
  std::vector<std::pair<std::string, uint64_t>> errors;  // by prefix, sorted
  uint64_t total_error_replies = 0;
};

// Copies and sums every thread's statistics. Hops to every thread: call from a fiber.
CommandStatsSnapshot GatherCommandStats(bool with_latency);

// CONFIG RESETSTAT: clears every thread's command, latency and error statistics. Hops to every
// thread: call from a fiber.
void ResetCommandStats();
// The same for the calling thread only (ResetCommandStats runs it on each).
void ResetThreadCommandStats();

}  // namespace shardis::server

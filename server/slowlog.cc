// SLOWLOG GET [count] / LEN / RESET / HELP.
#include "server/slowlog.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/arg_parser.h"
#include "server/redacted_args.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

DEFINE_int64(slowlog_log_slower_than, 10000,
             "SLOWLOG records commands slower than this many microseconds (negative: off, 0: all)");
DEFINE_uint64(slowlog_max_len, 128, "entries SLOWLOG keeps");

namespace shardis::server {

namespace detail {
std::atomic<int64_t> slowlog_slower_than_us{10000};
}  // namespace detail

namespace {

// Redis' SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
constexpr size_t kMaxArgs = 32;
constexpr size_t kMaxArgBytes = 128;

std::atomic<uint64_t> g_max_len{128};
// Entry ids, process-wide: SLOWLOG GET merges the threads' logs by id. One increment per logged
// (slow) command only.
std::atomic<uint64_t> g_next_id{0};

struct Entry {
  uint64_t id;
  int64_t time_s;
  uint64_t duration_us;
  std::vector<std::string> args;
  std::string addr, name;
};

// This thread's log, newest first.
thread_local std::deque<Entry> tl_log;

void Trim(std::deque<Entry>& log) {
  const uint64_t max = g_max_len.load(std::memory_order_relaxed);
  while (log.size() > max) log.pop_back();
}

// Every thread's entries, newest first, at most max_len of them.
std::vector<Entry> MergedLog() {
  std::vector<std::vector<Entry>> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    Trim(tl_log);  // the limit may have shrunk since the last add
    per_thread[s.id()].assign(tl_log.begin(), tl_log.end());
  });
  std::vector<Entry> all;
  for (auto& v : per_thread) std::move(v.begin(), v.end(), std::back_inserter(all));
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.id > b.id; });
  const uint64_t max = g_max_len.load(std::memory_order_relaxed);
  if (all.size() > max) all.resize(max);
  return all;
}

void SlowlogGet(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) {  // Redis' slowlogCommand takes at most a count
    return ctx.rb.Error(SubcommandSyntaxError(args));
  }
  ArgParser p(args, 2);
  const int64_t count =
      p.HasNext() ? p.NextInRange(-1, INT64_MAX, "ERR count should be greater than or equal to -1")
                  : 10;
  if (p.ReplyError(ctx.rb)) return;
  std::vector<Entry> log = MergedLog();
  if (count >= 0 && size_t(count) < log.size()) log.resize(size_t(count));
  ctx.rb.ArrayHeader(log.size());
  for (const Entry& e : log) {
    ctx.rb.ArrayHeader(6);
    ctx.rb.Integer(int64_t(e.id));
    ctx.rb.Integer(e.time_s);
    ctx.rb.Integer(int64_t(e.duration_us));
    ctx.rb.ArrayHeader(e.args.size());
    for (const std::string& a : e.args) ctx.rb.Bulk(a);
    ctx.rb.Bulk(e.addr);
    ctx.rb.Bulk(e.name);
  }
}

void SlowlogLen(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(int64_t(MergedLog().size())); }

void SlowlogReset(ArgSlice, ConnContext& ctx) {
  shard::shard_set->AwaitAll([](shard::Shard&) { tl_log.clear(); });
  ctx.rb.Ok();
}

void SlowlogHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "SLOWLOG",
            {"GET [<count>]",
             "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
             "    Entries are made of:",
             "    id, timestamp, time in microseconds, arguments array, client IP and port,",
             "    client name", "LEN", "    Return the length of the slowlog.", "RESET",
             "    Reset the slowlog."});
}

// Redis flags SLOWLOG's subcommands admin but not noscript (unlike CONFIG's).
constexpr uint32_t kSlowlogSub = kAdmin | kLoading | kStale;

constexpr SubCommand kSlowlogSubs[] = {
    {.name = "get", .arity = -2, .flags = kSlowlogSub, .acl_categories = "admin slow dangerous",
     .handler = SlowlogGet,
     .docs = {.group = "server", .since = "2.2.12",
              .complexity = "O(N) where N is the number of entries returned",
              .summary = "Returns the slow log's entries.",
              .tips = "request_policy:all_nodes nondeterministic_output"}},
    {.name = "len", .arity = 2, .flags = kSlowlogSub, .acl_categories = "admin slow dangerous",
     .handler = SlowlogLen,
     .docs = {.group = "server", .since = "2.2.12", .complexity = "O(1)",
              .summary = "Returns the number of entries in the slow log.",
              .tips = "request_policy:all_nodes response_policy:agg_sum nondeterministic_output"}},
    {.name = "reset", .arity = 2, .flags = kSlowlogSub, .acl_categories = "admin slow dangerous",
     .handler = SlowlogReset,
     .docs = {.group = "server", .since = "2.2.12",
              .complexity = "O(N) where N is the number of entries in the slowlog",
              .summary = "Clears all entries from the slow log.",
              .tips = "request_policy:all_nodes response_policy:all_succeeded"}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = SlowlogHelp,
     .docs = {.group = "server", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Lists the subcommands and what they do."}},
};

constexpr Container kSlowlog = {"slowlog", kSlowlogSubs};

void CmdSlowlog(ArgSlice args, ConnContext& ctx) { DispatchSub(kSlowlog, args, ctx); }

}  // namespace

int64_t SlowlogLogSlowerThan() {
  return detail::slowlog_slower_than_us.load(std::memory_order_relaxed);
}
void SetSlowlogLogSlowerThan(int64_t usec) {
  detail::slowlog_slower_than_us.store(usec, std::memory_order_relaxed);
}
uint64_t SlowlogMaxLen() { return g_max_len.load(std::memory_order_relaxed); }
void SetSlowlogMaxLen(uint64_t len) { g_max_len.store(len, std::memory_order_relaxed); }

void SlowlogAdd(uint64_t duration_us, ArgSlice args, const ConnectionState& conn) {
  if (g_max_len.load(std::memory_order_relaxed) == 0) return;
  Entry e;
  e.id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  e.time_s = shard::NowMs() / 1000;
  e.duration_us = duration_us;
  // Redis' truncation: at most 32 arguments, the last one telling how many were left out, and
  // arguments longer than 128 bytes cut with a note of how many bytes were left out.
  const size_t argc = std::min(args.size(), kMaxArgs);
  e.args.reserve(argc);
  for (size_t i = 0; i < argc; ++i) {
    if (argc != args.size() && i == argc - 1) {
      e.args.push_back(core::Concat("... (", args.size() - argc + 1, " more arguments)"));
    } else if (args[i].size() > kMaxArgBytes) {
      e.args.push_back(core::Concat(args[i].substr(0, kMaxArgBytes), "... (",
                                    args[i].size() - kMaxArgBytes, " more bytes)"));
    } else {
      e.args.emplace_back(args[i]);
    }
  }
  // Passwords never reach the log (Redis redacts them in the command it logs).
  for (size_t i = 1; i < e.args.size(); ++i) {
    if (IsRedactedArg(args, i)) e.args[i] = "(redacted)";
  }
  // A script's commands are logged as Redis' script client, which has no address and no name.
  if (!conn.in_script) {
    e.addr = conn.addr;
    e.name = conn.name;
  } else {
    e.addr = "?:0";
  }
  tl_log.push_front(std::move(e));
  Trim(tl_log);
}

void RegisterSlowlogFamily(CommandRegistry* r) {
  // The flags are parsed by now: they are the settings' starting values.
  SetSlowlogLogSlowerThan(FLAGS_slowlog_log_slower_than);
  SetSlowlogMaxLen(FLAGS_slowlog_max_len);
  r->Register({.name = "slowlog", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdSlowlog,
               .docs = {.group = "server", .since = "2.2.12",
                        .complexity = "Depends on subcommand.",
                        .summary = "Commands about the log of slow commands."},
               .container = &kSlowlog});
}

}  // namespace shardis::server

// MONITOR (see monitor.h for the design).
#include "server/monitor.h"

#include <gflags/gflags.h>
#include <sys/time.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/string_util.h"
#include "io/proactor.h"
#include "server/redacted_args.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

DEFINE_uint64(monitor_output_limit, 32 * 1024 * 1024,
              "bytes of MONITOR output waiting for a monitoring client after which it is "
              "disconnected (a monitor that does not read never holds up the server)");

namespace shardis::server {

namespace internal {
std::atomic<int> g_monitors{0};
constinit thread_local bool tl_feed_pending = false;
}  // namespace internal

namespace {

// Monitors per thread, so that a feeding thread sends lines only where a monitor is. Read with
// relaxed loads: a monitor that starts this instant may miss the lines of commands running this
// same instant, and one that leaves gets none (its thread drops lines it has no monitor for).
constexpr unsigned kMonitorThreadSlots = 1024;
std::atomic<int> g_thread_monitors[kMonitorThreadSlots];

// An outbox larger than this is sent at once rather than at the end of the batch.
constexpr size_t kFlushBytes = 256 * 1024;

struct ThreadFeed {
  std::vector<ConnectionState*> monitors;  // this thread's monitoring connections
  std::vector<std::string> outbox;         // by destination thread
};
thread_local ThreadFeed tl_feed;

// Whether Redis keeps the command out of MONITOR: administrative ones (CONFIG, DEBUG, CLIENT
// LIST, MONITOR itself, ...), judged by the subcommand's flags for containers.
bool Hidden(ArgSlice args) {
  const CommandSpec* spec = Registry().Find(args[0]);
  if (spec == nullptr) return true;
  if (spec->container != nullptr && args.size() > 1) {
    const SubCommand* sub = FindSub(*spec->container, args[1]);
    return sub != nullptr && (sub->flags & kAdmin);
  }
  return spec->flags & kAdmin;
}

// Pushes lines to this thread's monitors.
void Deliver(std::string_view lines) {
  for (ConnectionState* m : tl_feed.monitors) m->push->Push(lines);
}

void DeliverTask(void* arg) {
  std::unique_ptr<std::string> lines(static_cast<std::string*>(arg));
  Deliver(*lines);
}

}  // namespace

void FeedMonitors(const ConnectionState& client, ArgSlice args) {
  FeedMonitorLines(MonitorLine(client, args));
}

std::string MonitorLine(const ConnectionState& client, ArgSlice args) {
  if (Hidden(args)) return {};
  timeval tv;
  gettimeofday(&tv, nullptr);
  char stamp[64];
  snprintf(stamp, sizeof(stamp), "+%ld.%06ld [", long(tv.tv_sec), long(tv.tv_usec));
  // A script's commands show as Redis' script client's: "[0 lua]".
  std::string line =
      core::Concat(stamp, client.db, " ", client.in_script ? "lua" : client.addr, "]");
  for (size_t i = 0; i < args.size(); ++i) {
    line.push_back(' ');
    core::AppendRepr(&line, IsRedactedArg(args, i) ? std::string_view("(redacted)") : args[i]);
  }
  line.append("\r\n");
  return line;
}

void FeedMonitorLines(std::string_view lines) {
  if (lines.empty()) return;
  const unsigned threads = std::min(shard::shard_set->size(), kMonitorThreadSlots);
  if (tl_feed.outbox.size() < threads) tl_feed.outbox.resize(threads);
  bool full = false;
  for (unsigned t = 0; t < threads; ++t) {
    if (g_thread_monitors[t].load(std::memory_order_relaxed) == 0) continue;
    tl_feed.outbox[t].append(lines);
    full |= tl_feed.outbox[t].size() >= kFlushBytes;
    internal::tl_feed_pending = true;
  }
  if (full) internal::FlushMonitorFeedSlow();
}

void internal::FlushMonitorFeedSlow() {
  internal::tl_feed_pending = false;
  io::Proactor* self = io::Proactor::current();
  for (unsigned t = 0; t < tl_feed.outbox.size(); ++t) {
    std::string& lines = tl_feed.outbox[t];
    if (lines.empty()) continue;
    if (t == self->index()) {
      Deliver(lines);
      lines.clear();
    } else {
      // The receiver owns (and frees) the copy; moved-from, the outbox starts empty again.
      self->Post(t, io::Task{&DeliverTask, new std::string(std::move(lines))});
      lines = std::string();
    }
  }
}

void StopMonitoring(ConnectionState& conn) {
  if (!conn.monitor) return;
  conn.monitor = false;
  auto& list = tl_feed.monitors;
  list.erase(std::remove(list.begin(), list.end(), &conn), list.end());
  g_thread_monitors[conn.thread % kMonitorThreadSlots].fetch_sub(1, std::memory_order_relaxed);
  internal::g_monitors.fetch_sub(1, std::memory_order_relaxed);
}

size_t MonitorOutputLimit() { return FLAGS_monitor_output_limit; }

namespace {

void CmdMonitor(ArgSlice, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  if (conn.monitor) return;  // already monitoring: Redis replies nothing
  conn.monitor = true;
  tl_feed.monitors.push_back(&conn);
  g_thread_monitors[conn.thread % kMonitorThreadSlots].fetch_add(1, std::memory_order_relaxed);
  internal::g_monitors.fetch_add(1, std::memory_order_relaxed);
  ctx.rb.Ok();
}

}  // namespace

void RegisterMonitorCommand(CommandRegistry* r) {
  r->Register({.name = "monitor", .arity = 1, .flags = kAdmin | kNoScript | kLoading | kStale,
               .keys = kNoKeys, .acl_categories = "admin slow dangerous", .on_conn = CmdMonitor,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "",
                        .summary = "Streams every command the server receives to this "
                                   "connection."}});
}

}  // namespace shardis::server

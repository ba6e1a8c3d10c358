#include "server/client_pause.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

#include "io/proactor.h"
#include "server/script_run.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/shard.h"

namespace shardis::server {

namespace internal {
std::atomic<int64_t> g_pause_end_ms{0};
}  // namespace internal

namespace {

// Relaxed, like the deadline: a command racing a PAUSE may run under either setting, as it could
// have arrived a moment earlier or later.
std::atomic<int> g_pause_type{int(PauseType::kAll)};

// Redis' CMD_WRITE | CMD_MAY_REPLICATE: what CLIENT PAUSE WRITE holds back. sub_name: args[1],
// which names a container's subcommand.
bool MayReplicate(const CommandSpec& spec, std::string_view sub_name) {
  if (spec.flags & kScript) {
    if (const std::optional<bool> writes = ScriptDeclaresWrites(spec.name, sub_name)) return *writes;
  }
  return (CallFlags(spec, sub_name) & (kWrite | kMayReplicate)) != 0;
}

bool Applies(const ConnectionState& conn, const CommandSpec& spec, std::string_view sub_name) {
  if (PauseType(g_pause_type.load(std::memory_order_relaxed)) == PauseType::kAll) return true;
  if (MayReplicate(spec, sub_name)) return true;
  if (spec.name == "exec" && conn.multi.active) {
    for (const MultiState::Queued& q : conn.multi.queue) {
      if (MayReplicate(*q.spec, q.args.size() > 1 ? q.args[1] : "")) return true;
    }
  }
  return false;
}

// While it lives, the client counts in INFO's blocked_clients, as Redis counts a client whose
// command a pause postpones.
class CountedAsBlocked {
 public:
  CountedAsBlocked() { ++ServerThreadState::current().stats().blocked_clients; }
  ~CountedAsBlocked() { --ServerThreadState::current().stats().blocked_clients; }
  CountedAsBlocked(const CountedAsBlocked&) = delete;
  CountedAsBlocked& operator=(const CountedAsBlocked&) = delete;
};

}  // namespace

bool WaitWhilePaused(const ConnectionState& conn, const CommandSpec& spec,
                     std::string_view sub_name) {
  std::optional<CountedAsBlocked> blocked;
  for (;;) {
    if (conn.killed) return false;
    int64_t end = internal::g_pause_end_ms.load(std::memory_order_relaxed);
    if (end == 0) return true;
    const int64_t now = shard::NowMs();
    if (now >= end) {
      // Over: clear it, so that later commands pay one load again (unless extended meanwhile).
      internal::g_pause_end_ms.compare_exchange_strong(end, 0, std::memory_order_relaxed);
      return true;
    }
    if (!Applies(conn, spec, sub_name)) return true;
    if (!blocked) blocked.emplace();
    io::Proactor::current()->SleepFor(std::chrono::milliseconds(std::min<int64_t>(end - now, 10)));
  }
}

void PauseClients(int64_t end_ms, PauseType type) {
  g_pause_type.store(int(type), std::memory_order_relaxed);
  int64_t seen = internal::g_pause_end_ms.load(std::memory_order_relaxed);
  while (seen < end_ms && !internal::g_pause_end_ms.compare_exchange_weak(
                              seen, end_ms, std::memory_order_relaxed)) {
  }
  // Both kinds of pause hold expiry (Redis 7.2's PAUSE_ACTION_EXPIRE), until the same deadline.
  shard::PauseExpiryUntil(std::max(seen, end_ms));
}

void UnpauseClients() {
  internal::g_pause_end_ms.store(0, std::memory_order_relaxed);
  shard::PauseExpiryUntil(0);
}

}  // namespace shardis::server

#include "server/idle_timeout.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <atomic>

#include "server/client_pause.h"
#include "server/connection_state.h"
#include "server/server_state.h"
#include "shard/shard.h"

DEFINE_int32(timeout, 0,
             "close a client after this many seconds without a command (not blocked clients, "
             "subscribers or monitors); 0 = never (Redis' timeout)");

namespace shardis::server {

namespace {

// Set from the flag by ApplyConfigFlags before serving, then by CONFIG SET. Relaxed: one
// independent setting.
std::atomic<int64_t> g_idle_timeout{0};

// Ticks of 100 ms between two looks: Redis' idle check also has a one-second resolution.
constexpr unsigned kTicksPerCheck = 10;
thread_local unsigned tl_ticks = 0;

bool MayTimeOut(const ConnectionState& c) {
  return !c.killed && c.blocked == nullptr && !c.executing && !c.monitor && c.pubsub.count() == 0;
}

}  // namespace

int64_t IdleTimeout() { return g_idle_timeout.load(std::memory_order_relaxed); }

void SetIdleTimeout(int64_t seconds) { g_idle_timeout.store(seconds, std::memory_order_relaxed); }

void CloseIdleClients() {
  if (++tl_ticks < kTicksPerCheck) return;
  tl_ticks = 0;
  const int64_t timeout_ms = IdleTimeout() * 1000;
  if (timeout_ms <= 0) return;
  const int64_t now_ms = shard::NowMs();
  // Commands held by CLIENT PAUSE wait inside the command, where Redis counts their clients as
  // blocked: none is closed for idleness while a pause lasts.
  if (now_ms < internal::g_pause_end_ms.load(std::memory_order_relaxed)) return;
  // Kill only shuts the socket down; the connection leaves the set later, from its own fiber.
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    if (MayTimeOut(*c) && now_ms - c->last_interaction_ms > timeout_ms && c->push != nullptr) {
      VLOG(1) << "Closing idle client " << c->addr;
      c->push->Kill();
    }
  }
}

}  // namespace shardis::server

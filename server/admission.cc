#include "server/admission.h"

#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>

#include "server/auth.h"

DEFINE_uint64(maxclients, 10000,
              "most client connections open at once; one more is refused with "
              "'-ERR max number of clients reached'");
DEFINE_bool(protected_mode, true,
            "with no requirepass, refuse clients that do not connect from the loopback "
            "interface (as Redis' protected-mode)");

namespace shardis::server {

namespace {

// The runtime values start as the flags' (read at first use, after the flags are parsed);
// CONFIG SET writes them. Relaxed: each is a single independent setting.
std::atomic<int64_t> g_maxclients{-1};
std::atomic<int> g_protected_mode{-1};
std::atomic<size_t> g_open_clients{0};

// Redis 7's text, byte for byte (networking.c, clientAcceptHandler).
constexpr std::string_view kProtectedModeErr =
    "-DENIED Redis is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from the "
    "loopback interface. If you want to connect from external computers to Redis you may adopt "
    "one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG "
    "SET protected-mode no' from the loopback interface by connecting to Redis from the same "
    "host the server is running, however MAKE SURE Redis is not publicly accessible from "
    "internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively "
    "you can just disable the protected mode by editing the Redis configuration file, and "
    "setting the protected mode option to 'no', and then restarting the server. 3) If you "
    "started the server manually just for testing, restart it with the '--protected-mode no' "
    "option. 4) Setup a an authentication password for the default user. NOTE: You only need "
    "to do one of the above things in order for the server to start accepting connections from "
    "the outside.\r\n";

// The memcached protocol's form of the refusals.
constexpr std::string_view kMcMaxClientsErr = "SERVER_ERROR max number of clients reached\r\n";
constexpr std::string_view kMcProtectedErr =
    "SERVER_ERROR protected mode: connections are only accepted from the loopback interface\r\n";

}  // namespace

size_t MaxClients() {
  int64_t v = g_maxclients.load(std::memory_order_relaxed);
  if (v < 0) [[unlikely]] {
    int64_t expected = -1;
    g_maxclients.compare_exchange_strong(expected, int64_t(FLAGS_maxclients),
                                         std::memory_order_relaxed);
    v = g_maxclients.load(std::memory_order_relaxed);
  }
  return size_t(v);
}

void SetMaxClients(size_t n) { g_maxclients.store(int64_t(n), std::memory_order_relaxed); }

bool ProtectedMode() {
  int v = g_protected_mode.load(std::memory_order_relaxed);
  if (v < 0) [[unlikely]] {
    int expected = -1;
    g_protected_mode.compare_exchange_strong(expected, FLAGS_protected_mode ? 1 : 0,
                                             std::memory_order_relaxed);
    v = g_protected_mode.load(std::memory_order_relaxed);
  }
  return v == 1;
}

void SetProtectedMode(bool on) { g_protected_mode.store(on ? 1 : 0, std::memory_order_relaxed); }

bool IsLoopback(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return peer.ss_family == AF_UNIX;
}

bool ProtectedModeRefuses(bool protected_mode, bool has_password, const sockaddr_storage& peer) {
  return protected_mode && !has_password && !IsLoopback(peer);
}

std::string_view AdmitClient(int fd, bool resp) {
  // Counted first, so that two threads accepting at once cannot both take the last place.
  const size_t open = g_open_clients.fetch_add(1, std::memory_order_relaxed) + 1;
  if (open > MaxClients()) {
    g_open_clients.fetch_sub(1, std::memory_order_relaxed);
    return resp ? kMaxClientsErr : kMcMaxClientsErr;
  }
  if (ProtectedMode() && !AuthRequired()) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 &&
        ProtectedModeRefuses(true, false, peer)) {
      g_open_clients.fetch_sub(1, std::memory_order_relaxed);
      return resp ? kProtectedModeErr : kMcProtectedErr;
    }
  }
  return {};
}

void ClientClosed() { g_open_clients.fetch_sub(1, std::memory_order_relaxed); }

size_t OpenClients() { return g_open_clients.load(std::memory_order_relaxed); }

}  // namespace shardis::server

#include "server/resp_listeners.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>
#include <vector>

#include "server/config_registry.h"
#include "server/listener.h"
#include "server/tls.h"
#include "shard/shard_set.h"

DEFINE_int32(port, 6379, "TCP port to listen on; 0 = none (then --tls_port must be set)");
DEFINE_string(bind, "127.0.0.1", "address to listen on (0.0.0.0 for every interface)");
DEFINE_int32(tls_port, 0, "TCP port for RESP over TLS (Redis' tls-port); 0 = off");

namespace shardis::server {

namespace {

enum Kind { kPlain = 0, kTls = 1 };

// The parameters' values (what CONFIG GET shows), set at start from the flags and by CONFIG SET.
std::atomic<int> g_port{0};
std::atomic<int> g_tls_port{0};
std::mutex g_bind_mu;  // CONFIG GET and SET only
std::string g_bind;    // guarded by g_bind_mu

// Where each listener's sockets are open now (port 0: closed). Read and written only by a
// listener move, one at a time (g_moving), and at start.
struct Address {
  std::string bind;
  int port = 0;
  bool operator==(const Address&) const = default;
};
Address g_listening[2];
std::atomic<bool> g_moving{false};
// Sockets opened at start, one per thread, until StartRespListeners hands them to the threads.
std::vector<int> g_opened[2];
// Per thread: the socket this thread accepts on for each listener, or -1.
thread_local int tl_listen_fd[2] = {-1, -1};

void AcceptOnThisThread(Kind kind, int fd) {
  tl_listen_fd[kind] = fd;
  StartAccepting(io::Proactor::current(), fd, Protocol::kResp, /*tls=*/kind == kTls);
}

// Redis' changeListener: closes the listener's sockets on every thread, then opens new ones at
// `to` (none for port 0). Nothing is done when the listener is there already (Redis applies only
// a changed value). On failure the listener stays closed: CONFIG SET's rollback moves it back.
absl::Status MoveListener(Kind kind, const Address& to) {
  if (g_listening[kind] == to) return absl::OkStatus();
  shard::shard_set->AwaitAll([kind](shard::Shard&) {
    if (tl_listen_fd[kind] >= 0) StopAccepting(std::exchange(tl_listen_fd[kind], -1));
  });
  g_listening[kind] = Address{to.bind, 0};
  if (to.port == 0) return absl::OkStatus();
  absl::StatusOr<std::vector<int>> fds =
      OpenListenSockets(to.bind, to.port, shard::shard_set->size());
  if (!fds.ok()) return fds.status();
  shard::shard_set->AwaitAll([kind, &fds](shard::Shard&) {
    AcceptOnThisThread(kind, (*fds)[io::Proactor::current()->index()]);
  });
  g_listening[kind] = to;
  LOG(INFO) << (kind == kTls ? "TLS listener" : "listener") << " moved to " << to.bind << ":"
            << to.port;
  return absl::OkStatus();
}

// Moves run one at a time: CONFIG SETs on two threads wait for each other here, each in its own
// fiber (a thread lock could hold a thread that the other move's hops need).
class MoveGuard {
 public:
  MoveGuard() {
    while (g_moving.exchange(true, std::memory_order_acquire)) {
      io::Proactor::current()->SleepFor(std::chrono::milliseconds(1));
    }
  }
  ~MoveGuard() { g_moving.store(false, std::memory_order_release); }
};

// Redis' updatePort, applyTLSPort and applyBind, with their answers (the reason is logged).
absl::Status Refused(const absl::Status& s, const char* answer) {
  LOG(WARNING) << s.message();
  return absl::UnavailableError(answer);
}

absl::Status ApplyPort() {
  MoveGuard guard;
  if (absl::Status s = MoveListener(kPlain, {Bind(), Port()}); !s.ok()) {
    return Refused(s, "Unable to listen on this port. Check server logs.");
  }
  return absl::OkStatus();
}

absl::Status ApplyTlsPort() {
  MoveGuard guard;
  if (TlsPort() != 0) {
    if (absl::Status s = StartTlsAtRuntime(); !s.ok()) {
      return Refused(s, "Unable to update TLS configuration. Check server logs.");
    }
  }
  if (absl::Status s = MoveListener(kTls, {Bind(), TlsPort()}); !s.ok()) {
    return Refused(s, "Unable to listen on this port. Check server logs.");
  }
  return absl::OkStatus();
}

// The bind address moves both listeners; when one cannot move, both are closed.
absl::Status ApplyBind() {
  MoveGuard guard;
  absl::Status s = MoveListener(kPlain, {Bind(), Port()});
  if (s.ok()) s = MoveListener(kTls, {Bind(), TlsPort()});
  if (!s.ok()) {
    (void)MoveListener(kPlain, {Bind(), 0});
    (void)MoveListener(kTls, {Bind(), 0});
    return Refused(s, "Failed to bind to specified addresses.");
  }
  return absl::OkStatus();
}

ConfigParam PortParam(std::string_view name, std::atomic<int>* port, absl::Status (*apply)()) {
  ConfigParam p = MutableInt(
      name, name == "port" ? "port" : "tls_port", 0, 65535,
      [port] { return int64_t(port->load(std::memory_order_relaxed)); },
      [port](int64_t v) { port->store(int(v), std::memory_order_relaxed); });
  p.apply = apply;
  return p;
}

}  // namespace

int Port() { return g_port.load(std::memory_order_relaxed); }
int TlsPort() { return g_tls_port.load(std::memory_order_relaxed); }
std::string Bind() {
  std::lock_guard lock(g_bind_mu);
  return g_bind;
}

absl::Status OpenRespListeners(unsigned threads) {
  for (Kind kind : {kPlain, kTls}) {
    const Address at{Bind(), kind == kPlain ? Port() : TlsPort()};
    if (at.port == 0) continue;
    absl::StatusOr<std::vector<int>> fds = OpenListenSockets(at.bind, at.port, threads);
    if (!fds.ok()) {
      for (int fd : g_opened[kPlain]) close(fd);
      g_opened[kPlain].clear();
      return fds.status();
    }
    g_opened[kind] = *std::move(fds);
    g_listening[kind] = at;
  }
  return absl::OkStatus();
}

void StartRespListeners(io::Proactor* proactor) {
  for (Kind kind : {kPlain, kTls}) {
    if (!g_opened[kind].empty()) AcceptOnThisThread(kind, g_opened[kind][proactor->index()]);
  }
}

void RegisterListenParams(ConfigRegistry& r) {
  // The flags' defaults, so that the registry's defaults (CONFIG REWRITE) are Redis' 6379 and
  // none; ApplyConfigFlags sets what the configuration says.
  g_port.store(FLAGS_port);
  g_tls_port.store(FLAGS_tls_port);
  g_bind = FLAGS_bind;
  r.Add(PortParam("port", &g_port, ApplyPort));
  r.Add(PortParam("tls-port", &g_tls_port, ApplyTlsPort));
  // One address (Redis takes up to 16): shardis binds one.
  ConfigParam bind = MutableString("bind", "bind", Bind, [](std::string_view v) {
    std::lock_guard lock(g_bind_mu);
    g_bind = v;
  });
  bind.apply = ApplyBind;
  r.Add(std::move(bind));
}

}  // namespace shardis::server

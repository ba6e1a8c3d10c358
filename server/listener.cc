#include "server/listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <absl/strings/str_cat.h>
#include <glog/logging.h>

#include "server/admission.h"
#include "server/client_pause.h"
#include "server/connection.h"
#include "server/http_connection.h"
#include "server/memcache_connection.h"
#include "server/server_state.h"
#include "server/tcp_keepalive.h"
#include "server/tls.h"

namespace shardis::server {

namespace {

// Per thread: the sockets its accept loops wait on (RESP, TLS, memcached, admin HTTP), and
// whether the server is stopping.
thread_local std::vector<int> tl_listen_fds;
thread_local bool tl_stopping = false;
thread_local size_t tl_connection_fibers = 0;

// Writes the refusal (maxclients, protected mode) and closes. The client may already have sent a
// request: reading what is there before the close keeps the kernel from answering it with a reset
// that could destroy the error line before the client reads it.
void Refuse(int fd, std::string_view error) {
  (void)::send(fd, error.data(), error.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  char drain[4096];
  while (::recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0) {
  }
  close(fd);
}

// Starts the fiber that serves an accepted connection. False when it could not be started (no
// memory for its stack); the fd is closed then.
bool LaunchConnection(io::Proactor* proactor, int fd, Protocol protocol, bool tls) {
  bool launched = false;
  // The fiber runs on this thread: a session made there uses this thread's context.
  if (protocol == Protocol::kHttp) {
    launched = proactor->Launch([fd, proactor, tls] {
      ServeHttpConnection(proactor, fd, tls ? NewTlsSession() : nullptr);
      --tl_connection_fibers;
    });
    if (!launched) close(fd);
  } else if (protocol == Protocol::kMemcache) {
    launched = proactor->Launch([fd, proactor, tls] {
      {
        MemcacheConnection conn(fd, proactor, tls ? NewTlsSession() : nullptr);
        conn.Run();
      }
      --tl_connection_fibers;
      ClientClosed();
    });
    if (!launched) close(fd);
  } else {
    // The Connection exists before its fiber runs, so that a stopping server sees it; when the
    // fiber cannot start, the function that owns it is dropped and its destructor closes fd.
    auto conn = std::make_shared<Connection>(fd, proactor, tls ? NewTlsSession() : nullptr);
    launched = proactor->Launch([conn = std::move(conn)]() mutable {
      conn->Run();
      conn.reset();
      --tl_connection_fibers;
      ClientClosed();
    });
  }
  if (launched) ++tl_connection_fibers;
  return launched;
}

// Redis' text (listenToPort), so that operators and scripts recognise it.
absl::Status ListenError(const std::string& bind, int port, const char* call, int err) {
  return absl::UnavailableError(absl::StrCat("Could not create server TCP listening socket ", bind,
                                             ":", port, ": ", call, ": ", strerror(err)));
}

// A TCP socket bound to addr with SO_REUSEADDR (and SO_REUSEPORT when reuse_port), or -errno with
// *failed naming the call that failed.
int BoundSocket(const addrinfo& addr, bool reuse_port, const char** failed) {
  const int fd = socket(addr.ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *failed = "socket";
    return -errno;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, addr.ai_addr, addr.ai_addrlen) != 0) {
    const int err = errno;
    close(fd);
    *failed = "bind";
    return -err;
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::vector<int>> OpenListenSockets(const std::string& bind, int port,
                                                   unsigned count) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  int rc = getaddrinfo(bind.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) return absl::InvalidArgumentError(absl::StrCat("bind address ", bind, ": ", gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);

  // SO_REUSEPORT lets any process of the same user join the port, and the kernel would then
  // split new clients between two servers with two keyspaces. So the port is first claimed by a
  // probe without SO_REUSEPORT: its bind fails when anyone listens there (with or without
  // SO_REUSEPORT). Bound but not listening, with SO_REUSEADDR, it does not stand in the way of
  // our own sockets; it is closed once they listen, which leaves only the time between two
  // binds for another server starting at the same instant.
  const char* failed = nullptr;
  const int probe = BoundSocket(*res, /*reuse_port=*/false, &failed);
  if (probe < 0) return ListenError(bind, port, failed, -probe);
  std::vector<int> fds;
  for (unsigned i = 0; i < count; ++i) {
    const int fd = BoundSocket(*res, /*reuse_port=*/true, &failed);
    if (fd < 0 || listen(fd, 4096) != 0) {
      const int err = fd < 0 ? -fd : errno;
      if (fd >= 0) {
        failed = "listen";
        close(fd);
      }
      for (int open_fd : fds) close(open_fd);
      close(probe);
      return ListenError(bind, port, failed, err);
    }
    fds.push_back(fd);
  }
  close(probe);
  return fds;
}

namespace {

bool Listening(int listen_fd) {
  return !tl_stopping && std::ranges::find(tl_listen_fds, listen_fd) != tl_listen_fds.end();
}

void AcceptLoop(io::Proactor* proactor, int listen_fd, Protocol protocol, bool tls) {
  while (Listening(listen_fd)) {
    int fd = proactor->Accept(listen_fd);
    if (fd < 0) {
      if (!Listening(listen_fd)) break;
      if (fd == -EMFILE || fd == -ENFILE) {
        // Out of descriptors: back off instead of spinning on the error.
        ++ServerThreadState::current().stats().rejected_connections;
        LOG_EVERY_N(WARNING, 100) << "accept: " << strerror(-fd);
        proactor->SleepFor(std::chrono::milliseconds(10));
      }
      continue;
    }
    if (tl_stopping) {
      close(fd);
      break;
    }
    if (std::string_view refusal = AdmitClient(fd, protocol == Protocol::kResp);
        !refusal.empty()) [[unlikely]] {
      ++ServerThreadState::current().stats().rejected_connections;
      // A TLS client could not read the plaintext error: it sees the close.
      Refuse(fd, tls ? std::string_view() : refusal);
      continue;
    }
    ++ServerThreadState::current().stats().connections_received;
    if (protocol != Protocol::kHttp) ApplyTcpKeepAlive(fd);
    if (!LaunchConnection(proactor, fd, protocol, tls)) [[unlikely]] {
      // The fd was closed with the connection's function; the server goes on with the others.
      LOG_EVERY_N(WARNING, 100) << "cannot start a connection: no memory for its fiber stack";
      if (protocol != Protocol::kHttp) ClientClosed();
    }
  }
  close(listen_fd);
  std::erase(tl_listen_fds, listen_fd);
}

}  // namespace

void StartAccepting(io::Proactor* proactor, int listen_fd, Protocol protocol, bool tls) {
  // Listed before the fiber runs, so that a StopAccepting or StopServing in between finds it.
  tl_listen_fds.push_back(listen_fd);
  if (!proactor->Launch([=] { AcceptLoop(proactor, listen_fd, protocol, tls); })) {
    LOG(ERROR) << "cannot start accepting: no memory for a fiber stack";
    std::erase(tl_listen_fds, listen_fd);
    close(listen_fd);
  }
}

void StopAccepting(int listen_fd) {
  if (std::erase(tl_listen_fds, listen_fd) == 0) return;
  // A listening socket shut down leaves the LISTEN state at once: the kernel refuses new clients
  // and a socket with SO_REUSEADDR may bind its address, while the accept loop (woken by the
  // shutdown or the cancel) is yet to close it.
  ::shutdown(listen_fd, SHUT_RDWR);
  io::Proactor::current()->CancelFd(listen_fd);
}

void StopServing() {
  tl_stopping = true;
  for (int fd : tl_listen_fds) io::Proactor::current()->CancelFd(fd);
  StopMemcacheConnections();
  // Commands held by a pause (the one taken for the final save, or a client's CLIENT PAUSE) would
  // only run after the save, or never: their clients are dropped instead, as Redis exits.
  const bool drop = PauseMaybeActive();
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    // The reader sees end-of-file after the requests it already has; replies still go out.
    shutdown(c->fd, SHUT_RD);
    if (drop) c->killed = true;
  }
}

size_t ConnectionCount() { return tl_connection_fibers; }

}  // namespace shardis::server

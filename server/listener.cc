#include "server/listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <absl/strings/str_cat.h>
#include <glog/logging.h>

#include "server/connection.h"
#include "server/http_connection.h"
#include "server/memcache_connection.h"
#include "server/server_state.h"

namespace shardis::server {

namespace {

// Per thread: the sockets its accept loops wait on (RESP, memcached, admin HTTP), and whether the server is
// stopping.
thread_local int tl_listen_fd[3] = {-1, -1, -1};
thread_local bool tl_stopping = false;
thread_local size_t tl_connection_fibers = 0;

}  // namespace

absl::StatusOr<int> OpenListenSocket(const std::string& bind, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  int rc = getaddrinfo(bind.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) return absl::InvalidArgumentError(absl::StrCat("bind address ", bind, ": ", gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
    int err = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", bind, ":", port, ": ", strerror(err)));
  }
  return fd;
}

void AcceptLoop(io::Proactor* proactor, int listen_fd, Protocol protocol) {
  tl_listen_fd[int(protocol)] = listen_fd;
  while (!tl_stopping) {
    int fd = proactor->Accept(listen_fd);
    if (fd < 0) {
      if (tl_stopping) break;
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
    ++ServerThreadState::current().stats().connections_received;
    ++tl_connection_fibers;
    if (protocol == Protocol::kHttp) {
      proactor->Launch([fd, proactor] {
        ServeHttpConnection(proactor, fd);
        --tl_connection_fibers;
      });
      continue;
    }
    if (protocol == Protocol::kMemcache) {
      proactor->Launch([fd, proactor] {
        {
          MemcacheConnection conn(fd, proactor);
          conn.Run();
        }
        --tl_connection_fibers;
      });
      continue;
    }
    proactor->Launch([conn = std::make_shared<Connection>(fd, proactor)]() mutable {
      conn->Run();
      conn.reset();
      --tl_connection_fibers;
    });
  }
  close(listen_fd);
  tl_listen_fd[int(protocol)] = -1;
}

void StopServing() {
  tl_stopping = true;
  for (int fd : tl_listen_fd) {
    if (fd >= 0) io::Proactor::current()->CancelFd(fd);
  }
  StopMemcacheConnections();
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    // The reader sees end-of-file after the requests it already has; replies still go out.
    shutdown(c->fd, SHUT_RD);
  }
}

size_t ConnectionCount() { return tl_connection_fibers; }

}  // namespace shardis::server

#include "server/tcp_keepalive.h"

#include <gflags/gflags.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>

DEFINE_int32(tcp_keepalive, 300,
             "seconds a client connection may be silent before TCP keepalive probes start (a dead "
             "peer is dropped after 3 unanswered probes); 0 = off (Redis' tcp-keepalive)");

namespace shardis::server {

namespace {

// Starts as the flag (ApplyConfigFlags sets it before serving); CONFIG SET writes it. Relaxed: a
// single independent setting, read once per accepted connection.
std::atomic<int64_t> g_tcp_keepalive{300};

}  // namespace

int64_t TcpKeepAlive() { return g_tcp_keepalive.load(std::memory_order_relaxed); }

void SetTcpKeepAlive(int64_t seconds) {
  g_tcp_keepalive.store(seconds, std::memory_order_relaxed);
}

void ApplyTcpKeepAlive(int fd) {
  const int idle = int(std::min<int64_t>(TcpKeepAlive(), INT32_MAX));
  if (idle <= 0) return;
  // Redis' choice: the first probe after `idle` seconds, then one every idle/3 seconds, and the
  // peer declared dead after 3 unanswered ones, about 2 x idle after it went silent.
  const int interval = std::max(1, idle / 3);
  const int probes = 3;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

}  // namespace shardis::server

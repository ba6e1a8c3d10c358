// Loopback TCP sockets for the io/ tests: a listener on an ephemeral port and clients of it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>

namespace shardis::io {

// A listening socket on an ephemeral loopback port.
inline int ListenLoopback(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

inline int ConnectLoopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// A connected pair of loopback TCP sockets: what streams serve. (Over an AF_UNIX socketpair this
// machine's kernel sometimes never delivers the EOF of the peer's shutdown(SHUT_WR) to an armed
// multishot receive; shardis has no unix-socket clients.)
inline void TcpPair(int fds[2]) {
  uint16_t port;
  const int lfd = ListenLoopback(&port);
  fds[1] = ConnectLoopback(port);
  fds[0] = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(fds[0], 0);
  close(lfd);
}

}  // namespace shardis::io

#include "server/admission.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

namespace shardis::server {
namespace {

sockaddr_storage V4(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, ip, &a->sin_addr), 1);
  return ss;
}

sockaddr_storage V6(const char* ip) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
  a->sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
  return ss;
}

TEST(AdmissionTest, Loopback) {
  EXPECT_TRUE(IsLoopback(V4("127.0.0.1")));
  EXPECT_TRUE(IsLoopback(V4("127.255.3.4")));
  EXPECT_TRUE(IsLoopback(V6("::1")));
  EXPECT_TRUE(IsLoopback(V6("::ffff:127.0.0.1")));
  EXPECT_FALSE(IsLoopback(V4("10.0.0.1")));
  EXPECT_FALSE(IsLoopback(V4("192.0.2.2")));
  EXPECT_FALSE(IsLoopback(V6("fd00::2")));
  EXPECT_FALSE(IsLoopback(V6("::ffff:10.1.2.3")));
}

TEST(AdmissionTest, ProtectedModeRefusesOnlyRemoteClientsWithoutPassword) {
  const sockaddr_storage remote = V4("192.0.2.2"), local = V4("127.0.0.1");
  EXPECT_TRUE(ProtectedModeRefuses(true, false, remote));
  EXPECT_TRUE(ProtectedModeRefuses(true, false, V6("2001:db8::1")));
  EXPECT_FALSE(ProtectedModeRefuses(true, false, local));  // loopback: always welcome
  EXPECT_FALSE(ProtectedModeRefuses(true, true, remote));   // a password is set
  EXPECT_FALSE(ProtectedModeRefuses(false, false, remote));  // --protected_mode=false
}

TEST(AdmissionTest, RuntimeSetters) {
  EXPECT_EQ(MaxClients(), 10000u);  // the flag's default
  SetMaxClients(5);
  EXPECT_EQ(MaxClients(), 5u);
  EXPECT_TRUE(ProtectedMode());
  SetProtectedMode(false);
  EXPECT_FALSE(ProtectedMode());
}

}  // namespace
}  // namespace shardis::server

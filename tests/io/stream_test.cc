#include "io/stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "io/proactor_pool.h"
#include "tests/io/loopback_sockets.h"

namespace shardis::io {
namespace {

using std::chrono::milliseconds;

std::string Pattern(size_t n) {
  std::string s(n, 0);
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + (i * 7 + i / 4096) % 26);
  return s;
}

// Blocking helpers for the client end, on a plain thread.
void WriteAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    ASSERT_GT(n, 0);
    off += size_t(n);
  }
}

std::string ReadToEof(int fd) {
  std::string got;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) got.append(buf, size_t(n));
  return got;
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pool_.Start().ok());
    TcpPair(fds_);
  }
  void TearDown() override {
    close(fds_[1]);
    pool_.Stop();
  }
  // fds_[0] is the server end (the Stream takes it over), fds_[1] the client's.
  int server_fd() const { return fds_[0]; }
  int client_fd() const { return fds_[1]; }

  ProactorPool pool_{1};
  int fds_[2] = {-1, -1};
  StreamCounters counters_;
};

// A client streams 8 MiB while the serving fiber is busy for a while: the stash stops growing
// near its bound (the receive is stopped and TCP's backpressure holds the client), and then every
// byte arrives in order and goes back through Send, whose sends the kernel takes in pieces.
TEST_F(StreamTest, EchoesEveryByteInOrderUnderBackpressure) {
  const std::string msg = Pattern(8 << 20);
  int small = 64 << 10;
  setsockopt(server_fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  std::thread writer([&] {
    WriteAll(client_fd(), msg);
    shutdown(client_fd(), SHUT_WR);
  });
  std::string echoed;
  std::thread reader([&] { echoed = ReadToEof(client_fd()); });

  size_t pending_while_busy = 0;
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    ASSERT_TRUE(stream.Read());
    p->SleepFor(milliseconds(300));  // busy: what arrives now waits in the stash
    pending_while_busy = stream.pending_input();
    std::string out;
    do {
      InputBuffer& in = stream.input();
      out.append(in.unparsed(), in.unparsed_size());
      in.Consume(in.unparsed_size());
      ASSERT_TRUE(stream.Send(&out));
      EXPECT_TRUE(out.empty());
    } while (stream.Read());
    ASSERT_TRUE(stream.WaitSendDone());
  });  // the stream closes its fd: the reader sees EOF
  writer.join();
  reader.join();
  // 256 KiB of stash, plus what the thread's receive buffers held when the stop took effect.
  EXPECT_LT(pending_while_busy, size_t(1) << 20);
  EXPECT_EQ(echoed.size(), msg.size());
  EXPECT_TRUE(echoed == msg);
  EXPECT_EQ(counters_.bytes_in, msg.size());
  EXPECT_EQ(counters_.bytes_out, msg.size());
}

// Each receive completion is a read and each send handed to the kernel a write (INFO's
// total_reads_processed, total_writes_processed); a send buffer a large reply grew is released
// after its send (reply_buffer_shrinks), a small one is kept.
TEST_F(StreamTest, CountsReadsWritesAndReleasedBuffers) {
  const std::string big = Pattern(1 << 20);
  std::string received;
  std::thread reader([&] { received = ReadToEof(client_fd()); });
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    WriteAll(client_fd(), "PING\r\n");
    ASSERT_TRUE(stream.Read());
    EXPECT_EQ(counters_.reads, 1u);
    EXPECT_EQ(counters_.bytes_in, 6u);
    std::string out = "+PONG\r\n";
    ASSERT_TRUE(stream.Send(&out));
    ASSERT_TRUE(stream.WaitSendDone());
    EXPECT_EQ(counters_.writes, 1u);
    EXPECT_EQ(counters_.send_buffer_releases, 0u);
    out = big;
    ASSERT_TRUE(stream.Send(&out));
    ASSERT_TRUE(stream.WaitSendDone());
    EXPECT_GE(counters_.writes, 2u);  // more if the kernel took it in pieces
    EXPECT_EQ(counters_.send_buffer_releases, 1u);
    EXPECT_EQ(counters_.bytes_out, 7u + big.size());
    shutdown(client_fd(), SHUT_WR);
    EXPECT_FALSE(stream.Read());
    EXPECT_EQ(counters_.reads, 2u);  // the end of input is a read too
  });
  reader.join();
  EXPECT_EQ(received.size(), 7u + big.size());
}

// A large request announced by its parser lands in a buffer made for it.
TEST_F(StreamTest, ReadReservesWhatTheParserNeeds) {
  const std::string msg = Pattern(1 << 20);
  std::thread writer([&] { WriteAll(client_fd(), msg); });
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    while (stream.input().unparsed_size() < msg.size()) ASSERT_TRUE(stream.Read(msg.size()));
    EXPECT_GE(stream.input().capacity(), msg.size());
    EXPECT_TRUE(std::string_view(stream.input().unparsed(), stream.input().unparsed_size()) == msg);
  });
  writer.join();
}

// Bytes sent with StartSend (from the loop, say a pub/sub message) complete without a waiting
// fiber: the listener hears it, once.
TEST_F(StreamTest, SendListenerHearsSendsNobodyWaitsFor) {
  struct Listener final : Stream::SendListener {
    int idle = 0;
    void OnSendIdle() override { ++idle; }
  } listener;
  std::string received;
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    stream.set_send_listener(&listener);
    std::string bytes = "+message\r\n";
    stream.StartSend(&bytes);
    EXPECT_TRUE(stream.sending());
    while (stream.sending()) p->SleepFor(milliseconds(1));
    EXPECT_EQ(listener.idle, 1);
    EXPECT_EQ(stream.unsent_bytes(), 0u);
  });
  char buf[64];
  const ssize_t n = read(client_fd(), buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, size_t(n)), "+message\r\n");
}

// EOF ends reading only after the bytes that came before it.
TEST_F(StreamTest, ReadEndsAtEofAfterTheLastBytes) {
  WriteAll(client_fd(), "PING\r\n");
  shutdown(client_fd(), SHUT_WR);
  std::string got;
  bool more = true;
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    while (stream.Read()) {
      got.append(stream.input().unparsed(), stream.input().unparsed_size());
      stream.input().Consume(stream.input().unparsed_size());
    }
    more = stream.Read();
  });
  EXPECT_EQ(got, "PING\r\n");
  EXPECT_FALSE(more);
}

// Last words: SendNow writes what the socket takes at once and leaves the rest.
TEST_F(StreamTest, SendNowWritesWithoutWaiting) {
  pool_.AwaitOn(0, [&](Proactor* p) {
    Stream stream(p, server_fd(), &counters_);
    std::string bytes = "-ERR Protocol error\r\n";
    stream.SendNow(&bytes);
    EXPECT_TRUE(bytes.empty());
    EXPECT_FALSE(stream.sending());
  });
  EXPECT_EQ(ReadToEof(client_fd()), "-ERR Protocol error\r\n");
}

}  // namespace
}  // namespace shardis::io

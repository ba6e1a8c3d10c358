#include "io/proactor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <boost/fiber/operations.hpp>
#include <string>
#include <thread>
#include <vector>

#include "io/proactor_pool.h"
#include "tests/io/loopback_sockets.h"

namespace shardis::io {
namespace {

TEST(ProactorTest, SocketRoundTrip) {
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  uint16_t port;
  int lfd = ListenLoopback(&port);
  std::string received;
  pool.AwaitOn(0, [&](Proactor* p) {
    // An echo server fiber and a client, both on the proactor.
    p->Launch([&, p] {
      int cfd = p->Accept(lfd);
      ASSERT_GE(cfd, 0);
      char buf[64];
      int n;
      while ((n = p->Recv(cfd, buf, sizeof(buf))) > 0) ASSERT_EQ(p->SendAll(cfd, buf, n), 0);
      close(cfd);
    });
    int fd = ConnectLoopback(port);
    std::string msg(10000, 'x');
    for (size_t i = 0; i < msg.size(); ++i) msg[i] = char('a' + i % 26);
    ASSERT_EQ(p->SendAll(fd, msg.data(), msg.size()), 0);
    char buf[4096];
    while (received.size() < msg.size()) {
      int n = p->Recv(fd, buf, sizeof(buf));
      ASSERT_GT(n, 0);
      received.append(buf, n);
    }
    close(fd);
    EXPECT_EQ(received, msg);
  });
  close(lfd);
  pool.Stop();
}

// Whether this kernel has io_uring buffer rings (5.19+): without them StartRecvStream refuses
// and connections read with one recv each, so the stream tests have nothing to test.
bool HasRecvStreams() {
  ProactorPool pool(1);
  EXPECT_TRUE(pool.Start().ok());
  bool has = false;
  pool.AwaitOn(0, [&](Proactor* p) {
    int fds[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
    struct Ignore final : RecvStream {
      bool ended = false;
      void OnRecv(int, const char*, bool armed) override { ended = !armed; }
    } stream;
    has = p->StartRecvStream(fds[0], &stream);
    if (has) {
      p->StopRecvStream(&stream);
      while (!stream.ended) p->SleepFor(std::chrono::milliseconds(1));
    }
    close(fds[0]);
    close(fds[1]);
  });
  pool.Stop();
  return has;
}

// Collects a multishot receive, starting it again whenever it ends without EOF or error (after
// ENOBUFS, or when the kernel ends it), as a connection does.
class CollectingStream final : public RecvStream {
 public:
  void OnRecv(int res, const char* data, bool armed) override {
    ++completions;
    if (res > 0) received.append(data, size_t(res));
    if (res == -ENOBUFS) ++out_of_buffers;
    if (armed) return;
    if (res > 0 || res == -ENOBUFS) {
      ASSERT_TRUE(proactor->StartRecvStream(fd, this));
      ++restarts;
    } else {
      last = res;
      ended = true;
    }
  }
  Proactor* proactor = nullptr;
  int fd = -1;
  std::string received;
  int completions = 0, out_of_buffers = 0, restarts = 0, last = 1;
  bool ended = false;
};

// 16 connections send 512 KiB each, 8 MiB in all against the thread's 512 KiB of receive buffers,
// while the thread is kept from reaping for a while: the buffers run out (ENOBUFS ends streams,
// which start again) and every byte still arrives, in order, followed by EOF.
TEST(ProactorTest, RecvStreamsDeliverInOrderAcrossRestarts) {
  if (!HasRecvStreams()) GTEST_SKIP() << "kernel without io_uring buffer rings";
  constexpr int kConns = 16;
  constexpr size_t kBytes = 512 << 10;
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  uint16_t port;
  int lfd = ListenLoopback(&port);
  std::vector<std::string> msgs(kConns, std::string(kBytes, 0));
  for (int c = 0; c < kConns; ++c) {
    for (size_t i = 0; i < kBytes; ++i) msgs[c][i] = char('a' + (i * 7 + i / 4096 + c) % 26);
  }
  std::vector<int> client_fds(kConns);
  std::vector<CollectingStream> streams(kConns);
  std::vector<std::thread> writers;
  pool.AwaitOn(0, [&](Proactor* p) {
    for (int c = 0; c < kConns; ++c) {
      client_fds[c] = ConnectLoopback(port);
      const int cfd = p->Accept(lfd);
      ASSERT_GE(cfd, 0);
      int big = 4 << 20;
      setsockopt(cfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
      streams[c].proactor = p;
      streams[c].fd = cfd;
      ASSERT_TRUE(p->StartRecvStream(cfd, &streams[c]));
    }
    for (int c = 0; c < kConns; ++c) {
      writers.emplace_back([&, c] {
        size_t off = 0;
        while (off < kBytes) {
          ssize_t n = send(client_fds[c], msgs[c].data() + off, kBytes - off, MSG_NOSIGNAL);
          ASSERT_GT(n, 0);
          off += size_t(n);
        }
        close(client_fds[c]);
      });
    }
    // Block the whole thread (not just this fiber): data piles up in the sockets meanwhile.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (auto& s : streams) {
      while (!s.ended) p->SleepFor(std::chrono::milliseconds(1));
      close(s.fd);
    }
  });
  for (auto& w : writers) w.join();
  int out_of_buffers = 0;
  for (int c = 0; c < kConns; ++c) {
    EXPECT_EQ(streams[c].last, 0) << c;  // EOF
    EXPECT_EQ(streams[c].received.size(), kBytes) << c;
    EXPECT_TRUE(streams[c].received == msgs[c]) << c;
    out_of_buffers += streams[c].out_of_buffers;
  }
  EXPECT_GT(out_of_buffers, 0) << "the buffers never ran out: the restart path went untested";
  close(lfd);
  pool.Stop();
}

// StopRecvStream on a quiet socket: the stream ends with one last completion (-ECANCELED).
TEST(ProactorTest, RecvStreamStops) {
  if (!HasRecvStreams()) GTEST_SKIP() << "kernel without io_uring buffer rings";
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  uint16_t port;
  int lfd = ListenLoopback(&port);
  CollectingStream stream;
  pool.AwaitOn(0, [&](Proactor* p) {
    int fd = ConnectLoopback(port);
    int cfd = p->Accept(lfd);
    ASSERT_GE(cfd, 0);
    stream.proactor = p;
    stream.fd = cfd;
    ASSERT_TRUE(p->StartRecvStream(cfd, &stream));
    ASSERT_EQ(send(fd, "hello", 5, 0), 5);
    while (stream.received.size() < 5) p->SleepFor(std::chrono::milliseconds(1));
    p->StopRecvStream(&stream);
    while (!stream.ended) p->SleepFor(std::chrono::milliseconds(1));
    close(cfd);
    close(fd);
  });
  EXPECT_EQ(stream.received, "hello");
  EXPECT_EQ(stream.last, -ECANCELED);
  close(lfd);
  pool.Stop();
}

// Connect reaches a listener; Recv with a deadline ends with -ETIMEDOUT when nothing comes and
// returns the data when it does; Connect to a closed port fails with -ECONNREFUSED.
TEST(ProactorTest, ConnectAndRecvWithDeadline) {
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  uint16_t port;
  const int lfd = ListenLoopback(&port);
  pool.AwaitOn(0, [&](Proactor* p) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(p->Connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                         std::chrono::seconds(5)),
              0);
    const int peer = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(peer, 0);
    char buf[16];
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(p->Recv(fd, buf, sizeof(buf), std::chrono::milliseconds(30)), -ETIMEDOUT);
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(29));
    ASSERT_EQ(write(peer, "hi", 2), 2);
    EXPECT_EQ(p->Recv(fd, buf, sizeof(buf), std::chrono::seconds(5)), 2);
    EXPECT_EQ(p->Send(fd, "ok", 2, std::chrono::seconds(5)), 2);
    close(peer);
    close(fd);

    // The listener is gone: nothing listens on the port any more.
    close(lfd);
    const int refused = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(p->Connect(refused, reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                         std::chrono::seconds(5)),
              -ECONNREFUSED);
    close(refused);
  });
  pool.Stop();
}

TEST(ProactorTest, SleepWakesAfterDeadline) {
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOn(0, [](Proactor* p) {
    auto start = std::chrono::steady_clock::now();
    p->SleepFor(std::chrono::milliseconds(20));
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(19));
  });
  pool.Stop();
}

// A nap ends at its deadline, or as soon as another fiber wakes it.
TEST(ProactorTest, NapEndsAtItsDeadlineOrWhenWoken) {
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOn(0, [](Proactor* p) {
    Proactor::Nap nap;
    auto start = std::chrono::steady_clock::now();
    nap.SleepFor(std::chrono::milliseconds(20));
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(19));
    nap.Wake();  // no sleep going on: nothing happens
    bool woke = false;
    ASSERT_TRUE(p->Launch([&] {
      p->SleepFor(std::chrono::milliseconds(5));
      woke = true;
      nap.Wake();
    }));
    start = std::chrono::steady_clock::now();
    nap.SleepFor(std::chrono::seconds(10));
    EXPECT_TRUE(woke);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  });
  pool.Stop();
}

// A write and its fdatasync in one linked submission: the bytes land where asked, and errors
// come back.
TEST(ProactorTest, WriteAtAndSyncWritesTheWholeBuffer) {
  char path[] = "/tmp/proactor_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOn(0, [fd](Proactor* p) {
    EXPECT_EQ(p->WriteAtAndSync(fd, "hello ", 6, 0), 0);
    std::string big(3 << 20, 'x');
    for (size_t i = 0; i < big.size(); i += 4096) big[i] = char('a' + i / 4096 % 26);
    EXPECT_EQ(p->WriteAtAndSync(fd, big.data(), big.size(), 6), 0);
    std::string back(6 + big.size(), '\0');
    EXPECT_EQ(p->ReadAt(fd, back.data(), back.size(), 0), int(back.size()));
    EXPECT_EQ(back, "hello " + big);
    EXPECT_EQ(p->WriteAtAndSync(-1, "x", 1, 0), -EBADF);
  });
  pool.Stop();
  close(fd);
}

// The address space this process has mapped now (/proc/self/status VmSize), in bytes.
rlim_t MappedBytes() {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  rlim_t kb = 0;
  while (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
    if (sscanf(line, "VmSize: %lu kB", &kb) == 1) break;
  }
  if (f != nullptr) fclose(f);
  return kb * 1024;
}

// A fiber whose stack cannot be mapped is not started, and the thread goes on: a server must not
// die because one connection found no memory.
TEST(ProactorTest, LaunchFailsWithoutMemoryForTheStack) {
  ProactorPool pool(1);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOn(0, [](Proactor* p) {
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_AS, &saved), 0);
    // Room for small allocations from arenas already mapped, none for a 256 KiB stack.
    const rlimit tight{MappedBytes() + 64 * 1024, saved.rlim_max};
    ASSERT_EQ(setrlimit(RLIMIT_AS, &tight), 0);
    bool ran = false;
    const bool launched = p->Launch([&ran] { ran = true; });
    ASSERT_EQ(setrlimit(RLIMIT_AS, &saved), 0);
    EXPECT_FALSE(launched);
    EXPECT_TRUE(p->Launch([&ran] { ran = true; }));
    boost::this_fiber::yield();
    EXPECT_TRUE(ran);
  });
  pool.Stop();
}

// Counts hops that ran on the target and came back to the origin.
class CountingHop : public Hop {
 public:
  void Run() override { ran_on = Proactor::current()->index(); }
  void Done() override {
    EXPECT_EQ(Proactor::current()->index(), origin);
    if (--*outstanding == 0 && waiter) boost::fibers::context::active()->schedule(waiter);
  }
  unsigned origin = 0;
  unsigned ran_on = ~0u;
  int* outstanding = nullptr;
  boost::fibers::context* waiter = nullptr;
};

// Both threads flood each other through tiny rings at the same time: with both directions full,
// neither may deadlock (the loops keep draining their inboxes while fibers wait for room).
TEST(ProactorTest, BackpressureBothDirectionsFull) {
  constexpr int kHops = 200'000;
  ProactorPool pool(2, /*ring_capacity=*/4);
  ASSERT_TRUE(pool.Start().ok());
  std::atomic<int> finished{0};
  pool.AwaitOnAll([&](Proactor* p) {
    unsigned peer = 1 - p->index();
    // Several fibers per thread, each keeping a window of hops in flight.
    std::atomic<int> fibers_left{4};
    boost::fibers::context* main = boost::fibers::context::active();
    bool main_waiting = false;
    for (int f = 0; f < 4; ++f) {
      p->Launch([&, p, peer] {
        std::vector<CountingHop> hops(64);
        for (int round = 0; round < kHops / 4 / 64; ++round) {
          int outstanding = int(hops.size());
          for (auto& h : hops) {
            h.origin = p->index();
            h.outstanding = &outstanding;
            h.waiter = boost::fibers::context::active();
            p->SendHop(peer, &h);
          }
          while (outstanding > 0) boost::fibers::context::active()->suspend();
          for (auto& h : hops) ASSERT_EQ(h.ran_on, peer);
        }
        if (--fibers_left == 0 && main_waiting) boost::fibers::context::active()->schedule(main);
      });
    }
    while (fibers_left > 0) {
      main_waiting = true;
      main->suspend();
    }
    finished++;
  });
  EXPECT_EQ(finished.load(), 2);
  EXPECT_GT(pool.at(0)->stats().ring_full_waits + pool.at(1)->stats().ring_full_waits, 0u);
  pool.Stop();
}


// A hop that visits a list of threads in turn, handing itself on from each to the next, and
// records where it ran; Done must come home once, after the last step.
class ChainHop : public Hop {
 public:
  void Run() override {
    visited.push_back(Proactor::current()->index());
    if (++step < route.size()) ForwardTo(route[step]);
  }
  void Done() override {
    EXPECT_EQ(Proactor::current()->index(), origin);
    ++done;
    // Only a fiber that waits is scheduled (it may still be yielding on a full ring otherwise).
    if (--*outstanding == 0 && *waiting) boost::fibers::context::active()->schedule(waiter);
  }
  std::vector<unsigned> route;  // route[0] is where SendHop sends it
  size_t step = 0;
  std::vector<unsigned> visited;
  unsigned origin = 0;
  int done = 0;
  int* outstanding = nullptr;
  bool* waiting = nullptr;
  boost::fibers::context* waiter = nullptr;
};

// Many chains at once from every thread, through tiny rings (so forwarding meets full outboxes):
// each visits its route in order and comes home exactly once.
TEST(ProactorTest, ForwardedHopsVisitTheirRouteInOrder) {
  constexpr unsigned kThreads = 4;
  ProactorPool pool(kThreads, /*ring_capacity=*/4);
  ASSERT_TRUE(pool.Start().ok());
  pool.AwaitOnAll([&](Proactor* p) {
    const unsigned self = p->index();
    std::vector<ChainHop> hops(200);
    for (size_t i = 0; i < hops.size(); ++i) {
      ChainHop& h = hops[i];
      h.origin = self;
      // Routes of 1 to 6 steps that never stay on one thread twice in a row and may pass home.
      unsigned at = self;
      for (size_t s = 0; s < 1 + i % 6; ++s) {
        at = (at + 1 + unsigned(i + s) % (kThreads - 1)) % kThreads;
        h.route.push_back(at);
      }
    }
    int outstanding = int(hops.size());
    bool waiting = false;
    for (ChainHop& h : hops) {
      h.waiter = boost::fibers::context::active();
      h.outstanding = &outstanding;
      h.waiting = &waiting;
      p->SendHop(h.route[0], &h);
    }
    while (outstanding > 0) {
      waiting = true;
      boost::fibers::context::active()->suspend();
      waiting = false;
    }
    for (ChainHop& h : hops) {
      EXPECT_EQ(h.done, 1);
      EXPECT_EQ(h.visited, h.route);
    }
  });
  pool.Stop();
}

// A hop that writes "hop" to a log of its target thread and wakes its sender when it is back.
class LoggingHop final : public Hop {
 public:
  void Run() override { log->push_back("hop"); }
  void Done() override {
    done = true;
    if (waiting) boost::fibers::context::active()->schedule(waiter);
  }
  std::vector<std::string>* log = nullptr;
  boost::fibers::context* waiter = nullptr;
  bool waiting = false;
  bool done = false;
};

// Holds the thread that runs it for 100 ms, as a long command would.
void HoldThread(void*) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Thread 1 has a fiber waiting for input on a socket. While thread 1 is held busy, bytes reach
// that socket and then thread 0 sends a hop there: what runs first on thread 1, the fiber that
// takes in the bytes or the hop? Returns thread 1's log.
std::vector<std::string> InputThenHop(HopStart start) {
  ProactorPool pool(2);
  EXPECT_TRUE(pool.Start().ok());
  uint16_t port;
  const int lfd = ListenLoopback(&port);
  const int client = ConnectLoopback(port);
  std::vector<std::string> log;  // thread 1's
  pool.AwaitOn(1, [&](Proactor* p) {
    const int fd = p->Accept(lfd);
    ASSERT_GE(fd, 0);
    p->Launch([&log, p, fd] {
      char buf[64];
      while (p->Recv(fd, buf, sizeof(buf), /*poll_first=*/true) > 0) log.push_back("input");
      close(fd);
    });
  });
  pool.AwaitOn(0, [&](Proactor* p) {
    p->Post(1, Task{&HoldThread, nullptr});
    p->SleepFor(std::chrono::milliseconds(20));  // thread 1 is in HoldThread now
    ASSERT_EQ(send(client, "x", 1, MSG_NOSIGNAL), 1);
    LoggingHop hop;
    hop.log = &log;
    hop.waiter = boost::fibers::context::active();
    p->SendHop(1, &hop, start);
    while (!hop.done) {
      hop.waiting = true;
      hop.waiter->suspend();
      hop.waiting = false;
    }
  });
  pool.AwaitOn(1, [&](Proactor* p) {
    while (log.size() < 2) p->SleepFor(std::chrono::milliseconds(1));
  });
  close(client);  // the reader ends
  close(lfd);
  pool.Stop();
  return log;
}

TEST(ProactorTest, HopAfterArrivedInputFollowsTheInputThatReachedItsThreadFirst) {
  EXPECT_EQ(InputThenHop(HopStart::kAfterArrivedInput),
            (std::vector<std::string>{"input", "hop"}));
  // The setup does provoke the race: a hop that starts on arrival goes first.
  EXPECT_EQ(InputThenHop(HopStart::kOnArrival), (std::vector<std::string>{"hop", "input"}));
}

// A fiber working in slices (active defrag, expiry, a snapshot) and a connection on the same
// thread: a request that arrives during one slice is answered before the next slice starts.
// Returns whether the reply was there when the second slice began.
bool AnsweredBeforeNextSlice(void (*between_slices)(Proactor*)) {
  ProactorPool pool(1);
  EXPECT_TRUE(pool.Start().ok());
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  bool answered = false;
  pool.AwaitOn(0, [&](Proactor* p) {
    p->Launch([p, fd = fds[0]] {  // the connection: one request, one reply
      char c;
      if (p->Recv(fd, &c, 1) == 1) {
        EXPECT_EQ(p->SendAll(fd, "r", 1), 0);
      }
    });
    p->YieldBetweenSlices();  // the connection's receive is armed
    // Slice 1: the request arrives meanwhile.
    EXPECT_EQ(write(fds[1], "q", 1), 1);
    between_slices(p);
    // Slice 2.
    char r;
    answered = recv(fds[1], &r, 1, MSG_DONTWAIT) == 1;
    // The connection ends before the pool: let it answer.
    while (!answered && recv(fds[1], &r, 1, MSG_DONTWAIT) != 1) boost::this_fiber::yield();
  });
  close(fds[0]);
  close(fds[1]);
  pool.Stop();
  return answered;
}

TEST(ProactorTest, YieldBetweenSlicesLetsTheInputThatArrivedBeAnsweredFirst) {
  EXPECT_TRUE(AnsweredBeforeNextSlice([](Proactor* p) { p->YieldBetweenSlices(); }));
  // The setup does provoke the case: after a plain yield the next slice starts first.
  EXPECT_FALSE(AnsweredBeforeNextSlice([](Proactor*) { boost::this_fiber::yield(); }));
}

}  // namespace
}  // namespace shardis::io

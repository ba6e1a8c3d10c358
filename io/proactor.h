// Proactor: one per pinned thread. It owns an io_uring and drives the thread's boost.fibers
// scheduler (see UringScheduler): fibers issue I/O through it and sleep until the completion
// arrives; tasks from other threads arrive on SPSC rings and run inline in the loop.
#pragma once

#include <absl/status/status.h>
#include <absl/types/span.h>
#include <liburing.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "io/spsc_ring.h"
#include "io/task.h"

namespace boost::fibers {
class context;
}

namespace shardis::io {

class Proactor;

// An I/O operation in flight that nobody waits for in a fiber: its CQE calls Complete on the
// proactor's thread, inside the loop (so Complete must not block; it may queue more I/O).
class IoOp {
 public:
  virtual void Complete(int res) = 0;

 protected:
  ~IoOp() = default;
};

// The receiver of a multishot receive (Proactor::StartRecvStream). The kernel keeps the socket
// armed and, each time data arrives, copies it into a buffer of the thread's buffer ring and
// posts a completion, so a connection does not submit (and the kernel does not arm a poll for)
// one recv per request.
class RecvStream {
 public:
  // In the loop, on the proactor's thread, once per completion. res > 0: `data` holds res bytes,
  // valid only during the call (the buffer goes back to the ring after it). res == 0: EOF.
  // res < 0: -errno; -ENOBUFS means the thread's buffers ran out and the stream may simply be
  // started again. `armed`: more completions follow; false means the stream has ended (after
  // an error, EOF, StopRecvStream, or a kernel decision to stop) and this object is released.
  virtual void OnRecv(int res, const char* data, bool armed) = 0;

 protected:
  ~RecvStream() = default;
};

// The N x N mesh of rings: ring(from, to) carries tasks from thread `from` to thread `to`.
class Mesh {
 public:
  Mesh(unsigned num_threads, size_t ring_capacity);
  unsigned size() const { return n_; }
  SpscRing<Task>& ring(unsigned from, unsigned to) { return *rings_[from * n_ + to]; }

 private:
  unsigned n_;
  std::vector<std::unique_ptr<SpscRing<Task>>> rings_;
};

// When a hop's Run may start on its target thread (Proactor::SendHop).
enum class HopStart {
  // As soon as the target's loop takes it from its inbox, before fibers that are ready there.
  kOnArrival,
  // Only after the target has taken in the input that reached it first (see
  // Proactor::RunAfterArrivedInput).
  kAfterArrivedInput,
};

class Proactor {
 public:
  struct Stats {
    uint64_t loop_polls = 0;       // non-blocking poll passes (one per round of the ready queue)
    uint64_t enters = 0;           // io_uring_enter calls (submit/reap/wait)
    uint64_t parks = 0;            // times the thread blocked waiting for completions
    uint64_t tasks_run = 0;        // tasks taken from the inbox rings
    uint64_t tasks_after_input = 0;  // tasks RunAfterArrivedInput held back for ready fibers
    uint64_t wakeups_sent = 0;     // MSG_RING wake-ups sent to parked threads
    uint64_t ring_full_waits = 0;  // times a fiber yielded because an outbox ring was full
    uint64_t spins = 0;            // times the loop yielded the CPU for its hops' answers
    // A cycle is the loop's stretch between two entries into the kernel: running the ready
    // fibers, plus the submission work of a non-blocking enter (sends happen there). A blocking
    // wait is not part of any cycle. Redis 7.2 reports the same as eventloop_duration_*.
    uint64_t cycles = 0;
    uint64_t cycle_ns_sum = 0;
    uint64_t cycle_ns_max = 0;  // the longest cycle: how long the loop held its clients up
    // Time blocked in the kernel waiting for completions: the thread's idle time (what work
    // that yields to clients, as active defragmentation, may take without slowing them).
    uint64_t parked_ns = 0;
  };

  Proactor(unsigned index, Mesh* mesh, std::vector<Proactor*>* all);
  ~Proactor();
  Proactor(const Proactor&) = delete;
  Proactor& operator=(const Proactor&) = delete;

  // Creates the io_uring. Must run on the thread that will own it (SINGLE_ISSUER).
  absl::Status Init();
  // Installs the fiber scheduler and runs the loop until Stop(); returns on the same thread.
  // `on_start` runs in a fiber once the loop is up.
  void Run(std::function<void()> on_start);
  // Asks the loop to end (any thread). Run returns once every fiber launched here has finished.
  void Stop();

  static Proactor* current();  // the proactor of the calling thread, or nullptr
  unsigned index() const { return index_; }
  const Stats& stats() const { return stats_; }
  // CONFIG RESETSTAT zeroes the cycle figures, as Redis' does its eventloop_* ones.
  void ResetCycleStats() { stats_.cycles = stats_.cycle_ns_sum = stats_.cycle_ns_max = 0; }
  // Tasks waiting in this thread's inbox rings now, plus those waiting in its own overflow queues
  // for a full outbox (call on this proactor's thread; for INFO and /metrics).
  size_t QueuedTasks() const;

  // Starts a detached fiber on this thread. Call on this proactor's thread only. Returns false,
  // dropping fn unrun, when the fiber's stack cannot be mapped (out of memory or of mappings):
  // a server keeps serving its other clients rather than dying for one connection.
  bool Launch(std::function<void()> fn);

  // --- Fiber-blocking I/O. Call from a fiber on this proactor's thread. Results are like the
  // syscalls' but errors are returned as -errno.
  int Accept(int listen_fd);
  // `poll_first`: the caller expects the socket to be empty (its last recv drained it), so the
  // kernel waits for data before the first attempt instead of failing one with EAGAIN first.
  int Recv(int fd, void* buf, size_t len, bool poll_first = false);
  int Send(int fd, const void* buf, size_t len);
  // --- The same with a deadline: the operation is linked to a timeout (IORING_OP_LINK_TIMEOUT)
  // and ends with -ETIMEDOUT when it has not completed within `timeout`. For outgoing
  // connections (MIGRATE), where the peer may never answer.
  // Connects fd (a fresh non-blocking socket) to addr. Returns 0 or -errno.
  int Connect(int fd, const sockaddr* addr, socklen_t addr_len, std::chrono::nanoseconds timeout);
  int Recv(int fd, void* buf, size_t len, std::chrono::nanoseconds timeout);
  int Send(int fd, const void* buf, size_t len, std::chrono::nanoseconds timeout);
  // Sends all of buf (loops over short sends). Returns 0 or -errno.
  int SendAll(int fd, const char* buf, size_t len);
  // Starts a send without waiting: op->Complete(result) runs when it finishes. buf must stay
  // valid until then. Lets a connection queue its replies and its next recv in one submit.
  void SendAsync(int fd, const void* buf, size_t len, IoOp* op);
  // Starts a poll for `events` (poll(2) bits, e.g. POLLRDHUP) on fd without waiting:
  // op->Complete(revents or -errno) runs when one occurs or the poll is cancelled.
  void PollAsync(int fd, unsigned events, IoOp* op);
  // Cancels an operation started with op (it completes with -ECANCELED unless it already ended).
  void CancelOp(IoOp* op);
  // Starts a multishot receive on fd into `stream` (see RecvStream). Returns false, doing
  // nothing, when the kernel has no buffer rings: the caller then uses Recv. The stream must
  // stay alive until its last OnRecv (armed == false).
  bool StartRecvStream(int fd, RecvStream* stream);
  // Ends a stream early; its last OnRecv (armed == false, usually -ECANCELED) still follows.
  void StopRecvStream(RecvStream* stream);
  // Writes len bytes of buf to a file at offset (short writes are continued). Returns 0 or -errno.
  int WriteAllAt(int fd, const char* buf, size_t len, uint64_t offset);
  // Reads up to len bytes of a file at offset. Returns the count (0 at end of file) or -errno.
  int ReadAt(int fd, void* buf, size_t len, uint64_t offset);
  // fsync(2) of a file or directory, without blocking the thread. Returns 0 or -errno.
  int Fsync(int fd);
  // Writes len bytes of buf at offset, then fdatasync(2)s the file: one submission of two linked
  // operations, so the fsync starts in the kernel right after the write without a trip back here
  // (the AOF's group commit). A short write breaks the link; the rest is then written and synced
  // apart. Returns 0 or -errno.
  int WriteAtAndSync(int fd, const char* buf, size_t len, uint64_t offset);
  // rename(2) and unlink(2) in the kernel's workers: replacing or removing a large file frees its
  // blocks, which can take a while. Return 0 or -errno.
  int Rename(const char* from, const char* to);
  int Unlink(const char* path);
  // Sleeps the calling fiber.
  void SleepFor(std::chrono::nanoseconds duration);
  // A sleep that another fiber or task of this thread can cut short (Nap::Wake).
  class Nap {
   public:
    // Sleeps the calling fiber for `duration` or until Wake, whichever comes first.
    void SleepFor(std::chrono::nanoseconds duration);
    // Ends the sleep, if one is going on. On the nap's thread.
    void Wake();

   private:
    IoOp* op_ = nullptr;  // the sleep's timeout while it runs
  };
  // Cancels every pending operation on fd (they complete with -ECANCELED).
  void CancelFd(int fd);

  // --- Registered files. A socket that lives long and sees many operations (a client
  // connection) is put in the ring's file table, so that its recv and send skip the kernel's fd
  // lookup (fget/fput) per operation. The fd stays an ordinary fd. Optional: without a free slot
  // (or kernel support) nothing changes. UnregisterFile must come before close(fd): the table
  // holds a reference that would otherwise keep the socket open.
  void RegisterFile(int fd);
  void UnregisterFile(int fd);

  // --- Cross-thread messages.
  // Sends a hop to thread `to` from a fiber on this thread; yields while the ring is full.
  // hop->Run() executes on `to` (when `start` says), then hop->Done() back here. A hop that
  // forwards itself starts on arrival at the next thread.
  void SendHop(unsigned to, Hop* hop, HopStart start = HopStart::kOnArrival);
  // Posts a task to thread `to` from this thread without blocking (loop context or fiber); when the
  // ring is full the task waits in a local overflow queue, keeping order.
  void Post(unsigned to, Task task);
  // Posts a task from a thread that is not a proactor (main thread, tests). Control plane only:
  // it takes a mutex and writes an eventfd.
  void PostExternal(std::function<void()> fn);

  // Runs task on this thread once the thread has taken in the input that reached it before:
  // completions the kernel holds for this ring are reaped (a connection's recv wakes its fiber),
  // and the task waits until every fiber ready at that point has had its turn (a woken
  // connection parses and runs what it received). At once when no fiber is ready and no such
  // task waits. Call in the loop (an inbox task); tasks run in the order given.
  //
  // Why: inbox tasks otherwise run before the fibers a loop iteration's completions woke, and
  // with DEFER_TASKRUN a recv whose bytes are in the socket is not even completed until the
  // next enter. A client that sends a command on one connection and then, without reading the
  // reply, a command on another connection served by another thread must see them take effect
  // in that order when the second one's hop reaches the first connection's thread to look at
  // or deliver to connections there (a PUBLISH after a PUNSUBSCRIBE), as one Redis thread reads
  // its sockets in the order data arrived. The cost (a look at the ring's flags, a kernel entry
  // only when work waits there, a short hold) falls on the hops that ask for it.
  void RunAfterArrivedInput(Task task);

  // Between two slices of background work done by a fiber of this thread (active defrag, active
  // expiry, lazy freeing, a snapshot's serialization): returns once the fibers whose input had
  // arrived have run and the replies they queued are submitted. A plain yield is not enough:
  // the fibers the next poll wakes queue behind the yielding fiber, and the sends they queue
  // wait for the poll after that, so a request that arrives during one slice would also wait
  // out the next one. Input that arrives meanwhile gets up to kSliceRounds turns before the
  // caller goes on, so a saturating load still leaves the background work its progress.
  void YieldBetweenSlices();

  // --- Counted by UringScheduler: fibers put in the ready queue and taken from it. The queue is
  // FIFO, so once fibers_picked_ reaches a value fibers_queued_ had, every fiber queued by then
  // has had a turn.
  void CountQueuedFiber() { ++fibers_queued_; }
  void CountPickedFiber() { ++fibers_picked_; }

  // --- Used by UringScheduler (the boost.fibers algorithm).
  // Non-blocking: submit queued SQEs, reap completions, run inbox tasks.
  void Poll();
  // Blocks the thread until a completion, a task or the deadline (steady clock).
  void Park(std::chrono::steady_clock::time_point deadline);

 private:
  friend class Nap;
  // The IoOp of a fiber-blocking call: completing it resumes the fiber.
  struct FiberOp final : IoOp {
    boost::fibers::context* waiter = nullptr;
    int res = 0;
    void Complete(int r) override;
  };

  io_uring_sqe* GetSqe();
  bool SetUpRecvBuffers();
  void CompleteRecv(RecvStream* stream, const io_uring_cqe* cqe);
  // Points sqe at fd: its registered slot (IOSQE_FIXED_FILE) when it has one.
  void UseFile(io_uring_sqe* sqe, int fd) const {
    if (const int slot = FixedSlotOf(fd); slot >= 0) {
      sqe->fd = slot;
      sqe->flags |= IOSQE_FIXED_FILE;
    }
  }
  // fd's slot in the registered file table, or -1.
  int FixedSlotOf(int fd) const {
    return size_t(fd) < fixed_slot_of_fd_.size() ? fixed_slot_of_fd_[size_t(fd)] : -1;
  }
  // Queues an SQE prepared by `prep`, suspends the calling fiber until its CQE, returns cqe->res.
  template <typename Prep>
  int Await(Prep&& prep);
  // Await with the operation linked to a timeout; -ETIMEDOUT when the timeout cancelled it.
  template <typename Prep>
  int AwaitWithTimeout(Prep&& prep, std::chrono::nanoseconds timeout);
  void ReapCompletions();
  void EndCycle(uint64_t now);  // closes the cycle that began at cycle_start_
  // Before parking while hops are away: yields the CPU and polls the inboxes for up to
  // kSpinForHopsNs. True when something arrived.
  bool SpinForHops();
  static constexpr uint64_t kSpinForHopsNs = 20'000;
  size_t DrainInboxes();
  // Enters the kernel when it holds completion work for this ring, and reaps the completions.
  void TakeInArrivedInput();
  // Runs the tasks of RunAfterArrivedInput whose fibers have had their turn (at the start of
  // each pass of the loop, Poll and Park).
  void RunTasksAfterInput();
  static void HopRunAfterArrivedInput(void* arg);
  void FlushOverflow();
  bool InboxesEmpty() const;
  // Input this thread has not taken in yet: completions in the CQ ring, completion work the
  // kernel holds for the next enter (DEFER_TASKRUN), or inbox tasks.
  bool InputWaiting() const;
  void WakeSliceWaiters();
  void WakeIfParked(Proactor* target);
  void ArmEventfd();
  void RunExternalTasks();
  static void HopRun(void* arg);
  static void HopDone(void* arg);

  const unsigned index_;
  Mesh* mesh_;
  std::vector<Proactor*>* all_;  // every proactor of the pool, by index
  io_uring ring_{};
  bool ring_ready_ = false;
  bool defer_taskrun_ = false;  // with TASKRUN_FLAG: the kernel flags work it holds for us
  bool msg_ring_supported_ = false;
  // The registered file table: slot by fd (-1: none), and the free slots.
  static constexpr unsigned kFixedFiles = 4096;
  std::vector<int> fixed_slot_of_fd_;
  std::vector<int> free_fixed_slots_;
  unsigned pending_sqes_ = 0;  // SQEs queued since the last enter
  // The buffer ring of multishot receives: kRecvBuffers buffers of kRecvBufferSize bytes, handed
  // to the kernel and given back after each completion has been consumed.
  static constexpr unsigned kRecvBuffers = 128;
  static constexpr unsigned kRecvBufferSize = 4096;
  static constexpr unsigned kRecvBufferGroup = 0;
  io_uring_buf_ring* recv_ring_ = nullptr;
  std::unique_ptr<char[]> recv_buffers_;

  // Set by this thread right before it blocks; a producer that pushes into one of our inboxes
  // and sees it set clears it and sends one wake-up, so a parked thread is woken at most once.
  alignas(kCacheLine) std::atomic<bool> parked_{false};
  alignas(kCacheLine) int event_fd_ = -1;  // wake-ups from non-proactor threads
  uint64_t eventfd_buf_ = 0;
  std::mutex external_mu_;
  std::vector<std::function<void()>> external_tasks_;

  std::vector<std::deque<Task>> overflow_;  // per destination, when its ring was full
  size_t overflow_count_ = 0;
  std::atomic<bool> stop_requested_{false};
  boost::fibers::context* main_waiter_ = nullptr;
  unsigned live_fibers_ = 0;
  Stats stats_;
  unsigned hops_away_ = 0;  // hops sent from here whose Done has not run yet
  uint64_t fibers_queued_ = 0;
  uint64_t fibers_picked_ = 0;
  // RunAfterArrivedInput's tasks from after_input_head_ on, each with the fibers_queued_ count
  // its turn waits for. A vector emptied when all ran, so it allocates nothing once grown.
  struct TaskAfterInput {
    uint64_t after_picks;
    Task task;
  };
  std::vector<TaskAfterInput> after_input_;
  size_t after_input_head_ = 0;
  // Fibers in YieldBetweenSlices: queued again at the end of the next poll, behind the fibers
  // its completions and inbox tasks woke.
  std::vector<boost::fibers::context*> slice_waiters_;
  static constexpr int kSliceRounds = 3;
  uint64_t cycle_start_ = 0;  // CycleClock ticks when the current cycle began
};

// Proactor::YieldBetweenSlices on a proactor's thread; a plain fiber yield elsewhere (unit tests).
void YieldBetweenSlices();

}  // namespace shardis::io

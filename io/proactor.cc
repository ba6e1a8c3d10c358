#include "io/proactor.h"

#include <fcntl.h>

#include <absl/strings/str_cat.h>
#include <glog/logging.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/fiber/all.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/cycle_clock.h"
#include "io/fiber_stack.h"
#include "io/uring_scheduler.h"

namespace shardis::io {

using boost::fibers::context;

namespace {

thread_local Proactor* tl_proactor = nullptr;

// user_data values below this are tags, not IoOp pointers (which are 8-byte aligned).
constexpr uint64_t kIgnoreTag = 0;   // CQEs nobody waits for (the source side of MSG_RING)
constexpr uint64_t kWakeTag = 1;     // a MSG_RING wake-up from another proactor
constexpr uint64_t kEventfdTag = 2;  // the eventfd read completed: external tasks or notify()
constexpr uint64_t kMaxTag = 8;
// Set in the user_data of a multishot receive: the rest is its RecvStream (at least 2-aligned),
// whose completions carry a buffer of the ring rather than an IoOp's result.
constexpr uint64_t kRecvStreamBit = 1;

constexpr unsigned kRingEntries = 1024;
// Tasks taken from one inbox per poll: bounds the time the loop spends away from its own fibers.
constexpr size_t kInboxBudget = 1024;
// Fiber stacks: guard-paged mmap, committed lazily, so an idle connection costs a page or two.
constexpr size_t kFiberStackSize = 256 * 1024;

}  // namespace

Mesh::Mesh(unsigned num_threads, size_t ring_capacity) : n_(num_threads) {
  rings_.reserve(size_t(n_) * n_);
  for (size_t i = 0; i < size_t(n_) * n_; ++i) {
    rings_.push_back(std::make_unique<SpscRing<Task>>(ring_capacity));
  }
}

Proactor::Proactor(unsigned index, Mesh* mesh, std::vector<Proactor*>* all)
    : index_(index), mesh_(mesh), all_(all), overflow_(mesh->size()) {}

Proactor::~Proactor() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (recv_ring_ != nullptr) munmap(recv_ring_, kRecvBuffers * sizeof(io_uring_buf));
  if (event_fd_ >= 0) close(event_fd_);
}

Proactor* Proactor::current() { return tl_proactor; }

absl::Status Proactor::Init() {
  event_fd_ = eventfd(0, EFD_CLOEXEC);
  if (event_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));

  // SINGLE_ISSUER + DEFER_TASKRUN: completions are processed only when this thread enters the
  // ring, which is exactly once per loop iteration anyway, and the kernel skips cross-thread
  // task-work signalling. TASKRUN_FLAG: the kernel says when it holds such work (IORING_SQ_TASKRUN,
  // read by TakeInArrivedInput). Older kernels reject the flags: fall back to a plain ring.
  io_uring_params params{};
  params.flags =
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  int rc = io_uring_queue_init_params(kRingEntries, &ring_, &params);
  if (rc == -EINVAL) {
    params = {};
    rc = io_uring_queue_init_params(kRingEntries, &ring_, &params);
  } else if (rc == 0) {
    defer_taskrun_ = true;
  }
  if (rc < 0) {
    return absl::UnavailableError(absl::StrCat("io_uring_setup failed: ", strerror(-rc)));
  }
  ring_ready_ = true;
  // One fewer fd lookup per io_uring_enter; optional.
  io_uring_register_ring_fd(&ring_);

  // A sparse table for RegisterFile; without it (kernels before 5.19) sockets use plain fds.
  if (io_uring_register_files_sparse(&ring_, kFixedFiles) == 0) {
    for (int slot = int(kFixedFiles) - 1; slot >= 0; --slot) free_fixed_slots_.push_back(slot);
  }

  if (!SetUpRecvBuffers()) LOG(INFO) << "no io_uring buffer rings: one recv per read";

  if (io_uring_probe* probe = io_uring_get_probe_ring(&ring_)) {
    msg_ring_supported_ = io_uring_opcode_supported(probe, IORING_OP_MSG_RING);
    io_uring_free_probe(probe);
  }
  ArmEventfd();
  return absl::OkStatus();
}

bool Proactor::SetUpRecvBuffers() {
  // The ring of buffer descriptors must be page-aligned memory that we give the kernel.
  const size_t ring_bytes = kRecvBuffers * sizeof(io_uring_buf);
  void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  auto* br = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(br);
  reg.ring_entries = kRecvBuffers;
  reg.bgid = kRecvBufferGroup;
  if (io_uring_register_buf_ring(&ring_, &reg, 0) != 0) {
    munmap(mem, ring_bytes);
    return false;
  }
  recv_buffers_ = std::make_unique_for_overwrite<char[]>(size_t(kRecvBuffers) * kRecvBufferSize);
  io_uring_buf_ring_init(br);
  for (unsigned bid = 0; bid < kRecvBuffers; ++bid) {
    io_uring_buf_ring_add(br, recv_buffers_.get() + size_t(bid) * kRecvBufferSize,
                          kRecvBufferSize, uint16_t(bid), io_uring_buf_ring_mask(kRecvBuffers),
                          int(bid));
  }
  io_uring_buf_ring_advance(br, kRecvBuffers);
  recv_ring_ = br;
  return true;
}

void Proactor::ArmEventfd() {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_read(sqe, event_fd_, &eventfd_buf_, sizeof(eventfd_buf_), 0);
  io_uring_sqe_set_data64(sqe, kEventfdTag);
}

io_uring_sqe* Proactor::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // The submission queue is full: hand what we have to the kernel and take a fresh slot.
    io_uring_submit(&ring_);
    ++stats_.enters;
    pending_sqes_ = 0;
    sqe = io_uring_get_sqe(&ring_);
    CHECK(sqe != nullptr);
  }
  ++pending_sqes_;
  return sqe;
}

template <typename Prep>
int Proactor::Await(Prep&& prep) {
  DCHECK(tl_proactor == this) << "I/O must be issued on the proactor's own thread";
  FiberOp op;
  op.waiter = context::active();
  io_uring_sqe* sqe = GetSqe();
  prep(sqe);
  io_uring_sqe_set_data(sqe, static_cast<IoOp*>(&op));
  // Resumed by op.Complete on this thread when the CQE arrives.
  op.waiter->suspend();
  return op.res;
}

template <typename Prep>
int Proactor::AwaitWithTimeout(Prep&& prep, std::chrono::nanoseconds timeout) {
  // Two free slots, so that the operation and its timeout go in one submission: a link does not
  // span submissions.
  if (io_uring_sq_space_left(&ring_) < 2) {
    io_uring_submit(&ring_);
    ++stats_.enters;
    pending_sqes_ = 0;
  }
  // Read by the kernel when the timeout is submitted, which happens before the fiber resumes.
  __kernel_timespec ts;
  ts.tv_sec = timeout.count() / 1000000000;
  ts.tv_nsec = timeout.count() % 1000000000;
  const int res = Await([&](io_uring_sqe* sqe) {
    prep(sqe);
    sqe->flags |= IOSQE_IO_LINK;
    // The timeout's own completion (-ETIME when it fired, -ECANCELED when the operation won)
    // is of no interest: the operation's result says which happened.
    io_uring_sqe* timer = GetSqe();
    io_uring_prep_link_timeout(timer, &ts, 0);
    io_uring_sqe_set_data64(timer, kIgnoreTag);
  });
  return res == -ECANCELED ? -ETIMEDOUT : res;
}

int Proactor::Connect(int fd, const sockaddr* addr, socklen_t addr_len,
                      std::chrono::nanoseconds timeout) {
  return AwaitWithTimeout(
      [&](io_uring_sqe* sqe) { io_uring_prep_connect(sqe, fd, addr, addr_len); }, timeout);
}

int Proactor::Recv(int fd, void* buf, size_t len, std::chrono::nanoseconds timeout) {
  return AwaitWithTimeout(
      [&](io_uring_sqe* sqe) {
        io_uring_prep_recv(sqe, fd, buf, len, 0);
        UseFile(sqe, fd);
      },
      timeout);
}

int Proactor::Send(int fd, const void* buf, size_t len, std::chrono::nanoseconds timeout) {
  return AwaitWithTimeout(
      [&](io_uring_sqe* sqe) {
        io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
        UseFile(sqe, fd);
      },
      timeout);
}

void Proactor::FiberOp::Complete(int r) {
  res = r;
  context::active()->get_scheduler()->schedule(waiter);
}

void Proactor::SendAsync(int fd, const void* buf, size_t len, IoOp* op) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
  UseFile(sqe, fd);
  io_uring_sqe_set_data(sqe, op);
}

void Proactor::PollAsync(int fd, unsigned events, IoOp* op) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_poll_add(sqe, fd, events);
  UseFile(sqe, fd);
  io_uring_sqe_set_data(sqe, op);
}

bool Proactor::StartRecvStream(int fd, RecvStream* stream) {
  if (recv_ring_ == nullptr) return false;
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_recv_multishot(sqe, fd, nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kRecvBufferGroup;
  UseFile(sqe, fd);
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(stream) | kRecvStreamBit);
  return true;
}

void Proactor::StopRecvStream(RecvStream* stream) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(stream) | kRecvStreamBit, 0);
  io_uring_sqe_set_data64(sqe, kIgnoreTag);
}

void Proactor::CompleteRecv(RecvStream* stream, const io_uring_cqe* cqe) {
  const bool armed = cqe->flags & IORING_CQE_F_MORE;
  if (!(cqe->flags & IORING_CQE_F_BUFFER)) {
    stream->OnRecv(cqe->res, nullptr, armed);
    return;
  }
  const unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
  char* buf = recv_buffers_.get() + size_t(bid) * kRecvBufferSize;
  stream->OnRecv(cqe->res, buf, armed);  // may release the stream: not touched after this
  // The data has been copied out: the buffer goes back to the kernel.
  io_uring_buf_ring_add(recv_ring_, buf, kRecvBufferSize, uint16_t(bid),
                        io_uring_buf_ring_mask(kRecvBuffers), 0);
  io_uring_buf_ring_advance(recv_ring_, 1);
}

void Proactor::CancelOp(IoOp* op) {
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_cancel(sqe, op, 0);
  io_uring_sqe_set_data64(sqe, kIgnoreTag);
}

int Proactor::Accept(int listen_fd) {
  return Await([&](io_uring_sqe* sqe) {
    io_uring_prep_accept(sqe, listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  });
}

int Proactor::Recv(int fd, void* buf, size_t len, bool poll_first) {
  return Await([&](io_uring_sqe* sqe) {
    io_uring_prep_recv(sqe, fd, buf, len, 0);
    if (poll_first) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
    UseFile(sqe, fd);
  });
}

int Proactor::Send(int fd, const void* buf, size_t len) {
  return Await([&](io_uring_sqe* sqe) {
    io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
    UseFile(sqe, fd);
  });
}

int Proactor::WriteAllAt(int fd, const char* buf, size_t len, uint64_t offset) {
  while (len > 0) {
    // One write moves at most ~2 GiB (the kernel's MAX_RW_COUNT): ask for no more than that.
    const unsigned chunk = unsigned(std::min<size_t>(len, size_t{1} << 30));
    // IOSQE_ASYNC: straight to the kernel's workers. Otherwise a buffered write the page cache
    // can take at once is done inline, in this thread's submit: a MiB copied while the loop's
    // clients wait.
    const int n = Await([&](io_uring_sqe* sqe) {
      io_uring_prep_write(sqe, fd, buf, chunk, offset);
      sqe->flags |= IOSQE_ASYNC;
    });
    if (n < 0) return n;
    if (n == 0) return -EIO;
    buf += n;
    len -= size_t(n);
    offset += uint64_t(n);
  }
  return 0;
}

int Proactor::ReadAt(int fd, void* buf, size_t len, uint64_t offset) {
  const unsigned chunk = unsigned(std::min<size_t>(len, size_t{1} << 30));
  return Await([&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, fd, buf, chunk, offset); });
}

int Proactor::Fsync(int fd) {
  return Await([&](io_uring_sqe* sqe) { io_uring_prep_fsync(sqe, fd, 0); });
}

int Proactor::Rename(const char* from, const char* to) {
  return Await([&](io_uring_sqe* sqe) { io_uring_prep_renameat(sqe, AT_FDCWD, from, AT_FDCWD, to, 0); });
}

int Proactor::Unlink(const char* path) {
  return Await([&](io_uring_sqe* sqe) { io_uring_prep_unlinkat(sqe, AT_FDCWD, path, 0); });
}

int Proactor::SendAll(int fd, const char* buf, size_t len) {
  while (len > 0) {
    int n = Send(fd, buf, len);
    if (n < 0) return n;
    if (n == 0) return -EPIPE;
    buf += n;
    len -= size_t(n);
  }
  return 0;
}

void Proactor::SleepFor(std::chrono::nanoseconds duration) {
  __kernel_timespec ts;
  ts.tv_sec = duration.count() / 1000000000;
  ts.tv_nsec = duration.count() % 1000000000;
  Await([&](io_uring_sqe* sqe) { io_uring_prep_timeout(sqe, &ts, 0, 0); });
}

void Proactor::Nap::SleepFor(std::chrono::nanoseconds duration) {
  Proactor* p = Proactor::current();
  __kernel_timespec ts;
  ts.tv_sec = duration.count() / 1000000000;
  ts.tv_nsec = duration.count() % 1000000000;
  FiberOp op;
  op.waiter = context::active();
  io_uring_sqe* sqe = p->GetSqe();
  io_uring_prep_timeout(sqe, &ts, 0, 0);
  io_uring_sqe_set_data(sqe, static_cast<IoOp*>(&op));
  op_ = &op;
  op.waiter->suspend();
  op_ = nullptr;
}

void Proactor::Nap::Wake() {
  if (op_ == nullptr) return;
  Proactor::current()->CancelOp(op_);
  op_ = nullptr;  // one cancel is enough
}

int Proactor::WriteAtAndSync(int fd, const char* buf, size_t len, uint64_t offset) {
  DCHECK(tl_proactor == this) << "I/O must be issued on the proactor's own thread";
  // Both operations complete before the fiber resumes; the fsync's result counts only if the
  // write was whole (a short write cancels it: the link is broken).
  struct LinkedOps {
    struct Op final : IoOp {
      LinkedOps* both = nullptr;
      int res = 0;
      void Complete(int r) override {
        res = r;
        if (--both->outstanding == 0) context::active()->get_scheduler()->schedule(both->waiter);
      }
    };
    Op write, sync;
    int outstanding = 2;
    context* waiter = nullptr;
  } ops;
  ops.write.both = ops.sync.both = &ops;
  ops.waiter = context::active();
  const unsigned chunk = unsigned(std::min<size_t>(len, size_t{1} << 30));
  // Two free slots, so that the pair goes to the kernel in one submission: a link does not span
  // submissions.
  if (io_uring_sq_space_left(&ring_) < 2) {
    io_uring_submit(&ring_);
    ++stats_.enters;
    pending_sqes_ = 0;
  }
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_write(sqe, fd, buf, chunk, offset);
  sqe->flags |= IOSQE_IO_LINK | IOSQE_ASYNC;  // ASYNC: see WriteAllAt
  io_uring_sqe_set_data(sqe, static_cast<IoOp*>(&ops.write));
  sqe = GetSqe();
  io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
  io_uring_sqe_set_data(sqe, static_cast<IoOp*>(&ops.sync));
  ops.waiter->suspend();
  if (ops.write.res < 0) return ops.write.res;
  if (size_t(ops.write.res) == len && ops.sync.res >= 0) return 0;
  if (size_t(ops.write.res) < len) {
    if (ops.write.res == 0) return -EIO;
    const int rc = WriteAllAt(fd, buf + ops.write.res, len - size_t(ops.write.res),
                              offset + uint64_t(ops.write.res));
    if (rc < 0) return rc;
  } else if (ops.sync.res != -ECANCELED) {
    return ops.sync.res;
  }
  return Await([&](io_uring_sqe* s) { io_uring_prep_fsync(s, fd, IORING_FSYNC_DATASYNC); });
}

void Proactor::CancelFd(int fd) {
  io_uring_sqe* sqe = GetSqe();
  if (const int slot = FixedSlotOf(fd); slot >= 0) {
    io_uring_prep_cancel_fd(sqe, slot, IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
  } else {
    io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
  }
  io_uring_sqe_set_data64(sqe, kIgnoreTag);
}

void Proactor::RegisterFile(int fd) {
  DCHECK(tl_proactor == this);
  if (fd < 0 || free_fixed_slots_.empty()) return;
  const int slot = free_fixed_slots_.back();
  if (io_uring_register_files_update(&ring_, unsigned(slot), &fd, 1) != 1) return;
  free_fixed_slots_.pop_back();
  if (size_t(fd) >= fixed_slot_of_fd_.size()) fixed_slot_of_fd_.resize(size_t(fd) + 1, -1);
  fixed_slot_of_fd_[size_t(fd)] = slot;
}

void Proactor::UnregisterFile(int fd) {
  DCHECK(tl_proactor == this);
  const int slot = FixedSlotOf(fd);
  if (slot < 0) return;
  fixed_slot_of_fd_[size_t(fd)] = -1;
  // Operations still in flight keep their own reference to the file; the slot is free at once.
  int none = -1;
  io_uring_register_files_update(&ring_, unsigned(slot), &none, 1);
  free_fixed_slots_.push_back(slot);
}

bool Proactor::Launch(std::function<void()> fn) {
  DCHECK(tl_proactor == this);
  try {
    boost::fibers::fiber(std::allocator_arg, FiberStack(kFiberStackSize),
                         [this, fn = std::move(fn)] {
                           fn();
                           // The last fiber out lets a stopping Run() return.
                           if (--live_fibers_ == 0 && stop_requested_.load() && main_waiter_) {
                             context* waiter = std::exchange(main_waiter_, nullptr);
                             context::active()->schedule(waiter);
                           }
                         })
        .detach();
  } catch (const std::bad_alloc&) {
    // FiberStack::allocate found no memory for the stack; nothing was started.
    return false;
  }
  ++live_fibers_;
  return true;
}

void Proactor::Run(std::function<void()> on_start) {
  tl_proactor = this;
  cycle_start_ = core::CycleClock::Now();
  boost::fibers::use_scheduling_algorithm<UringScheduler>(this);
  Launch(std::move(on_start));
  // The thread's main context sleeps here; Stop() and the last fiber wake it.
  while (!(stop_requested_.load() && live_fibers_ == 0)) {
    main_waiter_ = context::active();
    main_waiter_->suspend();
  }
  main_waiter_ = nullptr;
}

void Proactor::Stop() {
  PostExternal([this] {
    stop_requested_.store(true);
    if (live_fibers_ == 0 && main_waiter_) {
      context* waiter = std::exchange(main_waiter_, nullptr);
      context::active()->schedule(waiter);
    }
  });
}

void Proactor::SendHop(unsigned to, Hop* hop, HopStart start) {
  hop->origin_ = index_;
  ++hops_away_;
  Task task{start == HopStart::kOnArrival ? &Proactor::HopRun : &Proactor::HopRunAfterArrivedInput,
            hop};
  SpscRing<Task>& ring = mesh_->ring(index_, to);
  // Backpressure: a full ring makes this fiber yield (the loop keeps draining our own inboxes in
  // the meantime, so two threads with full rings towards each other still make progress).
  while (!overflow_[to].empty() || !ring.TryPush(task)) {
    ++stats_.ring_full_waits;
    FlushOverflow();
    if (overflow_[to].empty() && ring.TryPush(task)) break;
    boost::this_fiber::yield();
  }
  WakeIfParked((*all_)[to]);
}

void Proactor::HopRun(void* arg) {
  Hop* hop = static_cast<Hop*>(arg);
  hop->forward_to_ = -1;
  hop->Run();
  Proactor* self = Proactor::current();
  if (hop->forward_to_ >= 0) {
    DCHECK_NE(unsigned(hop->forward_to_), self->index_);
    self->Post(unsigned(hop->forward_to_), Task{&Proactor::HopRun, hop});
  } else if (hop->origin_ == self->index_) {
    HopDone(hop);  // a forwarded hop whose last step was at home
  } else {
    self->Post(hop->origin_, Task{&Proactor::HopDone, hop});
  }
}

void Proactor::HopRunAfterArrivedInput(void* arg) {
  Proactor::current()->RunAfterArrivedInput(Task{&Proactor::HopRun, arg});
}

void Proactor::HopDone(void* arg) {
  --Proactor::current()->hops_away_;
  static_cast<Hop*>(arg)->Done();
}

void Proactor::Post(unsigned to, Task task) {
  if (overflow_[to].empty() && mesh_->ring(index_, to).TryPush(task)) {
    WakeIfParked((*all_)[to]);
    return;
  }
  overflow_[to].push_back(task);
  ++overflow_count_;
}

void Proactor::FlushOverflow() {
  if (overflow_count_ == 0) return;
  for (unsigned to = 0; to < overflow_.size(); ++to) {
    auto& q = overflow_[to];
    if (q.empty()) continue;
    SpscRing<Task>& ring = mesh_->ring(index_, to);
    while (!q.empty() && ring.TryPush(q.front())) {
      q.pop_front();
      --overflow_count_;
    }
    WakeIfParked((*all_)[to]);
  }
}

void Proactor::WakeIfParked(Proactor* target) {
  // Pairs with the fence in Park(): either the target sees our pushed task when it re-checks its
  // inboxes, or we see its parked_ flag here. seq_cst on both sides rules out missing both.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!target->parked_.load(std::memory_order_relaxed)) return;
  // exchange (not store) so that among several producers only one sends the wake-up.
  if (!target->parked_.exchange(false, std::memory_order_relaxed)) return;
  ++stats_.wakeups_sent;
  if (msg_ring_supported_) {
    // Rides on our next batched submit: no syscall of its own.
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_msg_ring(sqe, target->ring_.ring_fd, 0, kWakeTag, 0);
    io_uring_sqe_set_data64(sqe, kIgnoreTag);
  } else {
    uint64_t one = 1;
    ssize_t n = write(target->event_fd_, &one, sizeof(one));
    (void)n;
  }
}

void Proactor::PostExternal(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(external_mu_);
    external_tasks_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  ssize_t n = write(event_fd_, &one, sizeof(one));
  (void)n;
}

void Proactor::RunExternalTasks() {
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> lock(external_mu_);
    tasks.swap(external_tasks_);
  }
  for (auto& fn : tasks) fn();
}

void Proactor::RunAfterArrivedInput(Task task) {
  TakeInArrivedInput();
  if (after_input_head_ == after_input_.size() && fibers_picked_ == fibers_queued_) {
    task.fn(task.arg);  // no fiber is ready: what had arrived is taken in already
    return;
  }
  ++stats_.tasks_after_input;
  after_input_.push_back({fibers_queued_, task});
}

void Proactor::TakeInArrivedInput() {
  // With DEFER_TASKRUN, bytes that reached a socket are only queued as work for our next enter:
  // enter when the kernel flags such work. The flag is set before the sender's send returns (the
  // wake-up of the socket's poll queues the work), so it covers whatever arrived before the task.
  // A plain ring has no such flag: enter every time.
  if (!defer_taskrun_ || (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_TASKRUN) != 0) {
    io_uring_get_events(&ring_);
    ++stats_.enters;
  }
  ReapCompletions();
}

void Proactor::YieldBetweenSlices() {
  context* self = context::active();
  for (int round = 0; round < kSliceRounds; ++round) {
    slice_waiters_.push_back(self);
    self->suspend();
    // The fibers the poll woke have run up to their next wait: what they queued (replies) goes
    // to the kernel now, not after the caller's next slice.
    if (pending_sqes_ > 0) {
      io_uring_submit(&ring_);
      pending_sqes_ = 0;
      ++stats_.enters;
    }
    if (!InputWaiting()) return;
  }
}

void YieldBetweenSlices() {
  if (Proactor* p = Proactor::current(); p != nullptr) {
    p->YieldBetweenSlices();
  } else {
    boost::this_fiber::yield();
  }
}

bool Proactor::InputWaiting() const {
  if (io_uring_cq_ready(&ring_) > 0) return true;
  if (defer_taskrun_ && (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_TASKRUN) != 0) return true;
  return !InboxesEmpty();
}

void Proactor::WakeSliceWaiters() {
  if (slice_waiters_.empty()) return;
  for (context* waiter : slice_waiters_) context::active()->schedule(waiter);
  slice_waiters_.clear();
}

void Proactor::RunTasksAfterInput() {
  while (after_input_head_ < after_input_.size() &&
         after_input_[after_input_head_].after_picks <= fibers_picked_) {
    const Task task = after_input_[after_input_head_++].task;
    task.fn(task.arg);
  }
  if (after_input_head_ == after_input_.size()) {
    after_input_.clear();
    after_input_head_ = 0;
  }
}

bool Proactor::InboxesEmpty() const {
  for (unsigned from = 0; from < mesh_->size(); ++from) {
    if (from != index_ && !mesh_->ring(from, index_).Empty()) return false;
  }
  return true;
}

size_t Proactor::QueuedTasks() const {
  size_t n = overflow_count_;
  for (unsigned from = 0; from < mesh_->size(); ++from) {
    if (from != index_) n += mesh_->ring(from, index_).SizeApprox();
  }
  return n;
}

size_t Proactor::DrainInboxes() {
  size_t ran = 0;
  for (unsigned from = 0; from < mesh_->size(); ++from) {
    if (from == index_) continue;
    SpscRing<Task>& ring = mesh_->ring(from, index_);
    Task task;
    for (size_t i = 0; i < kInboxBudget && ring.TryPop(&task); ++i) {
      task.fn(task.arg);
      ++ran;
    }
  }
  stats_.tasks_run += ran;
  return ran;
}

void Proactor::ReapCompletions() {
  io_uring_cqe* cqe;
  unsigned head;
  unsigned seen = 0;
  bool eventfd_fired = false;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    ++seen;
    uint64_t data = io_uring_cqe_get_data64(cqe);
    if (data >= kMaxTag) {
      if (data & kRecvStreamBit) {
        CompleteRecv(reinterpret_cast<RecvStream*>(data & ~kRecvStreamBit), cqe);
      } else {
        reinterpret_cast<IoOp*>(data)->Complete(cqe->res);
      }
    } else if (data == kEventfdTag) {
      eventfd_fired = true;
    }
    // kWakeTag and kIgnoreTag need nothing: a wake-up only has to end the wait.
  }
  io_uring_cq_advance(&ring_, seen);
  if (eventfd_fired) {
    ArmEventfd();
    RunExternalTasks();
  }
}

void Proactor::Poll() {
  ++stats_.loop_polls;
  RunTasksAfterInput();
  FlushOverflow();
  // One enter per iteration: submit what the fibers queued and (with DEFER_TASKRUN) run the
  // completion work. Without pending SQEs and without DEFER_TASKRUN the CQ ring is read directly.
  if (pending_sqes_ > 0 || defer_taskrun_) {
    io_uring_submit_and_get_events(&ring_);
    pending_sqes_ = 0;
    ++stats_.enters;
  }
  const uint64_t now = core::CycleClock::Now();
  EndCycle(now);
  cycle_start_ = now;
  ReapCompletions();
  DrainInboxes();
  WakeSliceWaiters();
}

void Proactor::Park(std::chrono::steady_clock::time_point deadline) {
  RunTasksAfterInput();  // the ready queue is empty: every fiber they waited for has run
  FlushOverflow();
  ReapCompletions();
  if (DrainInboxes() > 0 || context::active()->get_scheduler()->has_ready_fibers() ||
      !slice_waiters_.empty()) {
    Poll();
    return;
  }
  if (hops_away_ > 0 && SpinForHops()) {
    Poll();
    return;
  }
  // Announce that we are about to block, then look at the inboxes once more (see WakeIfParked).
  parked_.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!InboxesEmpty()) {
    parked_.store(false, std::memory_order_relaxed);
    Poll();
    return;
  }
  ++stats_.parks;
  ++stats_.enters;
  pending_sqes_ = 0;
  const uint64_t park_start = core::CycleClock::Now();
  EndCycle(park_start);
  io_uring_cqe* cqe = nullptr;
  if (overflow_count_ > 0) {
    // Our own outbox is full: the peer drains it without telling us, so look again shortly.
    deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::microseconds(50));
  }
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    io_uring_submit_and_wait(&ring_, 1);
  } else {
    auto wait = deadline - std::chrono::steady_clock::now();
    if (wait < std::chrono::nanoseconds(0)) wait = std::chrono::nanoseconds(0);
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    __kernel_timespec ts{ns / 1000000000, ns % 1000000000};
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
  }
  parked_.store(false, std::memory_order_relaxed);
  cycle_start_ = core::CycleClock::Now();
  stats_.parked_ns += core::CycleClock::ToNs(cycle_start_ - park_start);
  ReapCompletions();
  DrainInboxes();
}

bool Proactor::SpinForHops() {
  // Hops this thread sent are away, and their answers are what our fibers wait for. Rather than
  // block (a wake-up through the kernel for each answer), give the CPU to whoever else may run on
  // it (the thread that owes us the answer, when both share a CPU) and look again, for a short
  // while. On a CPU of its own sched_yield returns at once and this is a short poll.
  ++stats_.spins;
  if (pending_sqes_ > 0) {
    // What the fibers queued (replies, wake-ups of parked peers) must not wait for the spin.
    io_uring_submit(&ring_);
    pending_sqes_ = 0;
    ++stats_.enters;
  }
  const uint64_t until = core::CycleClock::Now() + core::CycleClock::FromNs(kSpinForHopsNs);
  do {
    sched_yield();
    if (!InboxesEmpty()) return true;
  } while (core::CycleClock::Now() < until);
  return false;
}

void Proactor::EndCycle(uint64_t now) {
  const uint64_t ns = core::CycleClock::ToNs(now - cycle_start_);
  ++stats_.cycles;
  stats_.cycle_ns_sum += ns;
  stats_.cycle_ns_max = std::max(stats_.cycle_ns_max, ns);
}

}  // namespace shardis::io

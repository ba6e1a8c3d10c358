#include "shard/journal_durability.h"

#include <boost/fiber/context.hpp>
#include <glog/logging.h>

#include <array>
#include <atomic>
#include <vector>

#include "io/proactor.h"
#include "shard/memory_limit.h"
#include "shard/shard_set.h"

namespace shardis::shard {

namespace {

using boost::fibers::context;
constexpr unsigned kMaxThreads = MemoryLimit::kMaxShards;  // a thread per shard

std::atomic<bool> g_active{false};   // the AOF is on
std::atomic<bool> g_durable_on{false};  // appendfsync always
// g_durable[i]: shard i's journal is on disk up to this record. Written by the writer only.
std::array<std::atomic<uint64_t>, kMaxThreads> g_durable{};
// g_waiting[t]: how many fibers of thread t wait. With g_durable, both seq_cst: a writer that
// sees no waiter after its store is sure the waiter sees the store (and does not wait).
std::array<std::atomic<uint32_t>, kMaxThreads> g_waiting{};

std::atomic<bool> g_writer_asleep{false};
std::atomic<unsigned> g_writer_thread{0};
std::atomic<void (*)()> g_writer_wake{nullptr};

// The waiting fibers of this thread; each checks again when woken.
thread_local std::vector<context*> tl_waiters;

void WakeWaiters() {
  std::vector<context*> waiters;
  waiters.swap(tl_waiters);
  for (context* fiber : waiters) context::active()->schedule(fiber);
}

void WakeWaitersTask(void*) { WakeWaiters(); }

void WakeWriterTask(void*) {
  if (void (*wake)() = g_writer_wake.load(); wake != nullptr) wake();
}

// Runs fn(arg) on thread t: at once when it is this one, else posted.
void RunOn(unsigned t, void (*fn)(void*)) {
  io::Proactor* self = io::Proactor::current();
  if (t == self->index()) return fn(nullptr);
  self->Post(t, io::Task{fn, nullptr});
}

void WakeWaitingThreads() {
  const unsigned threads = shard_set->size();
  for (unsigned t = 0; t < threads; ++t) {
    if (g_waiting[t].load() > 0) RunOn(t, &WakeWaitersTask);
  }
}

bool Durable(std::span<const uint64_t> targets) {
  for (size_t i = 0; i < targets.size(); ++i) {
    if (g_durable[i].load() < targets[i]) return false;
  }
  return true;
}

}  // namespace

void SetJournalWaits(bool aof_on, bool durable_replies) {
  const bool was_active = g_active.exchange(aof_on);
  const bool was_durable = g_durable_on.exchange(aof_on && durable_replies);
  const bool released = (was_active && !aof_on) || (was_durable && !(aof_on && durable_replies));
  if (released && io::Proactor::current() != nullptr && shard_set != nullptr) WakeWaitingThreads();
}

bool JournalWaitsActive() { return g_active.load(std::memory_order_relaxed); }

namespace {

bool DurableReplies() { return g_durable_on.load(std::memory_order_relaxed); }

// flagged: each shard's own flag (cheap to read); else the counts themselves.
bool BacklogOver(bool flagged) {
  const unsigned n = shard_set->size();
  for (unsigned i = 0; i < n; ++i) {
    const ShardJournal& j = shard_set->shard(i).journal();
    if (flagged ? j.over_backlog_limit() : j.backlog_bytes() > ShardJournal::kBacklogLimit) {
      return true;
    }
  }
  return false;
}

// Suspends the calling fiber until `ready` or until the waits turn off; each publication wakes
// it to look again.
template <typename Ready>
void WaitUntil(const Ready& ready) {
  const unsigned self = io::Proactor::current()->index();
  g_waiting[self].fetch_add(1);
  while (g_active.load() && !ready()) {
    tl_waiters.push_back(context::active());
    context::active()->suspend();
  }
  g_waiting[self].fetch_sub(1);
}

}  // namespace

void AwaitJournal() {
  if (!JournalWaitsActive()) return;
  if (!DurableReplies()) {
    if (BacklogOver(/*flagged=*/true)) WaitUntil([] { return !BacklogOver(/*flagged=*/false); });
    return;
  }
  const unsigned n = shard_set->size();
  uint64_t targets_buf[64];
  std::vector<uint64_t> targets_big;
  uint64_t* targets = targets_buf;
  if (n > std::size(targets_buf)) {
    targets_big.resize(n);
    targets = targets_big.data();
  }
  for (unsigned i = 0; i < n; ++i) targets[i] = shard_set->shard(i).journal().seq();
  const std::span<const uint64_t> wanted(targets, n);
  if (Durable(wanted)) return;
  if (g_writer_asleep.exchange(false)) RunOn(g_writer_thread.load(), &WakeWriterTask);
  WaitUntil([&] { return !g_durable_on.load() || Durable(wanted); });
}

void PublishJournalWritten(std::span<const uint64_t> bytes) {
  DCHECK_LE(bytes.size(), kMaxThreads);
  for (size_t i = 0; i < bytes.size(); ++i) shard_set->shard(unsigned(i)).journal().set_written_bytes(bytes[i]);
  WakeWaitingThreads();
}

void PublishJournalDurable(std::span<const uint64_t> seqs) {
  DCHECK_LE(seqs.size(), kMaxThreads);
  for (size_t i = 0; i < seqs.size(); ++i) g_durable[i].store(seqs[i]);
  WakeWaitingThreads();
}

uint64_t JournalBacklogBytes() {
  if (!JournalWaitsActive() || shard_set == nullptr) return 0;
  uint64_t sum = 0;
  for (unsigned i = 0; i < shard_set->size(); ++i) {
    sum += shard_set->shard(i).journal().backlog_bytes();
  }
  return sum;
}

void SetJournalWriterAsleep(bool asleep, unsigned thread, void (*wake)()) {
  g_writer_thread.store(thread);
  g_writer_wake.store(wake);
  g_writer_asleep.store(asleep);
  // The writer reads the journals' seqs next: a fiber that did not see the doorbell up has its
  // record there (its shard's store came before its look at the doorbell).
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace shardis::shard

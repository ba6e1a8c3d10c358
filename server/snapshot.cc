#include "server/snapshot.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/fiber/operations.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <cstring>
#include <ctime>
#include <memory>
#include <time.h>
#include <vector>

#include "core/crc64.h"
#include "core/rdb_format.h"
#include "core/rdb_writer.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/function_registry.h"
#include "server/persistence_config.h"
#include "server/persistence_status.h"
#include "server/server_state.h"
#include "shard/shard_set.h"
#include "shard/snapshot.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

const char kMisconfError[] =
    "Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. "
    "Commands that may modify the data set are disabled, because this instance is configured to "
    "report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). "
    "Please check the Redis logs for details about the RDB error.";

}  // namespace

namespace {

using shard::Shard;
using shard::ShardSnapshot;

// A shard hands its records to the file in pieces of about this size: with one piece being
// written and the next being filled, a shard holds about twice this in flight (plus what writes
// to not yet serialized buckets add meanwhile). Small enough that copying one into the page
// cache (a kernel worker on the shard's CPU) holds the CPU only briefly.
constexpr size_t kPieceBytes = 256 * 1024;
// A slice of serialization between two yields to the loop, checked every kSliceBuckets buckets
// (a bucket holds ~1-16 keys), and the share of the thread it leaves to clients under load.
constexpr auto kSliceTime = std::chrono::microseconds(100);
constexpr size_t kSliceBuckets = 8;
constexpr int kBusyShare = 11;
constexpr auto kBusySleep = std::chrono::microseconds(200);
constexpr auto kIdleAfter = std::chrono::milliseconds(1);
// After a failed background save the schedule waits this long before trying again (Redis'
// CONFIG_BGSAVE_RETRY_DELAY).
constexpr int64_t kRetryDelayMs = 5000;

std::atomic<bool> g_saving{false};
std::atomic<bool> g_saving_aof_base{false};  // the running save is an AOF base (a rewrite's)
std::atomic<bool> g_abort{false};  // AbortAndHoldSaves asked the running save to stop
std::atomic<bool> g_saves_held{false};  // a shutdown holds every save but its own
std::atomic<bool> g_bgsave_scheduled{false};
std::atomic<int64_t> g_last_bgsave_try_ms{0};

// One save in progress: the file and what every shard wrote into it.
struct SaveJob {
  struct Piece {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t crc = 0;
  };
  // Written only by its own shard's thread; read by the coordinator after all of them ended.
  struct PerShard {
    std::vector<Piece> pieces;
    uint64_t keys = 0;
    uint64_t dirty_at_cut = 0;
    size_t used_memory = 0;
    std::array<uint64_t, Shard::kNumDbs> db_keys{};     // at the cut, for RESIZEDB
    std::array<uint64_t, Shard::kNumDbs> db_expires{};
    bool aborted = false;
    int error = 0;  // errno of a failed write
  };

  std::string path;  // absolute: a CONFIG SET dir during the save must not move the rename
  std::string temp;  // temp-<pid>.rdb next to it
  std::chrono::steady_clock::time_point start;
  int fd = -1;
  bool compression = true;
  bool checksum = true;
  int64_t key_delay_us = 0;
  std::vector<std::string> functions;  // the libraries' code at the cut (shard 0's phase)
  std::atomic<uint64_t> next_offset{0};
  std::atomic<bool> failed{false};  // a shard failed: the others stop early
  std::vector<PerShard> shards;
  // The AOF's base (SaveAofBase): run on every shard inside the cut's step; and such a file is
  // not a save (LASTSAVE and the dirty counter's base stay).
  std::function<void(Shard&)> at_cut;
  bool counts_as_save = true;
  bool journal_cut = false;  // the cut's transaction marks the journals (an AOF rewrite's switch)
};

// What this thread did for clients so far: commands it ran and hops it took from other threads.
// A change across a yield means clients are being served here.
uint64_t ClientWork(io::Proactor* p) {
  return ServerThreadState::current().stats().commands_processed + p->stats().tasks_run;
}

// CPU time of the calling thread, in ns.
int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Slices of SerializeSome on this shard until its part of the cut is written. A slice serializes
// for about kSliceTime, then the fiber yields to the loop. While clients are served on this
// thread, the save keeps its share of the thread's CPU time at most 1 / (1 + kBusyShare): it
// sleeps until the clients' CPU time since the load began is kBusyShare times its own. Counting
// CPU time, not wall time, keeps the share right when threads share a CPU. Sleeping, not
// yielding, lets the thread park and be woken at once by a hop (a fiber that only yields keeps
// its thread busy for the kernel). On an idle thread the save goes on at full speed.
void WriteShardPart(Shard& shard, SaveJob& job) {
  ShardSnapshot* snap = shard.snapshot();
  io::Proactor* p = io::Proactor::current();
  SaveJob::PerShard& mine = job.shards[shard.id()];
  using Clock = std::chrono::steady_clock;
  // The CPU accounting of the current busy stretch: the thread's CPU time when it began and the
  // save's part of what was spent since.
  int64_t stretch_start_ns = ThreadCpuNs();
  int64_t save_ns = 0;
  uint64_t hooks_at_stretch = 0;
  // When clients last did something on this thread. A yield returns within microseconds, often
  // before the next request arrives, so the thread counts as idle only after kIdleAfter without
  // client work: judged by one yield, a busy thread looked idle often enough to give the save
  // more than its share.
  uint64_t last_work = ClientWork(p);
  Clock::time_point last_work_at = Clock::now();
  bool more = true;
  while (more && !snap->aborted() && !job.failed.load(std::memory_order_relaxed)) {
    if (g_abort.load(std::memory_order_relaxed)) {
      snap->Abort();
      break;
    }
    const int64_t cpu_before = ThreadCpuNs();
    if (job.key_delay_us > 0) {
      // rdb-key-save-delay (tests make a save last): one bucket, then the delay per key.
      const uint64_t keys_before = snap->keys();
      more = snap->SerializeSome(1, kPieceBytes);
      const uint64_t keys = snap->keys() - keys_before;
      if (keys > 0) p->SleepFor(std::chrono::microseconds(job.key_delay_us * int64_t(keys)));
    } else {
      const Clock::time_point start = Clock::now();
      do {
        more = snap->SerializeSome(kSliceBuckets, kPieceBytes);
      } while (more && snap->output_size() < kPieceBytes && Clock::now() - start < kSliceTime);
    }
    std::string piece;
    if (snap->output_size() >= kPieceBytes || (!more && snap->output_size() > 0)) {
      piece = snap->TakeOutput();
      mine.pieces.push_back({job.next_offset.fetch_add(piece.size(), std::memory_order_relaxed),
                             piece.size(), job.checksum ? core::Crc64(0, piece) : 0});
    }
    save_ns += ThreadCpuNs() - cpu_before;
    if (!piece.empty()) {
      // Writes into buckets not yet serialized go on filling a new output meanwhile.
      if (const int rc = p->WriteAllAt(job.fd, piece.data(), piece.size(), mine.pieces.back().offset);
          rc < 0) {
        mine.error = -rc;
        job.failed.store(true, std::memory_order_relaxed);
        break;
      }
    }
    if (!more) break;
    p->YieldBetweenSlices();
    if (const uint64_t work = ClientWork(p); work != last_work) {
      last_work = work;
      last_work_at = Clock::now();
    } else if (Clock::now() - last_work_at >= kIdleAfter) {  // idle: a new stretch begins
      stretch_start_ns = ThreadCpuNs();
      save_ns = 0;
      hooks_at_stretch = snap->before_change_ns();
      continue;
    }
    // Busy. The save's part is the walk plus what clients' commands spent serializing buckets
    // before their changes. A full piece goes to the file at once whatever the share, to keep
    // memory small.
    auto save_part = [&] { return save_ns + int64_t(snap->before_change_ns() - hooks_at_stretch); };
    while (snap->output_size() < kPieceBytes &&
           (ThreadCpuNs() - stretch_start_ns - save_part()) < save_part() * kBusyShare) {
      const uint64_t before = ClientWork(p);
      p->SleepFor(kBusySleep);
      if (ClientWork(p) == before) break;  // the clients went quiet meanwhile
    }
  }
  mine.aborted = snap->aborted();
  mine.keys = snap->keys();
  shard.set_snapshot(nullptr);
  delete snap;
}

absl::Status ErrnoStatus(std::string_view what, int err) {
  return absl::InternalError(core::Concat(what, ": ", strerror(err)));
}

// The directory of path ("." for a bare name), fsynced so that a rename in it is durable.
int FsyncDirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int rc = io::Proactor::current()->Fsync(fd);
  close(fd);
  return rc;
}

// The file's checksum from the header's and every piece's, in file order; false when the pieces
// do not tile the file from `start` to `end`.
bool CombineChecksums(const SaveJob& job, uint64_t header_crc, uint64_t start, uint64_t end,
                      uint64_t* crc) {
  std::vector<SaveJob::Piece> pieces;
  for (const SaveJob::PerShard& s : job.shards) pieces.insert(pieces.end(), s.pieces.begin(), s.pieces.end());
  std::sort(pieces.begin(), pieces.end(),
            [](const SaveJob::Piece& a, const SaveJob::Piece& b) { return a.offset < b.offset; });
  *crc = header_crc;
  uint64_t at = start;
  for (const SaveJob::Piece& piece : pieces) {
    if (piece.offset != at) return false;
    *crc = core::Crc64Combine(*crc, piece.crc, piece.length);
    at += piece.length;
  }
  return at == end;
}

// The cut: one step on every shard, holding every key, where each shard attaches its snapshot.
void TakeCut(SaveJob& job) {
  job.shards.resize(shard::shard_set->size());
  shard::Transaction tx(0, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
  tx.set_journaled(job.journal_cut);  // the cut changes no data, but may mark a file switch
  tx.Run(
      [&](shard::TxShard& t) {
        SaveJob::PerShard& mine = job.shards[t.shard.id()];
        mine.dirty_at_cut = t.shard.stats().dirty;
        mine.used_memory = t.shard.used_memory();
        for (int db = 0; db < Shard::kNumDbs; ++db) {
          mine.db_keys[db] = t.shard.db(db).size();
          mine.db_expires[db] = t.shard.db(db).expires_count();
        }
        t.shard.set_snapshot(new ShardSnapshot(&t.shard, job.compression));
        // Every thread holds the same libraries, changed only under transactions like this one.
        if (t.shard.id() == 0) job.functions = FunctionRegistry::current().Codes();
        if (job.at_cut) job.at_cut(t.shard);
      },
      /*conclude=*/true);
}

// The signature, aux fields and a SELECTDB+RESIZEDB per database with keys at the cut (each
// piece has its own SELECTDB; the hints let a loader size its tables once).
absl::StatusOr<std::string> HeaderBytes(const SaveJob& job) {
  size_t used_memory = 0;
  for (const SaveJob::PerShard& s : job.shards) used_memory += s.used_memory;
  core::StringSink sink;
  core::RdbWriter header(&sink, {.compression = job.compression, .checksum = job.checksum});
  if (absl::Status s = header.WriteHeader(core::StandardRdbAux(kRedisVersion, time(nullptr), used_memory));
      !s.ok()) {
    return s;
  }
  // Functions come before the databases, as Redis writes them.
  for (const std::string& code : job.functions) {
    if (absl::Status s = header.WriteFunction(code); !s.ok()) return s;
  }
  for (int db = 0; db < Shard::kNumDbs; ++db) {
    uint64_t keys = 0, expires = 0;
    for (const SaveJob::PerShard& s : job.shards) {
      keys += s.db_keys[db];
      expires += s.db_expires[db];
    }
    if (keys == 0) continue;
    if (absl::Status s = header.SelectDb(uint32_t(db), keys, expires); !s.ok()) return s;
  }
  if (absl::Status s = header.Flush(); !s.ok()) return s;
  return std::move(sink.data());
}

// Everything after the cut, until the temp file is complete and on disk.
absl::Status WriteSnapshotFile(SaveJob& job, uint64_t* keys, uint64_t* dirty_at_cut) {
  io::Proactor* p = io::Proactor::current();
  absl::StatusOr<std::string> header = HeaderBytes(job);
  if (!header.ok()) {
    // The shards' snapshots are attached: they must still run (and are told to stop at once).
    job.failed.store(true);
  }
  const std::string head = header.ok() ? *std::move(header) : std::string();
  job.next_offset.store(head.size(), std::memory_order_relaxed);

  shard::shard_set->AwaitAllInFibers([&](Shard& shard) { WriteShardPart(shard, job); });

  if (!header.ok()) return header.status();
  *keys = 0;
  *dirty_at_cut = 0;
  for (const SaveJob::PerShard& s : job.shards) {
    if (s.error != 0) return ErrnoStatus("Write error saving DB on disk", s.error);
    if (s.aborted) return absl::AbortedError("the save was aborted (FLUSHALL or SHUTDOWN)");
    *keys += s.keys;
    *dirty_at_cut += s.dirty_at_cut;
  }
  if (int rc = p->WriteAllAt(job.fd, head.data(), head.size(), 0); rc < 0) {
    return ErrnoStatus("Write error saving DB on disk", -rc);
  }
  const uint64_t end = job.next_offset.load(std::memory_order_relaxed);
  uint64_t crc = 0;
  if (!CombineChecksums(job, job.checksum ? core::Crc64(0, head) : 0, head.size(), end, &crc)) {
    return absl::InternalError("the pieces of the snapshot do not tile the file");
  }
  // EOF, then the checksum of everything before it and the EOF byte (0 without rdbchecksum).
  std::string footer(1, char(core::rdb::kOpEof));
  if (job.checksum) crc = core::Crc64(crc, footer);
  for (int i = 0; i < 8; ++i) footer.push_back(char(job.checksum ? (crc >> (8 * i)) & 0xff : 0));
  if (int rc = p->WriteAllAt(job.fd, footer.data(), footer.size(), end); rc < 0) {
    return ErrnoStatus("Write error saving DB on disk", -rc);
  }
  if (int rc = p->Fsync(job.fd); rc < 0) return ErrnoStatus("fsync of the RDB file failed", -rc);
  return absl::OkStatus();
}

// The first half of a save, in the caller's fiber: the temp file and the cut. A BGSAVE replies
// after it, so the snapshot holds every write acknowledged before that reply and none after, as
// Redis' fork does.
absl::StatusOr<std::unique_ptr<SaveJob>> BeginSave(const std::string& relative_path,
                                                   std::function<void(Shard&)> at_cut = {},
                                                   bool aof_base = false, bool journal_cut = false,
                                                   bool for_shutdown = false) {
  if (for_shutdown) {
    // A save that began just before the hold (on another thread) runs to its end first.
    while (g_saving.exchange(true)) WaitWhileSaving();
  } else if (g_saves_held.load() || g_saving.exchange(true)) {
    return absl::FailedPreconditionError("Background save already in progress");
  }
  g_saving_aof_base.store(aof_base);
  auto job = std::make_unique<SaveJob>();
  job->start = std::chrono::steady_clock::now();
  char cwd[4096];
  job->path = relative_path.starts_with('/') || getcwd(cwd, sizeof(cwd)) == nullptr
                  ? relative_path
                  : core::Concat(cwd, "/", relative_path);
  const size_t slash = job->path.rfind('/');
  job->temp = core::Concat(slash == std::string::npos ? "" : job->path.substr(0, slash + 1),
                           "temp-", getpid(), ".rdb");
  job->compression = RdbCompression();
  job->checksum = RdbChecksum();
  job->key_delay_us = RdbKeySaveDelayUs();
  job->counts_as_save = !aof_base;
  job->at_cut = std::move(at_cut);
  job->journal_cut = journal_cut;
  job->fd = open(job->temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (job->fd < 0) {
    const absl::Status status =
        ErrnoStatus(core::Concat("Failed opening the temp RDB file ", job->temp, " for saving"), errno);
    LOG(WARNING) << "saving the DB failed: " << status.message();
    g_saving.store(false);
    return status;
  }
  TakeCut(*job);
  return job;
}

// The second half: serialize, write, fsync, rename, fsync the directory.
absl::Status FinishSave(SaveJob* job) {
  uint64_t keys = 0, dirty_at_cut = 0;
  absl::Status status = WriteSnapshotFile(*job, &keys, &dirty_at_cut);
  if (close(job->fd) != 0 && status.ok()) status = ErrnoStatus("close of the RDB file failed", errno);
  io::Proactor* p = io::Proactor::current();
  if (status.ok()) {
    if (int rc = p->Rename(job->temp.c_str(), job->path.c_str()); rc < 0) {
      status = ErrnoStatus(
          core::Concat("Error moving temp DB file ", job->temp, " on the final destination ", job->path),
          -rc);
    }
  }
  if (status.ok()) {
    if (int rc = FsyncDirOf(job->path); rc < 0) status = ErrnoStatus("fsync of the directory failed", -rc);
  } else {
    p->Unlink(job->temp.c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job->start).count();
  if (status.ok() && !job->counts_as_save) {
    LOG(INFO) << "AOF base written: " << keys << " keys in " << seconds << " s, " << job->path;
  } else if (status.ok()) {
    PersistenceStatus& ps = Persistence();
    ps.dirty_at_last_save.store(dirty_at_cut, std::memory_order_relaxed);
    ps.last_save_time.store(time(nullptr), std::memory_order_relaxed);
    ps.last_bgsave_ok.store(true, std::memory_order_relaxed);
    LOG(INFO) << "DB saved on disk: " << keys << " keys in " << seconds << " s, " << job->path;
  } else {
    LOG(WARNING) << "saving the DB failed: " << status.message();
  }
  g_saving.store(false);
  return status;
}

}  // namespace

absl::Status SaveSnapshot(const std::string& path, bool for_shutdown) {
  absl::StatusOr<std::unique_ptr<SaveJob>> job =
      BeginSave(path, {}, /*aof_base=*/false, /*journal_cut=*/false, for_shutdown);
  if (!job.ok()) return job.status();
  return FinishSave(job->get());
}

absl::Status SaveAofBase(const std::string& path, std::function<void(Shard&)> at_cut,
                         const std::function<void()>& after_cut, bool journal_cut) {
  absl::StatusOr<std::unique_ptr<SaveJob>> job =
      BeginSave(path, std::move(at_cut), /*aof_base=*/true, journal_cut);
  if (!job.ok()) return job.status();
  after_cut();
  return FinishSave(job->get());
}

// A BGSAVE counts from its reply on.
bool SaveInProgress() { return g_saving.load() || Persistence().bgsave_in_progress.load(); }

bool StartBackgroundSave() {
  // Held by a shutdown: refused before it counts as a save (a failed one would stop writes).
  if (SaveInProgress() || g_saves_held.load()) return false;
  PersistenceStatus& ps = Persistence();
  g_last_bgsave_try_ms.store(shard::NowMs(), std::memory_order_relaxed);
  ps.saves.fetch_add(1, std::memory_order_relaxed);
  ps.bgsave_in_progress.store(true);
  ps.bgsave_start_ms.store(shard::NowMs());
  auto finish = [](absl::Status status) {
    PersistenceStatus& ps = Persistence();
    // A save stopped on purpose (FLUSHALL, SHUTDOWN) is not a failure, as Redis' child killed
    // with SIGUSR1 is not.
    if (!absl::IsAborted(status)) ps.last_bgsave_ok.store(status.ok());
    // Whole seconds of the wall clock, as Redis' time(NULL) - rdb_save_time_start.
    ps.last_bgsave_time_sec.store(shard::NowMs() / 1000 - ps.bgsave_start_ms.load() / 1000);
    ps.bgsave_in_progress.store(false);
    if (status.ok()) LOG(INFO) << "Background saving terminated with success";
  };
  absl::StatusOr<std::unique_ptr<SaveJob>> begun = BeginSave(RdbFilename());
  if (!begun.ok()) {
    // Redis' fork failing is an error reply; a temp file that cannot be made is a failed save.
    finish(begun.status());
    return !absl::IsFailedPrecondition(begun.status());
  }
  LOG(INFO) << "Background saving started";
  // The fiber owns the job (std::function needs a copyable callable). The shards' snapshots are
  // attached: without a fiber the rest of the save runs here, before the reply.
  std::shared_ptr<SaveJob> job(std::move(*begun));
  if (!io::Proactor::current()->Launch([job, finish] { finish(FinishSave(job.get())); })) {
    finish(FinishSave(job.get()));
  }
  return true;
}

void ScheduleBackgroundSave() { g_bgsave_scheduled.store(true); }

void AbortShardSnapshot(Shard& shard) {
  // An AOF base goes on, as Redis' FLUSHALL kills an RDB child only: the base holds what came
  // before the FLUSHALL and the journal records the FLUSHALL after it.
  if (g_saving_aof_base.load()) return;
  if (ShardSnapshot* snap = shard.snapshot(); snap != nullptr) snap->Abort();
}

void AbortAndHoldSaves() {
  g_saves_held.store(true);  // first: a save that starts after this line is refused
  if (!SaveInProgress()) return;
  LOG(WARNING) << "There is a save in progress. Stopping it!";
  g_abort.store(true);
  WaitWhileSaving();
  g_abort.store(false);
}

void ReleaseSaves() { g_saves_held.store(false); }

void WaitWhileSaving() {
  while (SaveInProgress()) io::Proactor::current()->SleepFor(std::chrono::milliseconds(1));
}

std::string WritesDeniedByDiskError() {
  if (!Persistence().last_bgsave_ok.load(std::memory_order_relaxed) && StopWritesOnBgsaveError() &&
      !SaveRules().empty()) {
    return kMisconfError;
  }
  if (const int error = Persistence().aof_write_errno.load(); error != 0) {
    return core::Concat("Errors writing to the AOF file: ", strerror(error));
  }
  return {};
}

uint64_t SumShardDirty() {
  std::vector<uint64_t> dirty(shard::shard_set->size(), 0);
  shard::shard_set->AwaitAll([&](Shard& s) { dirty[s.id()] = s.stats().dirty; });
  uint64_t sum = 0;
  for (uint64_t d : dirty) sum += d;
  return sum;
}

void SaveCron() {
  if (SaveInProgress() || Persistence().loading.load()) return;
  if (g_bgsave_scheduled.exchange(false)) {
    StartBackgroundSave();
    return;
  }
  const std::vector<SaveRule> rules = SaveRules();
  if (rules.empty()) return;
  const PersistenceStatus& ps = Persistence();
  const int64_t now_ms = shard::NowMs();
  // After a failure, Redis waits before it tries again.
  if (!ps.last_bgsave_ok.load() && now_ms - g_last_bgsave_try_ms.load() < kRetryDelayMs) return;
  const uint64_t changes = SumShardDirty() - ps.dirty_at_last_save.load();
  const int64_t since_s = now_ms / 1000 - ps.last_save_time.load();
  for (const SaveRule& rule : rules) {
    if (changes >= uint64_t(rule.changes) && since_s > rule.seconds) {
      LOG(INFO) << rule.changes << " changes in " << rule.seconds << " seconds. Saving...";
      StartBackgroundSave();
      return;
    }
  }
}

}  // namespace shardis::server

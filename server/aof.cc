#include "server/aof.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <utility>
#include <mutex>
#include <string>
#include <vector>

#include "core/aof_manifest.h"
#include "core/string_util.h"
#include "io/append_file.h"
#include "io/proactor.h"
#include "server/snapshot.h"
#include "shard/journal.h"
#include "shard/journal_durability.h"
#include "server/persistence_status.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

DEFINE_bool(appendonly, false, "record every write in the append-only file (Redis' AOF)");
DEFINE_string(appendfsync, "everysec", "when the AOF is fsynced: always, everysec or no");
DEFINE_string(appendfilename, "appendonly.aof", "the AOF's base name");
DEFINE_string(appenddirname, "appendonlydir", "the AOF's directory, under dir");
DEFINE_int32(auto_aof_rewrite_percentage, 100,
             "rewrite the AOF when it grew by this percentage over its size after the last "
             "rewrite (0: never)");
DEFINE_string(auto_aof_rewrite_min_size, "64mb", "no automatic AOF rewrite below this size");
DEFINE_bool(aof_load_truncated, true,
            "at start, cut an AOF whose last command is incomplete instead of refusing it");

namespace shardis::server {

namespace {

using shard::Shard;

// While the writer has nothing to write it looks again after this long: what a write recorded
// meanwhile waits at most that much for the file (a reply that waits for it wakes it at once).
constexpr auto kIdlePoll = std::chrono::milliseconds(1);
// The longest a round of appendfsync always waits for the next group's writes (AwaitNextGroup;
// 1 ms gave ~10% more writes a second at P1 than 0.5 ms, as the round's own length caps it first).
constexpr auto kMaxGroupWait = std::chrono::microseconds(1000);
// With appendfsync everysec or no, the writer writes at most this often (WriterLoop): about what
// a killed process can lose of the acknowledged writes (twice that for a round's last partial
// block, which waits for the next round: io::AppendFile::Flush's keep_tail). Every write of the
// file is handed to an io_uring worker that shares the shards' CPUs; at 1 ms, SET P16 spent ~10%
// of the server's CPU on those workers, their wakeups and the disk's doorbells, at 10 ms about
// half of that (benchmarks/RESULTS.md, "the journal's write interval"). 25 ms gained nothing more.
constexpr auto kWriteInterval = std::chrono::milliseconds(10);
// How often AwaitNextGroup looks at the journals.
constexpr auto kGroupPoll = std::chrono::microseconds(20);
// A stop of the writer that takes longer than this is logged with what it waits for.
constexpr auto kSlowStop = std::chrono::seconds(2);
// How soon a failed write of the AOF is tried again.
constexpr auto kRetryWrite = std::chrono::milliseconds(100);
constexpr auto kEverySec = std::chrono::seconds(1);

std::atomic<bool> g_appendonly{false};
std::atomic<int> g_appendfsync{int(AppendFsync::kEverySec)};
std::atomic<bool> g_aof_load_truncated{true};
std::atomic<int64_t> g_auto_rewrite_percentage{100};
std::atomic<int64_t> g_auto_rewrite_min_size{64 << 20};
std::mutex g_names_mu;  // appendfilename and appenddirname: strings, read from any thread

// The AOF's state. The writer and the switches run on thread 0; INFO reads the atomics.
struct AofState {
  // "on": the journals record and the writer runs; "rewriting": a base is being written.
  std::atomic<bool> on{false};
  std::atomic<bool> rewriting{false};
  std::atomic<bool> rewrite_scheduled{false};  // waiting for a BGSAVE to end
  std::atomic<bool> rewrite_busy{false};       // a rewrite was started and has not ended
  std::atomic<bool> rewrites_held{false};      // SHUTDOWN: HoldAofRewrites
  std::atomic<uint64_t> consecutive_failures{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> writer_running{false};
  std::atomic<bool> last_rewrite_ok{true};
  std::atomic<uint64_t> current_size{0};  // base + incr files
  std::atomic<uint64_t> base_size{0};     // after the last rewrite (Redis' aof_rewrite_base_size)
  std::atomic<uint64_t> fsyncs{0};  // of the incr files, since start (INFO aof_fsyncs)
  std::atomic<int64_t> last_rewrite_seconds{-1};
  std::atomic<int64_t> rewrite_start_ms{0};
  std::atomic<uint64_t> rewrites{0};
  // Thread 0 only.
  core::AofManifest manifest;
  io::AppendFile file;  // the incr file being appended to, and what the merge put out for it
  // A rewrite's new incr file, which the writer takes at the cut (on thread 0 too, but the
  // rewrite's fiber sets it and the writer's takes it).
  std::atomic<int> next_fd{-1};
};
AofState g_aof;

std::string DirPath() {
  std::lock_guard lock(g_names_mu);
  return FLAGS_appenddirname;
}

std::string FilePath(std::string_view name) { return core::Concat(DirPath(), "/", name); }

int FsyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int rc = io::Proactor::current()->Fsync(fd);
  close(fd);
  return rc;
}

// Writes the manifest under its temp name, fsyncs it, renames it over the real one and fsyncs
// the directory: a crash leaves the old manifest or the new one, never half of one.
absl::Status WriteManifest(const core::AofManifest& manifest) {
  io::Proactor* p = io::Proactor::current();
  const std::string text = core::FormatAofManifest(manifest);
  const std::string temp = FilePath(core::AofTempManifestName(AppendFilename()));
  const std::string path = FilePath(core::AofManifestName(AppendFilename()));
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(core::Concat("can't open the AOF manifest file ", temp, ": ", strerror(errno)));
  int rc = p->WriteAllAt(fd, text.data(), text.size(), 0);
  if (rc >= 0) rc = p->Fsync(fd);
  close(fd);
  if (rc >= 0) rc = p->Rename(temp.c_str(), path.c_str());
  if (rc >= 0) rc = FsyncDir(DirPath());
  if (rc < 0) {
    p->Unlink(temp.c_str());
    return absl::InternalError(core::Concat("can't write the AOF manifest file ", path, ": ", strerror(-rc)));
  }
  return absl::OkStatus();
}

// A rewrite's files are complete: the AOF's size is now the new base plus what the new incr file
// took meanwhile, and the automatic rewrite's growth counts from there. That is Redis' rule
// (backgroundRewriteDoneHandler sets aof_rewrite_base_size to aof_current_size, incr included):
// counting from the base alone, a rewrite that ran long under writes would end with the incr file
// already grown by a base's size, and start the next rewrite at once.
void NoteRewrittenSize(uint64_t size) {
  g_aof.current_size.store(size);
  g_aof.base_size.store(size);
}

// Redis' growth of the AOF over its size after the last rewrite, in percent.
int64_t AutoRewriteGrowth() {
  const uint64_t base = std::max<uint64_t>(g_aof.base_size.load(), 1);
  return int64_t(g_aof.current_size.load() * 100 / base) - 100;
}

// Redis' automatic rewrite rule: the AOF is on, no rewrite runs, it is over
// auto-aof-rewrite-min-size and grew by auto-aof-rewrite-percentage.
bool AutoRewriteDue() {
  const int64_t percentage = g_auto_rewrite_percentage.load();
  return percentage > 0 && g_aof.on.load() && !g_aof.stop.load() && !g_aof.rewrite_busy.load() &&
         int64_t(g_aof.current_size.load()) > g_auto_rewrite_min_size.load() &&
         AutoRewriteGrowth() >= percentage;
}

// Records a failed write or fsync of the AOF: INFO says aof_last_write_status:err and writes are
// refused with -MISCONF (Redis' text names the error) until one succeeds.
void NoteWriteError(const char* what, int error) {
  if (Persistence().aof_write_errno.exchange(error) == 0) {
    LOG(WARNING) << what << " the AOF file failed: " << strerror(error)
                 << "; writes are refused until it succeeds";
  }
}

void NoteWriteOk() {
  if (Persistence().aof_write_errno.exchange(0) != 0) {
    LOG(WARNING) << "AOF write error looks solved, shardis can write again.";
  }
}

// Writes what the merge put out to the incr file (io::AppendFile), and fdatasyncs it when
// `sync` (in one linked submission where it can). Tries again while that fails: the records stay (they are
// never dropped), INFO says aof_last_write_status:err and writes are refused with -MISCONF
// meanwhile. With appendfsync always the replies of the writes they hold wait for that (Redis
// exits instead: it would have sent them already). `keep_tail`: io::AppendFile::Flush's.
void AppendToIncr(bool sync, bool keep_tail = false) {
  io::AppendFile& file = g_aof.file;
  if (file.all_written() && !sync) return;
  for (;;) {
    const uint64_t before = file.written();
    const int rc = file.Flush(sync, keep_tail);
    // Counted as it reaches the file, as INFO's aof_current_size is the files' size.
    g_aof.current_size.fetch_add(file.written() - before, std::memory_order_relaxed);
    if (rc >= 0) {
      NoteWriteOk();
      if (sync) g_aof.fsyncs.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // A write that failed half way leaves bytes after written(): the next try writes over them.
    NoteWriteError(sync ? "Writing and syncing" : "Writing to", -rc);
    if (g_aof.stop.load()) {
      // The AOF is being turned off (CONFIG SET appendonly no, SHUTDOWN): as Redis, one try.
      LOG(ERROR) << "The AOF is turned off with " << file.size() - file.written()
                 << " bytes it could not write";
      file.DropUnwritten();
      return;
    }
    io::Proactor::current()->SleepFor(kRetryWrite);
  }
}

// The writer's doorbell (shard::SetJournalWriterAsleep): ends its idle sleep. Thread 0 only.
io::Proactor::Nap g_writer_nap;
void WakeWriter() { g_writer_nap.Wake(); }

// Group commit's pace, with appendfsync always: a round that synced `synced` records released
// the replies waiting for them, and their clients are about to send their next writes. Taking
// the journals at once would catch a few of those and leave the rest for the round after, so
// that two groups of half the clients would take turns, each waiting for two fsyncs. Instead the
// writer waits until as many records as it just synced have come on top of those that came
// during its fsync (read from the journals' seqs, without a hop): the whole next group. Waiting
// for `synced` records only, counting those, kept the groups at any size they had (~36 of 50
// clients; ~10% fewer writes a second at P1). It waits no longer than the round took, nor than
// kMaxGroupWait: a client that does not come back costs the others that much at most.
void AwaitNextGroup(const std::vector<uint64_t>& taken, uint64_t synced,
                    std::chrono::steady_clock::duration round) {
  const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::steady_clock::duration>(round, kMaxGroupWait);
  const unsigned n = unsigned(taken.size());
  const auto arrived = [&] {
    uint64_t sum = 0;
    for (unsigned sid = 0; sid < n; ++sid) {
      sum += shard::shard_set->shard(sid).journal().seq() - taken[sid];
    }
    return sum;
  };
  const uint64_t whole_group = arrived() + synced;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (arrived() >= whole_group || now >= deadline) return;
    // A short sleep, not a spin: the thread parks (its replies go out, its requests come in),
    // and another shard's thread that shares its CPU runs and records the writes it waits for.
    g_writer_nap.SleepFor(std::min<std::chrono::steady_clock::duration>(deadline - now, kGroupPoll));
  }
}


// The writer: takes every shard's journal records, merges them and appends them to the incr
// file; fsyncs as appendfsync says. At a rewrite's cut it fsyncs the file and goes on in the
// next one (g_aof.next_fd). With appendfsync always, each round's records are written and synced
// in one submission and the replies waiting for them are released (group commit). Runs until the
// AOF is turned off, then writes and fsyncs what was recorded before that.
void WriterLoop() {
  const unsigned n = shard::shard_set->size();
  shard::JournalMerger merger(n);
  std::vector<shard::ShardJournal::Chunk> chunks(n);
  std::vector<uint64_t> placed(n);
  std::vector<uint64_t> placed_bytes(n);
  std::vector<uint64_t> taken(n);  // each shard's last record taken
  std::vector<uint64_t> synced_seq(n);  // each shard's last record synced
  core::PageAlignedString* out = g_aof.file.buffer();  // merged and not yet written
  auto last_fsync = std::chrono::steady_clock::now();
  auto last_auto_check = last_fsync;
  bool unsynced = false;
  std::chrono::steady_clock::time_point stop_seen{};
  bool stop_reported = false;
  for (;;) {
    const bool stopping = g_aof.stop.load();
    if (stopping && stop_seen == std::chrono::steady_clock::time_point{}) {
      stop_seen = std::chrono::steady_clock::now();
    }
    shard::shard_set->AwaitAll([&](Shard& s) { chunks[s.id()] = s.journal().Take(); });
    for (unsigned sid = 0; sid < n; ++sid) {
      taken[sid] = chunks[sid].end_seq;
      merger.Add(sid, std::move(chunks[sid]));
    }
    bool got = false;
    for (;;) {
      const size_t before = out->size();
      const bool rotate = merger.Drain(out);
      got |= out->size() > before;
      if (!rotate) break;
      // The rewrite's cut: what came before is in the new base too; the rest goes to the new
      // incr file, which the manifest already names.
      const int next_fd = g_aof.next_fd.exchange(-1);
      if (next_fd < 0) {
        LOG(ERROR) << "AOF rewrite cut without a next incr file; going on in the current one";
        continue;
      }
      AppendToIncr(/*sync=*/true);
      g_aof.file.Reset(next_fd, 0);
      out = g_aof.file.buffer();
    }
    for (unsigned sid = 0; sid < n; ++sid) {
      placed[sid] = merger.placed_seq(sid);
      placed_bytes[sid] = merger.placed_bytes(sid);
    }
    unsynced |= got;
    const AppendFsync policy = AppendFsyncPolicy();
    const auto now = std::chrono::steady_clock::now();
    const bool sync = unsynced && (stopping || policy == AppendFsync::kAlways ||
                                   (policy == AppendFsync::kEverySec && now - last_fsync >= kEverySec));
    // Under load (everysec, no) a round's last partial block waits for the next round, which
    // comes within kWriteInterval; a round that brings nothing writes it.
    AppendToIncr(sync, /*keep_tail=*/got && !stopping && policy != AppendFsync::kAlways);
    if (got) shard::PublishJournalWritten(placed_bytes);  // writers held by the backlog go on
    if (sync) {
      unsynced = false;
      last_fsync = now;
      shard::PublishJournalDurable(placed);
      if (policy == AppendFsync::kAlways && !stopping) {  // a stop's last rounds wait for nobody
        uint64_t synced = 0;
        for (unsigned sid = 0; sid < n; ++sid) synced += placed[sid] - synced_seq[sid];
        AwaitNextGroup(taken, synced, std::chrono::steady_clock::now() - now);
      }
      synced_seq = placed;
    } else if (!unsynced && placed != synced_seq) {
      // Records that came out as no bytes (the marker and empty payload of a transaction that
      // changed nothing): nothing to sync, but replies may wait for them.
      shard::PublishJournalDurable(placed);
      synced_seq = placed;
    }
    if (stopping && !merger.waiting()) break;
    if (stopping && !stop_reported && std::chrono::steady_clock::now() - stop_seen > kSlowStop) {
      // A stop waits for records that cannot be placed yet; if they never can, it hangs: say
      // what waits (a transaction's marker missing on a shard would be a bug of the journal).
      stop_reported = true;
      LOG(WARNING) << "The AOF writer's stop waits for the journal: " << merger.WaitingReport();
    }
    if (now - last_auto_check >= kEverySec) {
      last_auto_check = now;
      if (AutoRewriteDue()) {
        LOG(INFO) << "Starting automatic rewriting of AOF on " << AutoRewriteGrowth() << "% growth";
        StartAofRewrite();
      }
    }
    if (got && policy != AppendFsync::kAlways && !stopping) {
      // Without replies waiting, one write per kWriteInterval at most: a write per round under
      // load would wake a kernel worker tens of thousands of times a second for a few KB each.
      const auto next = now + kWriteInterval;
      if (const auto left = next - std::chrono::steady_clock::now(); left.count() > 0) {
        g_writer_nap.SleepFor(left);
      }
    }
    if (!got) {
      // Nothing came this round: sleep, unless a reply starts to wait for the journal. A record
      // appended after this round's Take, whose reply looked for the doorbell before it was up,
      // shows in its shard's seq: then no sleep.
      shard::SetJournalWriterAsleep(true, io::Proactor::current()->index(), &WakeWriter);
      bool more = false;
      for (unsigned sid = 0; sid < n && !more; ++sid) {
        more = shard::shard_set->shard(sid).journal().seq() != taken[sid];
      }
      if (!more) g_writer_nap.SleepFor(kIdlePoll);
      shard::SetJournalWriterAsleep(false, io::Proactor::current()->index(), &WakeWriter);
    }
  }
  g_aof.writer_running.store(false);
}

// Writers look at the journal (shard/journal_durability.h) while the AOF is on; their replies
// wait for it with appendfsync always.
void UpdateJournalWaits() {
  shard::SetJournalWaits(g_aof.on.load(), AppendFsyncPolicy() == AppendFsync::kAlways);
}

void LaunchWriter() {
  g_aof.stop.store(false);
  g_aof.writer_running.store(true);
  io::Proactor* p = io::Proactor::current();
  if (!p->Launch(WriterLoop)) {
    g_aof.writer_running.store(false);
    LOG(ERROR) << "can't start the AOF writer: no fiber";
  }
  UpdateJournalWaits();
}

// Opens (creating) the incr file `name` to append to, at its end or emptied.
absl::Status OpenIncr(const std::string& name, bool truncate) {
  const std::string path = FilePath(name);
  // Read and write: with direct I/O the file's last partial block is read back (io::AppendFile).
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) return absl::InternalError(core::Concat("can't open the append-only file ", path, ": ", strerror(errno)));
  g_aof.file.Reset(fd, FileSize(path));
  return absl::OkStatus();
}

// Turns every shard's journal on or off in one step of a transaction over every shard, so that
// no write transaction leaves markers on some of its shards and not on the others (the merge
// would wait for the missing ones forever).
void SetJournalsOn(bool on) {
  shard::Transaction tx(0, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
  tx.set_journaled(false);
  tx.Run([on](shard::TxShard& t) { t.shard.journal().set_on(on); }, /*conclude=*/true);
}

// The manifest in the AOF directory, or an empty one (none, or one that does not parse: the
// next manifest written replaces it).
core::AofManifest ManifestOnDisk() {
  const std::string path = FilePath(core::AofManifestName(AppendFilename()));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text(FileSize(path), '\0');
  const int got = io::Proactor::current()->ReadAt(fd, text.data(), text.size(), 0);
  close(fd);
  if (got < 0) return {};
  text.resize(size_t(got));
  absl::StatusOr<core::AofManifest> parsed = core::ParseAofManifest(text);
  return parsed.ok() ? *std::move(parsed) : core::AofManifest();
}

absl::Status MakeDir() {
  const std::string dir = DirPath();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(core::Concat("can't create the AOF directory ", dir, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

// SaveAofBase, waiting for a BGSAVE that runs (Redis schedules the rewrite after it).
absl::Status WriteBase(const std::string& name, std::function<void(Shard&)> at_cut,
                       const std::function<void()>& after_cut, bool rotate) {
  g_aof.rewriting.store(true);
  g_aof.rewrite_start_ms.store(shard::NowMs());
  absl::Status status;
  for (;;) {
    // The cut's payload tells the writer to go on in the next incr file right there.
    shard::JournalCommand rotation;
    rotation.rotate = rotate;
    shard::JournalCommandScope scope(&rotation);
    if (g_aof.rewrites_held.load()) {
      status = absl::UnavailableError("the server is shutting down");
      break;
    }
    status = SaveAofBase(FilePath(name), at_cut, after_cut, /*journal_cut=*/rotate);
    if (!absl::IsFailedPrecondition(status)) break;
    g_aof.rewrite_scheduled.store(true);
    WaitWhileSaving();
    g_aof.rewrite_scheduled.store(false);
  }
  return status;
}

// A rewrite (or a first base) that WriteBase started is over, its manifest written or given up:
// INFO says so only now, as Redis counts it in backgroundRewriteDoneHandler after the manifest
// (before, INFO could say "done" while the manifest still named the old files).
absl::Status EndRewrite(absl::Status status) {
  if (!g_aof.rewriting.load()) return status;  // stopped before WriteBase
  g_aof.rewriting.store(false);
  g_aof.last_rewrite_seconds.store((shard::NowMs() - g_aof.rewrite_start_ms.load()) / 1000);
  g_aof.rewrites.fetch_add(1);
  g_aof.last_rewrite_ok.store(status.ok());
  if (status.ok()) {
    g_aof.consecutive_failures.store(0);
  } else {
    g_aof.consecutive_failures.fetch_add(1);
    LOG(WARNING) << "Background AOF rewrite failed: " << status.message();
  }
  return status;
}

// Deletes the history files of the manifest and writes it again without them (as Redis'
// aofDelHistoryFiles: a crash in between leaves a manifest whose history is gone, which loads).
void DeleteHistory(core::AofManifest* manifest) {
  if (manifest->history.empty()) return;
  for (const core::AofFileInfo& old : manifest->history) {
    io::Proactor::current()->Unlink(FilePath(old.name).c_str());
  }
  manifest->history.clear();
  if (absl::Status s = WriteManifest(*manifest); !s.ok()) LOG(WARNING) << s.message();
}

// A new base snapshot and incr file, the journals starting at the snapshot's cut, then the
// manifest that names them; the files of the previous manifest are deleted after.
absl::Status StartWithNewBaseFiles() {
  if (absl::Status s = MakeDir(); !s.ok()) return s;
  core::AofManifest manifest = ManifestOnDisk();
  const std::string filename = AppendFilename();
  const core::AofFileInfo base = core::AddNewAofBase(&manifest, filename, /*rdb_format=*/true);
  core::MarkRewrittenAofIncrsAsHistory(&manifest, /*keep_last=*/false);
  const core::AofFileInfo incr = core::AddNewAofIncr(&manifest, filename);
  if (absl::Status s = OpenIncr(incr.name, /*truncate=*/true); !s.ok()) return s;
  absl::Status status = WriteBase(
      base.name, [](Shard& s) { s.journal().set_on(true); },
      [] {
        g_aof.on.store(true);
        LaunchWriter();
      },
      /*rotate=*/false);
  if (!status.ok()) return status;
  if (absl::Status s = WriteManifest(manifest); !s.ok()) return s;
  DeleteHistory(&manifest);
  g_aof.manifest = std::move(manifest);
  NoteRewrittenSize(FileSize(FilePath(base.name)) + g_aof.file.written());
  LOG(INFO) << "Append only file on: " << DirPath() << "/" << base.name << " and " << incr.name;
  return absl::OkStatus();
}

// BGREWRITEAOF: a new base snapshot. With the AOF on, a new incr file is named in the manifest
// first and the writer goes on in it at the base's cut, so that the manifest on disk replays to
// the dataset whenever the process stops; once the base is written the manifest names it and
// the new incr file only, and the older files are deleted. With the AOF off, the manifest names
// the base alone, as Redis' rewrite does.
absl::Status RewriteFiles() {
  if (absl::Status s = MakeDir(); !s.ok()) return s;
  const std::string filename = AppendFilename();
  const bool on = g_aof.on.load();
  core::AofManifest manifest = on ? g_aof.manifest : ManifestOnDisk();
  if (on) {
    const core::AofFileInfo incr = core::AddNewAofIncr(&manifest, filename);
    const std::string path = FilePath(incr.name);
    const int next_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (next_fd < 0) {
      return absl::InternalError(core::Concat("can't open the append-only file ", path, ": ", strerror(errno)));
    }
    if (absl::Status s = WriteManifest(manifest); !s.ok()) {
      close(next_fd);
      return s;
    }
    g_aof.next_fd.store(next_fd);
    g_aof.manifest = manifest;
  }
  const core::AofFileInfo base = core::AddNewAofBase(&manifest, filename, /*rdb_format=*/true);
  core::MarkRewrittenAofIncrsAsHistory(&manifest, /*keep_last=*/on);
  bool cut = false;
  const absl::Status status = WriteBase(base.name, {}, [&cut] { cut = true; }, /*rotate=*/on);
  if (!status.ok()) {
    // Without a cut the writer stays in its file; with one it went on in the new one. The
    // manifest on disk names both either way.
    if (const int next_fd = g_aof.next_fd.exchange(-1); !cut && next_fd >= 0) close(next_fd);
    return status;
  }
  if (absl::Status s = WriteManifest(manifest); !s.ok()) return s;
  DeleteHistory(&manifest);
  NoteRewrittenSize(FileSize(FilePath(base.name)) +
                    (manifest.incrs.empty() ? 0 : FileSize(FilePath(manifest.incrs.back().name))));
  if (on) g_aof.manifest = std::move(manifest);
  LOG(INFO) << "Background AOF rewrite finished successfully: " << DirPath() << "/" << base.name;
  return absl::OkStatus();
}

// The two, with INFO's rewrite bookkeeping once their manifest is written.
absl::Status StartWithNewBase() { return EndRewrite(StartWithNewBaseFiles()); }
absl::Status Rewrite() { return EndRewrite(RewriteFiles()); }

// The journals stop recording; the writer writes and fsyncs what they recorded, then ends.
void StopWriter() {
  // The journals stop recording; what they hold is taken by the writer's last rounds.
  SetJournalsOn(false);
  g_aof.stop.store(true);
  while (g_aof.writer_running.load()) io::Proactor::current()->SleepFor(std::chrono::milliseconds(1));
  g_aof.on.store(false);
  Persistence().aof_write_errno.store(0);  // an AOF that is off refuses no write
  UpdateJournalWaits();
}

}  // namespace

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

bool AppendOnlyConfigured() { return g_appendonly.load(std::memory_order_relaxed); }
AppendFsync AppendFsyncPolicy() { return AppendFsync(g_appendfsync.load(std::memory_order_relaxed)); }
std::string AppendFilename() {
  std::lock_guard lock(g_names_mu);
  return FLAGS_appendfilename;
}
std::string AppendDirname() { return DirPath(); }
bool AofLoadTruncated() { return g_aof_load_truncated.load(); }

absl::Status StartAppendOnlyNow(bool files_loaded) {
  g_appendonly.store(true);
  if (g_aof.on.load() || g_aof.rewriting.load()) return absl::OkStatus();
  if (!files_loaded || g_aof.manifest.incrs.empty()) return StartWithNewBase();
  // Appending to the last incr file of the manifest that was loaded.
  if (absl::Status s = OpenIncr(g_aof.manifest.incrs.back().name, /*truncate=*/false); !s.ok()) return s;
  SetJournalsOn(true);
  g_aof.on.store(true);
  LaunchWriter();
  return absl::OkStatus();
}

void StartAppendOnly() {
  g_appendonly.store(true);
  auto start = [] {
    if (absl::Status s = StartAppendOnlyNow(false); !s.ok()) {
      LOG(ERROR) << "can't turn the append-only file on: " << s.message();
    }
  };
  if (!io::Proactor::current()->Launch(start)) start();
}

void StopAppendOnly() {
  g_appendonly.store(false);
  // A base being written finishes first (its manifest names the incr file being appended).
  while (g_aof.rewriting.load()) io::Proactor::current()->SleepFor(std::chrono::milliseconds(1));
  if (!g_aof.on.load()) return;
  StopWriter();
  g_aof.file.Close();
  LOG(INFO) << "Append only file off";
}

bool AppendOnlyOn() { return g_aof.on.load(); }

void FlushAppendOnly() {
  if (g_aof.on.load()) StopWriter();
}

void ResumeAppendOnly() {
  if (g_aof.on.load() || g_aof.file.fd() < 0 || !AppendOnlyConfigured()) return;
  SetJournalsOn(true);
  g_aof.on.store(true);
  LaunchWriter();
}

void LoadedAppendOnlyManifest(core::AofManifest manifest, uint64_t base_size, uint64_t total_size) {
  g_aof.manifest = std::move(manifest);
  g_aof.base_size.store(base_size);
  g_aof.current_size.store(total_size);
}

void AppendAofInfo(std::string* out) {
  const bool on = g_aof.on.load();
  // From BGREWRITEAOF's reply on (unless it waits for a BGSAVE: then it is scheduled).
  const bool rewriting = g_aof.rewriting.load() ||
                         (g_aof.rewrite_busy.load() && !g_aof.rewrite_scheduled.load());
  core::Append(out, "aof_enabled:", on || AppendOnlyConfigured() ? 1 : 0, "\r\n");
  core::Append(out, "aof_rewrite_in_progress:", rewriting ? 1 : 0, "\r\n");
  core::Append(out, "aof_rewrite_scheduled:", g_aof.rewrite_scheduled.load() ? 1 : 0, "\r\n");
  core::Append(out, "aof_last_rewrite_time_sec:", g_aof.last_rewrite_seconds.load(), "\r\n");
  core::Append(out, "aof_current_rewrite_time_sec:",
               rewriting ? (shard::NowMs() - g_aof.rewrite_start_ms.load()) / 1000 : -1, "\r\n");
  core::Append(out, "aof_last_bgrewrite_status:", g_aof.last_rewrite_ok.load() ? "ok" : "err", "\r\n");
  core::Append(out, "aof_rewrites:", g_aof.rewrites.load(), "\r\n");
  core::Append(out, "aof_rewrites_consecutive_failures:", g_aof.consecutive_failures.load(), "\r\n");
  core::Append(out, "aof_last_write_status:", Persistence().aof_write_errno.load() == 0 ? "ok" : "err",
               "\r\n");
  core::Append(out, "aof_last_cow_size:0\r\n");
  core::Append(out, "module_fork_in_progress:0\r\n");
  core::Append(out, "module_fork_last_cow_size:0\r\n");
  if (on) {
    core::Append(out, "aof_current_size:", g_aof.current_size.load(), "\r\n");
    core::Append(out, "aof_base_size:", g_aof.base_size.load(), "\r\n");
    core::Append(out, "aof_pending_rewrite:0\r\n");
    core::Append(out, "aof_buffer_length:", shard::JournalBacklogBytes(), "\r\n");
    core::Append(out, "aof_pending_bio_fsync:0\r\n");
    // Redis counts the everysec fsyncs it postponed because one still ran; the writer here
    // waits for each of its fsyncs instead of postponing the next.
    core::Append(out, "aof_delayed_fsync:0\r\n");
    // Not in Redis: the fsyncs of the AOF since start (a benchmark divides writes by it).
    core::Append(out, "aof_fsyncs:", g_aof.fsyncs.load(), "\r\n");
  }
}

void SetAofLoadTruncated(bool on) { g_aof_load_truncated.store(on); }
int64_t AutoAofRewritePercentage() { return g_auto_rewrite_percentage.load(); }
void SetAutoAofRewritePercentage(int64_t v) { g_auto_rewrite_percentage.store(v); }
int64_t AutoAofRewriteMinSize() { return g_auto_rewrite_min_size.load(); }
void SetAutoAofRewriteMinSize(int64_t v) { g_auto_rewrite_min_size.store(v); }

void HoldAofRewrites(bool hold) { g_aof.rewrites_held.store(hold); }

RewriteStart StartAofRewrite() {
  if (g_aof.rewrites_held.load()) return RewriteStart::kFailed;
  if (g_aof.rewriting.load() || g_aof.rewrite_busy.exchange(true)) return RewriteStart::kAlreadyRunning;
  const bool waits = SaveInProgress();
  auto run = [] {
    Rewrite().IgnoreError();  // logged, and in INFO's aof_last_bgrewrite_status
    g_aof.rewrite_busy.store(false);
  };
  if (!io::Proactor::current()->Launch(run)) {
    g_aof.rewrite_busy.store(false);
    return RewriteStart::kFailed;
  }
  return waits ? RewriteStart::kScheduled : RewriteStart::kStarted;
}

void SetAppendOnly(bool on) {
  if (io::Proactor::current() == nullptr) {
    // At start (flags, the config file): main turns the AOF on after loading.
    g_appendonly.store(on);
    return;
  }
  if (on == AppendOnlyConfigured()) return;
  if (on) {
    StartAppendOnly();
  } else {
    StopAppendOnly();
  }
}

void SetAppendFsync(AppendFsync policy) {
  g_appendfsync.store(int(policy));
  UpdateJournalWaits();
}

}  // namespace shardis::server

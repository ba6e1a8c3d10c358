#include "server/aof.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/aof_manifest.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/snapshot.h"
#include "shard/journal.h"
#include "shard/shard_set.h"

DEFINE_bool(appendonly, false, "record every write in the append-only file (Redis' AOF)");
DEFINE_string(appendfsync, "everysec", "when the AOF is fsynced: always, everysec or no");
DEFINE_string(appendfilename, "appendonly.aof", "the AOF's base name");
DEFINE_string(appenddirname, "appendonlydir", "the AOF's directory, under dir");
DEFINE_bool(aof_load_truncated, true,
            "at start, cut an AOF whose last command is incomplete instead of refusing it");

namespace shardis::server {

namespace {

using shard::Shard;

// While the writer has nothing to write it looks again after this long: what a write recorded
// meanwhile waits at most that much for the file (appendfsync always will wake it instead).
constexpr auto kIdlePoll = std::chrono::milliseconds(1);
constexpr auto kEverySec = std::chrono::seconds(1);

std::atomic<bool> g_appendonly{false};
std::atomic<int> g_appendfsync{int(AppendFsync::kEverySec)};
std::atomic<bool> g_aof_load_truncated{true};
std::mutex g_names_mu;  // appendfilename and appenddirname: strings, read from any thread

// The AOF's state. The writer and the switches run on thread 0; INFO reads the atomics.
struct AofState {
  // "on": the journals record and the writer runs; "rewriting": a base is being written.
  std::atomic<bool> on{false};
  std::atomic<bool> rewriting{false};
  std::atomic<bool> stop{false};
  std::atomic<bool> writer_running{false};
  std::atomic<bool> last_write_ok{true};
  std::atomic<bool> last_rewrite_ok{true};
  std::atomic<uint64_t> current_size{0};  // base + incr files
  std::atomic<uint64_t> base_size{0};
  std::atomic<uint64_t> delayed_fsync{0};
  std::atomic<int64_t> last_rewrite_seconds{-1};
  std::atomic<int64_t> rewrite_start_ms{0};
  std::atomic<uint64_t> rewrites{0};
  // Thread 0 only.
  core::AofManifest manifest;
  int fd = -1;             // the incr file being appended to
  uint64_t incr_size = 0;  // its size
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

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// The writer: takes every shard's journal records, merges them and appends them to the incr
// file; fsyncs as appendfsync says. Runs until the AOF is turned off, then writes and fsyncs
// what was recorded before that.
void WriterLoop() {
  io::Proactor* p = io::Proactor::current();
  const unsigned n = shard::shard_set->size();
  shard::JournalMerger merger(n);
  std::vector<shard::ShardJournal::Chunk> chunks(n);
  std::string out;  // merged and not yet written
  auto last_fsync = std::chrono::steady_clock::now();
  bool unsynced = false;
  for (;;) {
    const bool stopping = g_aof.stop.load();
    shard::shard_set->AwaitAll([&](Shard& s) { chunks[s.id()] = s.journal().Take(); });
    for (unsigned sid = 0; sid < n; ++sid) merger.Add(sid, std::move(chunks[sid]));
    const size_t before = out.size();
    merger.Drain(&out);
    const bool got = out.size() > before;
    if (!out.empty()) {
      const int rc = p->WriteAllAt(g_aof.fd, out.data(), out.size(), g_aof.incr_size);
      if (rc < 0) {
        // As Redis: the records stay (in `out`) and the write is tried again; INFO says
        // aof_last_write_status:err meanwhile.
        if (g_aof.last_write_ok.exchange(false)) {
          LOG(WARNING) << "Error writing to the AOF file: " << strerror(-rc);
        }
        p->SleepFor(std::chrono::milliseconds(100));
        continue;
      }
      g_aof.last_write_ok.store(true);
      g_aof.incr_size += out.size();
      g_aof.current_size.fetch_add(out.size(), std::memory_order_relaxed);
      out.clear();
      unsynced = true;
    }
    const AppendFsync policy = AppendFsyncPolicy();
    const auto now = std::chrono::steady_clock::now();
    if (unsynced && (stopping || policy == AppendFsync::kAlways ||
                     (policy == AppendFsync::kEverySec && now - last_fsync >= kEverySec))) {
      if (const int rc = p->Fsync(g_aof.fd); rc < 0) {
        g_aof.last_write_ok.store(false);
        LOG(WARNING) << "fsync of the AOF file failed: " << strerror(-rc);
      } else {
        unsynced = false;
      }
      last_fsync = now;
    }
    if (stopping && !merger.waiting()) break;
    if (!got) p->SleepFor(kIdlePoll);
  }
  g_aof.writer_running.store(false);
}

void LaunchWriter() {
  g_aof.stop.store(false);
  g_aof.writer_running.store(true);
  io::Proactor* p = io::Proactor::current();
  if (!p->Launch(WriterLoop)) {
    g_aof.writer_running.store(false);
    LOG(ERROR) << "can't start the AOF writer: no fiber";
  }
}

// Opens (creating) the incr file `name` for appending at its end.
absl::Status OpenIncr(const std::string& name) {
  const std::string path = FilePath(name);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(core::Concat("can't open the append-only file ", path, ": ", strerror(errno)));
  if (g_aof.fd >= 0) close(g_aof.fd);
  g_aof.fd = fd;
  g_aof.incr_size = FileSize(path);
  return absl::OkStatus();
}

// A new base snapshot and incr file, the journals starting at the snapshot's cut, then the
// manifest that names them; the files of the previous manifest are deleted after.
absl::Status StartWithNewBase() {
  const std::string dir = DirPath();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(core::Concat("can't create the AOF directory ", dir, ": ", strerror(errno)));
  }
  core::AofManifest manifest;
  if (absl::StatusOr<std::string> text = [&]() -> absl::StatusOr<std::string> {
        const std::string path = FilePath(core::AofManifestName(AppendFilename()));
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return absl::NotFoundError(path);
        std::string s(FileSize(path), '\0');
        const int got = io::Proactor::current()->ReadAt(fd, s.data(), s.size(), 0);
        close(fd);
        if (got < 0) return absl::InternalError(strerror(-got));
        s.resize(size_t(got));
        return s;
      }();
      text.ok()) {
    absl::StatusOr<core::AofManifest> parsed = core::ParseAofManifest(*text);
    if (parsed.ok()) manifest = *std::move(parsed);
  }
  const std::string filename = AppendFilename();
  const core::AofFileInfo base = core::AddNewAofBase(&manifest, filename, /*rdb_format=*/true);
  core::MarkRewrittenAofIncrsAsHistory(&manifest, /*keep_last=*/false);
  const core::AofFileInfo incr = core::AddNewAofIncr(&manifest, filename);
  if (absl::Status s = OpenIncr(incr.name); !s.ok()) return s;
  g_aof.incr_size = 0;
  if (ftruncate(g_aof.fd, 0) != 0) return absl::InternalError(strerror(errno));
  g_aof.rewriting.store(true);
  g_aof.rewrite_start_ms.store(shard::NowMs());
  absl::Status status;
  for (;;) {
    status = SaveAofBase(
        FilePath(base.name), [](Shard& s) { s.journal().set_on(true); },
        [] {
          g_aof.on.store(true);
          LaunchWriter();
        });
    if (!absl::IsFailedPrecondition(status)) break;
    WaitWhileSaving();  // a BGSAVE runs: the base waits for it, as Redis schedules the rewrite
  }
  g_aof.rewriting.store(false);
  g_aof.last_rewrite_seconds.store((shard::NowMs() - g_aof.rewrite_start_ms.load()) / 1000);
  g_aof.rewrites.fetch_add(1);
  g_aof.last_rewrite_ok.store(status.ok());
  if (!status.ok()) return status;
  if (absl::Status s = WriteManifest(manifest); !s.ok()) return s;
  for (const core::AofFileInfo& old : manifest.history) io::Proactor::current()->Unlink(FilePath(old.name).c_str());
  manifest.history.clear();
  g_aof.manifest = std::move(manifest);
  g_aof.base_size.store(FileSize(FilePath(base.name)));
  g_aof.current_size.store(g_aof.base_size.load() + g_aof.incr_size);
  LOG(INFO) << "Append only file on: " << DirPath() << "/" << base.name << " and " << incr.name;
  return absl::OkStatus();
}

// The journals stop recording; the writer writes and fsyncs what they recorded, then ends.
void StopWriter() {
  // The journals stop recording; what they hold is taken by the writer's last rounds.
  shard::shard_set->AwaitAll([](Shard& s) { s.journal().set_on(false); });
  g_aof.stop.store(true);
  while (g_aof.writer_running.load()) io::Proactor::current()->SleepFor(std::chrono::milliseconds(1));
  g_aof.on.store(false);
}

}  // namespace

bool AppendOnlyConfigured() { return g_appendonly.load(std::memory_order_relaxed); }
AppendFsync AppendFsyncPolicy() { return AppendFsync(g_appendfsync.load(std::memory_order_relaxed)); }
std::string AppendFilename() {
  std::lock_guard lock(g_names_mu);
  return FLAGS_appendfilename;
}
std::string AppendDirname() { return DirPath(); }
bool AofLoadTruncated() { return g_aof_load_truncated.load(); }

void StartAppendOnly(bool files_loaded) {
  g_appendonly.store(true);
  auto start = [files_loaded] {
    if (g_aof.on.load() || g_aof.rewriting.load()) return;
    absl::Status status;
    if (files_loaded && !g_aof.manifest.incrs.empty()) {
      // Appending to the last incr file of the manifest that was loaded.
      status = OpenIncr(g_aof.manifest.incrs.back().name);
      if (status.ok()) {
        shard::shard_set->AwaitAll([](Shard& s) { s.journal().set_on(true); });
        g_aof.on.store(true);
        LaunchWriter();
      }
    } else {
      status = StartWithNewBase();
    }
    if (!status.ok()) LOG(ERROR) << "can't turn the append-only file on: " << status.message();
  };
  if (!io::Proactor::current()->Launch(start)) start();
}

void StopAppendOnly() {
  g_appendonly.store(false);
  if (!g_aof.on.load()) return;
  StopWriter();
  if (g_aof.fd >= 0) close(g_aof.fd);
  g_aof.fd = -1;
  LOG(INFO) << "Append only file off";
}

bool AppendOnlyOn() { return g_aof.on.load(); }

void FlushAppendOnly() {
  if (g_aof.on.load()) StopWriter();
}

void ResumeAppendOnly() {
  if (g_aof.on.load() || g_aof.fd < 0 || !AppendOnlyConfigured()) return;
  shard::shard_set->AwaitAll([](Shard& s) { s.journal().set_on(true); });
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
  const bool rewriting = g_aof.rewriting.load();
  core::Append(out, "aof_enabled:", on || AppendOnlyConfigured() ? 1 : 0, "\r\n");
  core::Append(out, "aof_rewrite_in_progress:", rewriting ? 1 : 0, "\r\n");
  core::Append(out, "aof_rewrite_scheduled:0\r\n");
  core::Append(out, "aof_last_rewrite_time_sec:", g_aof.last_rewrite_seconds.load(), "\r\n");
  core::Append(out, "aof_current_rewrite_time_sec:",
               rewriting ? (shard::NowMs() - g_aof.rewrite_start_ms.load()) / 1000 : -1, "\r\n");
  core::Append(out, "aof_last_bgrewrite_status:", g_aof.last_rewrite_ok.load() ? "ok" : "err", "\r\n");
  core::Append(out, "aof_rewrites:", g_aof.rewrites.load(), "\r\n");
  core::Append(out, "aof_rewrites_consecutive_failures:0\r\n");
  core::Append(out, "aof_last_write_status:", g_aof.last_write_ok.load() ? "ok" : "err", "\r\n");
  core::Append(out, "aof_last_cow_size:0\r\n");
  core::Append(out, "module_fork_in_progress:0\r\n");
  core::Append(out, "module_fork_last_cow_size:0\r\n");
  if (on) {
    core::Append(out, "aof_current_size:", g_aof.current_size.load(), "\r\n");
    core::Append(out, "aof_base_size:", g_aof.base_size.load(), "\r\n");
    core::Append(out, "aof_pending_rewrite:0\r\n");
    core::Append(out, "aof_buffer_length:0\r\n");
    core::Append(out, "aof_pending_bio_fsync:0\r\n");
    core::Append(out, "aof_delayed_fsync:", g_aof.delayed_fsync.load(), "\r\n");
  }
}

void SetAofLoadTruncated(bool on) { g_aof_load_truncated.store(on); }

void SetAppendOnly(bool on) {
  if (io::Proactor::current() == nullptr) {
    // At start (flags, the config file): main turns the AOF on after loading.
    g_appendonly.store(on);
    return;
  }
  if (on == AppendOnlyConfigured()) return;
  if (on) {
    StartAppendOnly(/*files_loaded=*/false);
  } else {
    StopAppendOnly();
  }
}

void SetAppendFsync(AppendFsync policy) { g_appendfsync.store(int(policy)); }

}  // namespace shardis::server

#include "server/persistence_config.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/string_util.h"

// The flags behind the parameters (config_params.cc maps CONFIG names to them); the defaults are
// Redis 7.0's.
DEFINE_string(dir, "./",
              "working directory, where snapshots are written and read (the process chdirs "
              "into it, as Redis does)");
DEFINE_string(dbfilename, "dump.rdb", "the snapshot's file name, in --dir (not a path)");
DEFINE_string(save, "3600 1 300 100 60 10000",
              "snapshot schedule: pairs of <seconds> <changes>, e.g. \"3600 1 300 100\": save "
              "when at least <changes> writes happened in <seconds>; \"\" = no snapshots");
DEFINE_bool(rdbcompression, true, "LZF-compress strings in snapshots");
DEFINE_bool(rdbchecksum, true, "end snapshots with a CRC64 checksum (fixed after start)");
DEFINE_bool(stop_writes_on_bgsave_error, true,
            "refuse writes (MISCONF) while the last background save failed");
DEFINE_bool(rdb_save_incremental_fsync, true,
            "fsync a snapshot file every 32 MB while writing it");
DEFINE_bool(rdb_del_sync_files, false, "Redis' parameter, accepted; no effect in shardis");
DEFINE_int64(rdb_key_save_delay, 0,
             "test knob: microseconds to sleep after each key a snapshot writes");
DEFINE_int64(key_load_delay, 0, "test knob: microseconds to sleep after each key loaded");

namespace shardis::server {

namespace {

// The strings and the rule list change only by CONFIG SET and are read once per save: a mutex is
// simpler than anything lock-free and costs nothing on the data path.
std::mutex mu;
std::string rdb_filename = "dump.rdb";
std::vector<SaveRule> save_rules = {{3600, 1}, {300, 100}, {60, 10000}};

std::atomic<bool> rdb_compression{true};
std::atomic<bool> stop_writes_on_bgsave_error{true};
std::atomic<bool> rdb_save_incremental_fsync{true};
std::atomic<bool> rdb_del_sync_files{false};
std::atomic<int64_t> rdb_key_save_delay_us{0};
std::atomic<int64_t> key_load_delay_us{0};

// Redis reads each token with strtoll and wants it used up; an empty token reads as 0 (so it is a
// valid change count, never a valid number of seconds).
bool ParseSaveToken(std::string_view token, int64_t* out) {
  const std::string s(token);
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

std::string RdbFilename() {
  std::lock_guard lock(mu);
  return rdb_filename;
}

std::vector<SaveRule> SaveRules() {
  std::lock_guard lock(mu);
  return save_rules;
}

bool RdbCompression() { return rdb_compression.load(std::memory_order_relaxed); }
// Immutable after start, so the flag itself is the value.
bool RdbChecksum() { return FLAGS_rdbchecksum; }
bool StopWritesOnBgsaveError() {
  return stop_writes_on_bgsave_error.load(std::memory_order_relaxed);
}
bool RdbSaveIncrementalFsync() { return rdb_save_incremental_fsync.load(std::memory_order_relaxed); }
bool RdbDelSyncFiles() { return rdb_del_sync_files.load(std::memory_order_relaxed); }
int64_t RdbKeySaveDelayUs() { return rdb_key_save_delay_us.load(std::memory_order_relaxed); }
int64_t KeyLoadDelayUs() { return key_load_delay_us.load(std::memory_order_relaxed); }

absl::StatusOr<std::vector<SaveRule>> ParseSaveRules(std::string_view text) {
  std::vector<SaveRule> rules;
  if (text.empty()) return rules;  // `save ""`: no snapshots
  std::vector<int64_t> numbers;
  for (std::string_view rest = text;;) {
    const size_t space = rest.find(' ');
    int64_t n = 0;
    const bool is_seconds = numbers.size() % 2 == 0;
    if (!ParseSaveToken(rest.substr(0, space), &n) || n < (is_seconds ? 1 : 0)) {
      return absl::InvalidArgumentError("Invalid save parameters");
    }
    numbers.push_back(n);
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  if (numbers.size() % 2 != 0) return absl::InvalidArgumentError("Invalid save parameters");
  for (size_t i = 0; i < numbers.size(); i += 2) rules.push_back({numbers[i], numbers[i + 1]});
  return rules;
}

std::string FormatSaveRules(const std::vector<SaveRule>& rules) {
  std::string out;
  for (const SaveRule& r : rules) {
    core::Append(&out, out.empty() ? "" : " ", r.seconds, " ", r.changes);
  }
  return out;
}

absl::Status ValidateDbFilename(std::string_view name) {
  if (name.find_first_of("/\\") != std::string_view::npos) {
    return absl::InvalidArgumentError("dbfilename can't be a path, just a filename");
  }
  return absl::OkStatus();
}

absl::Status ValidateDir(std::string_view path) {
  // The conditions chdir(2) fails on, tested without moving the process: the path must name a
  // directory we may search. strerror's text is what Redis replies.
  const std::string p(path);
  struct stat st;
  int err = 0;
  if (stat(p.c_str(), &st) != 0) {
    err = errno;
  } else if (!S_ISDIR(st.st_mode)) {
    err = ENOTDIR;
  } else if (access(p.c_str(), X_OK) != 0) {
    err = errno;
  }
  if (err != 0) return absl::InvalidArgumentError(std::strerror(err));
  return absl::OkStatus();
}

void SetDir(std::string_view path) {
  // Validated just before; only a directory removed in between can fail here.
  if (chdir(std::string(path).c_str()) != 0) {
    LOG(WARNING) << "chdir to " << path << " failed: " << std::strerror(errno);
  }
}

std::string Dir() {
  char cwd[4096];
  return getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
}

void SetRdbFilename(std::string_view name) {
  std::lock_guard lock(mu);
  rdb_filename = name;
}

void SetSaveRules(std::vector<SaveRule> rules) {
  std::lock_guard lock(mu);
  save_rules = std::move(rules);
}

void SetRdbCompression(bool on) { rdb_compression.store(on, std::memory_order_relaxed); }
void SetStopWritesOnBgsaveError(bool on) {
  stop_writes_on_bgsave_error.store(on, std::memory_order_relaxed);
}
void SetRdbSaveIncrementalFsync(bool on) {
  rdb_save_incremental_fsync.store(on, std::memory_order_relaxed);
}
void SetRdbDelSyncFiles(bool on) { rdb_del_sync_files.store(on, std::memory_order_relaxed); }
void SetRdbKeySaveDelayUs(int64_t us) { rdb_key_save_delay_us.store(us, std::memory_order_relaxed); }
void SetKeyLoadDelayUs(int64_t us) { key_load_delay_us.store(us, std::memory_order_relaxed); }

}  // namespace shardis::server

// The values behind the snapshot parameters (dir, dbfilename, save, rdbcompression, rdbchecksum,
// stop-writes-on-bgsave-error). Set by CONFIG SET, the config file, flags and SHARDIS_ variables
// (config_params.cc); read from any thread by the snapshot code, so each is safe to read
// concurrently with a CONFIG SET.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace shardis::server {

// One `save <seconds> <changes>` rule: snapshot when at least `changes` writes happened and
// `seconds` passed since the last successful save.
struct SaveRule {
  int64_t seconds = 0;
  int64_t changes = 0;

  bool operator==(const SaveRule&) const = default;
};

// The file snapshots go to and load from: dbfilename, relative to the process' working directory,
// which `dir` sets (Redis chdirs, so `CONFIG GET dir` is the cwd).
std::string RdbFilename();
// The `save` schedule; empty when snapshots are off (`save ""`).
std::vector<SaveRule> SaveRules();
bool RdbCompression();
bool RdbChecksum();  // fixed after start (Redis: immutable)
bool StopWritesOnBgsaveError();
// rdb-save-incremental-fsync: fsync the file every 32 MB while writing it, not only at the end.
bool RdbSaveIncrementalFsync();
// rdb-del-sync-files: Redis deletes the RDB it wrote only for replication when persistence is
// off; shardis has no replication yet, so nothing reads it (kept for clients that set it).
bool RdbDelSyncFiles();
// rdb-key-save-delay (Redis' hidden test knob): microseconds to sleep after each key a snapshot
// writes, so a test can make a BGSAVE last. 0: none. Negative -n: sleep 1us with probability 1/n
// per key (Redis' debugDelay), for delays shorter than one sleep.
int64_t RdbKeySaveDelayUs();
// key-load-delay, the same for each key loaded from a snapshot.
int64_t KeyLoadDelayUs();

// --- The parameters' parsing and validation, as Redis 7.0 does them (config_params.cc).

// The rules of a `save` value as CONFIG SET gets it: "<seconds> <changes> ..." split at single
// spaces; "" is none. Redis' checks: an even count, each token a whole integer (strtoll), seconds
// >= 1, changes >= 0; the error is Redis' "Invalid save parameters".
absl::StatusOr<std::vector<SaveRule>> ParseSaveRules(std::string_view text);
// "3600 1 300 100", as CONFIG GET save shows the rules.
std::string FormatSaveRules(const std::vector<SaveRule>& rules);
// Redis' isValidDBfilename: a file name, not a path.
absl::Status ValidateDbFilename(std::string_view name);
// Whether the process can chdir into `path`; the error is strerror's text, as Redis shows it.
absl::Status ValidateDir(std::string_view path);

// --- The setters behind CONFIG SET (config_params.cc). Values are validated already.
void SetDir(std::string_view path);  // chdir
std::string Dir();                    // the absolute working directory
void SetRdbFilename(std::string_view name);
void SetSaveRules(std::vector<SaveRule> rules);
void SetRdbCompression(bool on);
void SetStopWritesOnBgsaveError(bool on);
void SetRdbSaveIncrementalFsync(bool on);
void SetRdbDelSyncFiles(bool on);
void SetRdbKeySaveDelayUs(int64_t us);
void SetKeyLoadDelayUs(int64_t us);

}  // namespace shardis::server

// The values behind the snapshot parameters (dir, dbfilename, save, rdbcompression, rdbchecksum,
// stop-writes-on-bgsave-error). Set by CONFIG SET, the config file, flags and SHARDIS_ variables
// (config_params.cc); read from any thread by the snapshot code, so each is safe to read
// concurrently with a CONFIG SET.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardis::server {

// One `save <seconds> <changes>` rule: snapshot when at least `changes` writes happened and
// `seconds` passed since the last successful save.
struct SaveRule {
  int64_t seconds = 0;
  int64_t changes = 0;
};

// The file snapshots go to and load from: dbfilename, relative to the process' working directory,
// which `dir` sets (Redis chdirs, so `CONFIG GET dir` is the cwd).
std::string RdbFilename();
// The `save` schedule; empty when snapshots are off (`save ""`).
std::vector<SaveRule> SaveRules();
bool RdbCompression();
bool RdbChecksum();
bool StopWritesOnBgsaveError();
// rdb-key-save-delay: microseconds a save waits per key written (Redis' tests use it to make a
// save last); 0 normally.
int64_t RdbKeySaveDelayUs();

}  // namespace shardis::server

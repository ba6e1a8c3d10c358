// Loading an RDB file into the databases: at start (before the port serves commands) and for
// DEBUG RELOAD. The file is read and cut into keys on one thread; each key's value travels to
// its owner shard still encoded, in batches, and is decoded and inserted there, so every shard
// decodes in parallel. Meanwhile INFO shows loading:1 and commands get -LOADING.
#pragma once

#include <absl/status/status.h>

#include <cstdint>
#include <string>

namespace shardis::server {

struct LoadResult {
  uint64_t keys = 0;          // keys inserted
  uint64_t expired = 0;       // keys skipped because their deadline had passed
  uint64_t empty = 0;         // empty collections skipped, as Redis does
  double seconds = 0;
};

// Loads `path` into the databases (which should be empty). Call from a fiber on a proactor
// thread. NotFound when the file does not exist; any other error names the byte offset and what
// was expected there. A key already present makes the load fail ("duplicated key"), as in Redis,
// unless `merge` (DEBUG RELOAD MERGE): then the file's value replaces it.
// INFO's loading fields and -LOADING for commands: the caller enters the loading state first
// (BeginLoading) and ends it (EndLoading) once its whole dataset is in: an AOF's base file is
// followed by its incr files, and no client may be served between the two.
absl::Status LoadSnapshot(const std::string& path, bool merge, LoadResult* result);

// Enters the loading state before LoadSnapshot runs (at start, before the port opens), with the
// file's size for INFO's progress fields.
void BeginLoading(uint64_t total_bytes);
void EndLoading();

}  // namespace shardis::server

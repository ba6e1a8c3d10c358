// The append-only file (docs/persistence.md, "The journal"): Redis 7's multi-part AOF in
// `appenddirname` under `dir`: a manifest, a base file (an RDB snapshot, as with Redis'
// aof-use-rdb-preamble yes) and incr files of RESP commands.
//
// The shards record every write that takes effect in their journals (shard/journal.h). One
// writer fiber, on thread 0, takes their records with a hop per shard, merges them into one
// serial order (shard::JournalMerger) and appends it to the current incr file through io_uring,
// fsyncing as appendfsync says. Turning the AOF on writes a base snapshot whose cut is the
// instant the journals start recording, so base + incr files replay to the dataset.
#pragma once

#include <absl/status/status.h>

#include <cstdint>
#include <string>

#include "core/aof_manifest.h"

namespace shardis::server {

// The settings (CONFIG SET, the config file, flags).
enum class AppendFsync { kAlways, kEverySec, kNo };
bool AppendOnlyConfigured();  // appendonly
AppendFsync AppendFsyncPolicy();
std::string AppendFilename();  // appendfilename
std::string AppendDirname();   // appenddirname, relative to dir
bool AofLoadTruncated();

// The size of the file at path; 0 when it is missing (or cannot be stat()ed).
uint64_t FileSize(const std::string& path);

// At start, before clients are served, when appendonly is yes: loads the AOF (its base, then its
// incr files in order) instead of dbfilename, as Redis does. NotFound when there is no manifest
// (the dataset starts empty). A truncated last incr file is cut at its last complete command
// when aof-load-truncated is yes (the log says where); anything else malformed stops the start.
// The loading state stays on: the caller ends it once StartAppendOnlyNow has returned.
absl::Status LoadAppendOnlyFiles();

// Turns the AOF on, in the calling fiber: after LoadAppendOnlyFiles the journals append to the
// last incr file; without files, a new base snapshot and incr file are written, then the
// manifest. The writer lives on the calling thread.
absl::Status StartAppendOnlyNow(bool files_loaded);
// CONFIG SET appendonly yes: StartAppendOnlyNow(false) in a new fiber; returns at once.
void StartAppendOnly();
// CONFIG SET appendonly no: the journal stops recording; what was recorded is written and
// fsynced first.
void StopAppendOnly();
// Whether the journals record (the AOF is on and its writer runs).
bool AppendOnlyOn();
// SHUTDOWN, SIGTERM: the journals stop, and the writer writes and fsyncs everything they
// recorded. Call from a fiber, with writes paused. ResumeAppendOnly starts them again (a
// shutdown that failed).
void FlushAppendOnly();
void ResumeAppendOnly();

// BGREWRITEAOF (and the automatic rewrite, auto-aof-rewrite-percentage/min-size): a new base
// snapshot in a new fiber; with the AOF on, the writer goes on in a new incr file at the base's
// cut, and the files before it are deleted once the base is complete. kScheduled: a BGSAVE runs,
// the rewrite waits for it.
enum class RewriteStart { kStarted, kScheduled, kAlreadyRunning, kFailed };
RewriteStart StartAofRewrite();

// SHUTDOWN: while held, no AOF rewrite starts and one waiting for a BGSAVE gives up (the final
// save must not find one running).
void HoldAofRewrites(bool hold);

// INFO persistence: Redis' aof_* fields.
void AppendAofInfo(std::string* out);

// CONFIG SET appendonly / appendfsync / aof-load-truncated (and the flags at start, which only
// set the value: main turns the AOF on after loading).
void SetAppendOnly(bool on);
void SetAppendFsync(AppendFsync policy);
void SetAofLoadTruncated(bool on);
int64_t AutoAofRewritePercentage();
void SetAutoAofRewritePercentage(int64_t v);
int64_t AutoAofRewriteMinSize();
void SetAutoAofRewriteMinSize(int64_t v);

// The loader (aof_load.cc) hands over the manifest it loaded, for StartAppendOnly.
void LoadedAppendOnlyManifest(core::AofManifest manifest, uint64_t base_size, uint64_t total_size);

}  // namespace shardis::server

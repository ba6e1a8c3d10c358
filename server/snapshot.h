// SAVE, BGSAVE, the `save` schedule and the save at shutdown: a point-in-time RDB file of every
// database, written by every shard in parallel without fork (docs/persistence.md).
//
// The cut is one step of a transaction over every shard (so every multi-shard transaction is
// wholly before or after it), where each shard attaches a ShardSnapshot (shard/snapshot.h) to its
// databases. Then a fiber per shard serializes its keys in slices, yielding to its loop between
// them, and writes its pieces of the file at offsets it reserves, each piece with its own CRC64;
// the file's checksum is combined from those. The file is written under a temporary name,
// fsynced, renamed over the real one, and the directory is fsynced.
#pragma once

#include <absl/status/status.h>

#include <functional>
#include <string>

namespace shardis::shard {
class Shard;
}

namespace shardis::server {

// Writes a snapshot of every database to `path`. Call from a fiber on a proactor thread; returns
// when the file is in place (or the save failed: the previous file is untouched). Fails with
// FailedPrecondition when another save runs or saves are held (AbortAndHoldSaves); the
// shutdown's own save (for_shutdown) waits for a save that began before the hold instead. Updates
// LASTSAVE and the dirty counter's base on success.
absl::Status SaveSnapshot(const std::string& path, bool for_shutdown = false);

// The AOF's base file (aof.cc): a snapshot to `path` as SaveSnapshot writes one, with `at_cut`
// (if set) run on every shard inside the cut's step (the journals start recording at that
// instant) and `after_cut` on the calling fiber once the cut is taken. journal_cut: the cut's
// transaction leaves its markers in the journals (a rewrite: the writer switches files there).
// It is not a save: LASTSAVE and rdb_changes_since_last_save stay. FailedPrecondition when
// another save runs.
absl::Status SaveAofBase(const std::string& path, std::function<void(shard::Shard&)> at_cut,
                         const std::function<void()>& after_cut, bool journal_cut);

// BGSAVE: SaveSnapshot of dbfilename in a new fiber of this thread, updating INFO's bgsave
// fields. False when a save runs already.
bool StartBackgroundSave();
bool SaveInProgress();
// Asks for a BGSAVE as soon as none runs (BGSAVE inside MULTI, BGSAVE SCHEDULE).
void ScheduleBackgroundSave();

// Stops the snapshot running on this shard, if any, unless it is an AOF base (FLUSHALL, as Redis
// kills its RDB saving child): call on every shard, in one transaction step. The save then fails
// and leaves no file.
void AbortShardSnapshot(shard::Shard& shard);
// Waits (the calling fiber) until no save runs.
void WaitWhileSaving();
// SHUTDOWN, SIGTERM: stops a running save, if any, waits until it has ended, and keeps any other
// save (BGSAVE, the save schedule, SAVE, FLUSHALL's, DEBUG RELOAD's) from starting until
// ReleaseSaves, so that the next save is the shutdown's own, as Redis serves no client between
// killing its saving child and its final save. (Before, a BGSAVE sent meanwhile made the final
// save fail as "in progress", and SIGTERM left the server running.)
void AbortAndHoldSaves();
// A shutdown that failed (its final save did): saves may start again.
void ReleaseSaves();

// The number of changes made since start: the sum of every shard's dirty counter (Redis'
// server.dirty without its resets; see shard::ShardStats::dirty). A save records the sum at its
// cut as Persistence().dirty_at_last_save; rdb_changes_since_last_save and the save schedule use
// the difference. Hops to every shard: call from a fiber, not from a shard's inline code. Each
// shard's figure is read on its own thread at its hop, so the sum is not one instant's, but every
// change counted before the call started is in it.
uint64_t SumShardDirty();

// The `save` schedule and scheduled BGSAVEs: call every 100 ms from one fiber (it may hop).
void SaveCron();

// Redis' MISCONF (writeCommandsDeniedByDiskError): the text after "-MISCONF " that refuses
// writes, or empty. Writes are refused after a failed background save while a schedule is set
// and stop-writes-on-bgsave-error is yes, and after a failed write or fsync of the AOF until one
// succeeds.
std::string WritesDeniedByDiskError();

}  // namespace shardis::server

// Enforcing maxmemory (see memory_limit.h for the rules and why they are per shard).
#pragma once

#include <cstdint>

#include "shard/memory_limit.h"

namespace shardis::shard {

class Shard;

// On shard s's thread, before a kDenyOom command runs there (only when maxmemory is set): evicts
// s's keys by the policy while s is over its share, publishes s's used bytes, and returns false
// when the command must be refused with kOomError. The write that follows may add bytes, so s
// may exceed its share afterwards (Shard::may_exceed_share) until the next measure.
bool MakeRoomForWrite(Shard& s, int64_t now_ms);

// On shard s's thread, before a command that is not kDenyOom runs there (only when maxmemory is
// set): as Redis evicts before every command, EvictOverShare when s may exceed its share and the
// policy evicts. A shard known to be under its share pays one test: it was measured by the last
// write's admission or the periodic tick, and only writes grow it much.
void EvictBeforeCommand(Shard& s, int64_t now_ms);

// On shard s's thread, after a kDenyOom command ran there (only when maxmemory is set): measures
// and publishes s's used bytes, and raises MemoryLimit::short_of_victims when the write left s
// over its share, the process over the limit and s with nothing the policy may evict, so that the
// next command has the other shards evict for it (it evicts nothing itself: Redis evicts before
// the next command, not before this one's reply).
void NoteWriteGrowth(Shard& s);

// On shard s's thread, after a measure of its used bytes (EvictOverShare, the 100 ms tick):
// publishes them and records whether s exceeds its share.
void NoteUsedMemory(Shard& s, uint64_t used, bool force_publish);

// On shard s's thread, before any command runs there while maxmemory is set (Redis evicts in
// processCommand, before reads too): evicts s's keys by the policy while s is over its share (one
// batch at most) and publishes s's used bytes. True when s evicted as far as it needed to (under
// its share, or a full batch done); false under noeviction or when s had nothing left to evict.
bool EvictOverShare(Shard& s, int64_t now_ms);

// In a connection fiber, before a kDenyOom command that does not run on one shard (MSET, SORT
// ... STORE, ...) or any command queued in MULTI, and before any command while
// MemoryLimit::short_of_victims: true when the process is under maxmemory, after asking the
// shards over their share to evict when the policy allows (a hop, only then), and, when some of
// them have nothing to evict, the others past their share.
bool AdmitUnderMaxMemory();

// After CONFIG SET maxmemory, from a connection fiber: every shard over its share evicts by the
// policy at once (as many keys as before one write), as Redis starts evicting when the limit is
// lowered rather than at the next write.
void EvictOverMaxMemory();

// Evicts one key of s by `policy` (not kNoEviction): false when there is nothing to evict.
// Exposed for the unit tests.
bool EvictOne(Shard& s, EvictionPolicy policy, int64_t now_ms);

}  // namespace shardis::shard

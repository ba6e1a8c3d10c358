// Enforcing maxmemory (see memory_limit.h for the rules and why they are per shard).
#pragma once

#include <cstdint>

#include "shard/memory_limit.h"

namespace shardis::shard {

class Shard;

// On shard s's thread, before a kDenyOom command runs there (only when maxmemory is set): evicts
// s's keys by the policy while s is over its share, publishes s's used bytes, and returns false
// when the command must be refused with kOomError.
bool MakeRoomForWrite(Shard& s, int64_t now_ms);

// On shard s's thread, before any command runs there while maxmemory is set (Redis evicts in
// processCommand, before reads too): evicts s's keys by the policy while s is over its share (one
// batch at most) and publishes s's used bytes. True when s evicted as far as it needed to (under
// its share, or a full batch done); false under noeviction or when s had nothing left to evict.
bool EvictOverShare(Shard& s, int64_t now_ms);

// In a connection fiber, before a kDenyOom command that does not run on one shard (MSET, SORT
// ... STORE, ...) or any command queued in MULTI: true when the process is under maxmemory,
// after asking the shards over their share to evict when the policy allows (a hop, only then).
bool AdmitUnderMaxMemory();

// After CONFIG SET maxmemory, from a connection fiber: every shard over its share evicts by the
// policy at once (as many keys as before one write), as Redis starts evicting when the limit is
// lowered rather than at the next write.
void EvictOverMaxMemory();

// Evicts one key of s by `policy` (not kNoEviction): false when there is nothing to evict.
// Exposed for the unit tests.
bool EvictOne(Shard& s, EvictionPolicy policy, int64_t now_ms);

}  // namespace shardis::shard

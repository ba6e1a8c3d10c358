// Group commit for appendfsync always (docs/persistence.md, "Group commit"): a connection that ran
// writes holds their replies until the AOF writer has made durable every journal record those
// writes appended. The writer publishes, after each fsync, how far each shard's journal is on
// disk and wakes the fibers that wait; one fsync thus releases the replies of every client whose
// writes it covers.
//
// A waiting connection asks for every shard's journal as it was when its batch ended, not only
// for the records of its own writes: that costs a round at most, and needs no bookkeeping on the
// data path.
#pragma once

#include <cstdint>
#include <span>

namespace shardis::shard {

// Whether connections look at the journal after their writes (the AOF is on), and whether their
// replies wait for the disk (appendfsync always). Set by the AOF's control plane; turning either
// off releases the fibers that wait for it.
void SetJournalWaits(bool aof_on, bool durable_replies);
bool JournalWaitsActive();

// From a connection's fiber, after its batch ran writes. With appendfsync always: blocks until
// every shard's journal is on disk up to the record it had appended at the call. Otherwise:
// blocks while a shard's backlog is over ShardJournal::kBacklogLimit. Returns at once when the AOF
// turns off.
void AwaitJournal();

// From the AOF writer. After a write: shard i's records are in the file up to bytes[i] (in
// ShardJournal::appended_bytes' count). After an fsync: shard i's records numbered up to seqs[i]
// are on disk. Both wake the fibers that wait, on every thread.
void PublishJournalWritten(std::span<const uint64_t> bytes);
void PublishJournalDurable(std::span<const uint64_t> seqs);

// INFO aof_buffer_length: the bytes recorded and not yet written, over every shard.
uint64_t JournalBacklogBytes();

// The writer's doorbell: while it sleeps with nothing to write, a fiber that starts to wait runs
// `wake` on the writer's thread (`thread`) to end the sleep. From the writer's thread.
void SetJournalWriterAsleep(bool asleep, unsigned thread, void (*wake)());

}  // namespace shardis::shard

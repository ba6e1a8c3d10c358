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

// Whether replies wait (the AOF is on with appendfsync always): set by the AOF's control plane.
// Turning it off releases every waiting fiber.
void SetDurableReplies(bool on);
bool DurableReplies();

// From a connection's fiber, after its batch ran writes: blocks until every shard's journal is on
// disk up to the record it had appended at the call, or until durable replies turn off.
void AwaitJournalDurable();

// From the AOF writer, after an fsync: shard i's records numbered up to seqs[i] are on disk. Wakes
// the fibers that wait for them, on every thread.
void PublishJournalDurable(std::span<const uint64_t> seqs);

// The writer's doorbell: while it sleeps with nothing to write, a fiber that starts to wait runs
// `wake` on the writer's thread (`thread`) to end the sleep. From the writer's thread.
void SetJournalWriterAsleep(bool asleep, unsigned thread, void (*wake)());

}  // namespace shardis::shard

// FiberLocals: what the command a fiber runs keeps per fiber rather than per thread, since the
// thread's other fibers run while it waits for a hop: the journal's record of the command and
// the EXEC it runs in. One boost fiber-specific slot holds both, made at the fiber's first use
// and freed with the fiber, so that setting them is a plain store: a boost slot of its own per
// pointer costs a map insertion and an allocation each time it goes from null to a value, and
// the matching erase and free when it goes back (twice per script run).
#pragma once

namespace shardis::shard {

struct JournalCommand;
class Transaction;

struct FiberLocals {
  JournalCommand* journal_command = nullptr;
  Transaction* exec = nullptr;
};

// The calling fiber's (or the thread's main context's).
FiberLocals& CurrentFiberLocals();

}  // namespace shardis::shard

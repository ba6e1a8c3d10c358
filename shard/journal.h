// ShardJournal: this shard's part of the journal (docs/persistence.md, "The journal"). Every
// write that takes effect on the shard appends what replays it, on the shard's thread, in the
// order the shard executed it; the AOF writer takes the records with a hop and merges the
// shards' records into one serial order. It belongs to the shard's thread: nothing is shared.
//
// Two kinds of record:
//   - a command: the database it ran in and its RESP array, in the form that replays its effect
//     (the DEL of a key found expired, ...);
//   - a marker: the place in this shard's order where a write transaction that ran under the
//     transaction layer concluded while holding its keys here. Its commands come once, from its
//     coordinator (the payload, sent to the writer with the same transaction id), and the writer
//     puts them where the markers of every shard it involved are: a point of every one of those
//     shards' orders at which the transaction held its keys, so the file's order is a valid
//     serial order.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/aligned_string.h"
#include "shard/fiber_locals.h"

namespace shardis::shard {

// The commands that replay one transaction (an EXEC, a command that ran under the transaction
// layer), collected by its coordinator: RESP arrays, with a SELECT between two of them when the
// database changes.
struct JournalUnit {
  std::string resp;
  int first_db = -1;  // the database of the first command; -1: no command
  int last_db = -1;
  uint32_t commands = 0;  // not counting the SELECTs
  // The writer switches to the next incr file right after this unit (an AOF rewrite's cut).
  bool rotate = false;

  void Add(int db, std::span<const std::string_view> args);
  void Add(int db, std::span<const std::vector<std::string>> commands);
};

// What replays a write whose effect the command as sent would not reproduce, set by its handler
// (Redis' propagation rewrites: SPOP as SREM of the members drawn, XREADGROUP as one XCLAIM per
// entry delivered, a woken BLMOVE as LMOVE). Once set, it is journaled instead of the command;
// set with no commands, nothing is journaled (Redis' preventCommandPropagation).
class JournalEffect {
 public:
  bool set() const { return set_; }
  const std::vector<std::vector<std::string>>& commands() const { return commands_; }
  // The last command added, to append arguments to.
  std::vector<std::string>& last() { return commands_.back(); }

  void Add(std::vector<std::string> command) {
    set_ = true;
    commands_.push_back(std::move(command));
  }
  // The effect is exactly `command` (replacing any added before).
  void Replace(std::vector<std::string> command) {
    commands_.clear();
    Add(std::move(command));
  }
  // Nothing to journal, whatever changed.
  void None() {
    set_ = true;
    commands_.clear();
  }
  void Clear() {
    set_ = false;
    commands_.clear();
  }

 private:
  bool set_ = false;
  std::vector<std::vector<std::string>> commands_;
};

// One record of a chunk.
struct JournalRecord {
  enum Kind : uint8_t { kCommand = 1, kMarker = 2, kPayload = 3 };
  Kind kind = kCommand;
  int db = 0;             // kCommand: its database; kPayload: the first command's
  int last_db = 0;        // kPayload: the database its last command leaves selected
  uint32_t commands = 0;  // kPayload: how many (0: the transaction changed nothing)
  bool rotate = false;    // kPayload: JournalUnit::rotate
  std::string_view resp;  // kCommand: one RESP array; kPayload: the unit's (JournalUnit::resp)
  uint64_t id = 0;        // kMarker, kPayload: the transaction's journal id
  uint32_t shards = 0;    // kMarker: how many shards carry a marker of this transaction
};

// Reads the record at *pos of `records` (a chunk taken from a ShardJournal) and moves *pos past
// it; false at the end.
bool NextJournalRecord(std::string_view records, size_t* pos, JournalRecord* out);

class ShardJournal {
 public:
  // Whether the AOF is on (CONFIG SET appendonly): when off nothing is recorded, and a write
  // pays one test of this flag. Turning it off keeps what was recorded, for the writer's last
  // round.
  bool on() const { return on_; }
  void set_on(bool on);

  // A command that took effect here, as it is to be replayed in database `db`.
  void AppendCommand(int db, std::span<const std::string_view> args);
  // The same, given the command's RESP array as the client sent it (canonical RESP, which
  // AppendCommand would make of its arguments): copied as it is.
  void AppendRequest(int db, std::string_view resp);
  // The commands of one write's effect (JournalEffect::commands), as one record: several are
  // wrapped in MULTI ... EXEC, so that a replay applies all or none of them (as Redis 7
  // propagates them); none appends nothing.
  void AppendEffect(int db, std::span<const std::vector<std::string>> commands);
  // Where transaction `id` (which marks `shards` shards) concluded on this shard.
  void AppendMarker(uint64_t id, uint32_t shards);
  // The commands of transaction `id`, from its coordinator (on the coordinator's thread, which
  // may own none of the transaction's keys): the writer places them at the markers.
  void AppendPayload(uint64_t id, const JournalUnit& unit);

  // The records appended since the last Take, and the sequence numbers of the first and the
  // last of them (records, commands and markers, are numbered from 1 on this shard). Payloads
  // travel apart from the ordered records: a coordinator's payload may belong to a marker that
  // waits behind its own shard's records.
  struct Chunk {
    std::string records;
    std::string payloads;
    uint64_t first_seq = 1;
    uint64_t end_seq = 0;
    uint64_t first_byte = 0;  // appended_bytes before the first record
  };
  Chunk Take();
  // The number of the last record appended. Any thread may read it (appendfsync always: a reply
  // waits until the writer has made every record before it durable); only the shard's thread
  // writes it.
  uint64_t seq() const { return seq_.load(std::memory_order_acquire); }
  // The backlog: records appended and not yet written to the file, in bytes of the records' own
  // encoding. The shard counts what it appends, the AOF writer what it wrote (set_written_bytes,
  // from its thread); over kBacklogLimit the journal says so (over_backlog_limit, read by
  // connections of any thread after their writes, which then wait: journal_durability.h), so
  // that a disk slower than the writes does not grow the journals without bound.
  static constexpr uint64_t kBacklogLimit = 64 << 20;
  uint64_t appended_bytes() const { return appended_bytes_.load(std::memory_order_acquire); }
  uint64_t written_bytes() const { return written_bytes_.load(std::memory_order_acquire); }
  void set_written_bytes(uint64_t bytes) { written_bytes_.store(bytes, std::memory_order_release); }
  bool over_backlog_limit() const { return over_backlog_limit_.load(std::memory_order_relaxed); }
  uint64_t backlog_bytes() const { return appended_bytes() - written_bytes(); }

 private:
  // A command record's header: kind, db, the RESP bytes' length (see journal.cc).
  static constexpr size_t kCommandHeader = 2 + sizeof(uint32_t);
  // Adds a command record of `resp` RESP bytes and returns where those bytes go.
  char* AddCommandRecord(int db, size_t resp);
  // Makes room for a record of `record` bytes without a reallocation on the way.
  void ReserveRecord(size_t record);
  void Appended(size_t bytes) {
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    const uint64_t appended = appended_bytes_.load(std::memory_order_relaxed) + bytes;
    appended_bytes_.store(appended, std::memory_order_release);
    // A line that changes about once a millisecond (the writer's), and a flag that rarely does.
    const bool over = appended - written_bytes_.load(std::memory_order_relaxed) > kBacklogLimit;
    if (over != over_backlog_limit_.load(std::memory_order_relaxed)) {
      over_backlog_limit_.store(over, std::memory_order_relaxed);
    }
  }

  bool on_ = false;
  std::string records_;
  std::string payloads_;
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> appended_bytes_{0};
  std::atomic<uint64_t> written_bytes_{0};
  std::atomic<bool> over_backlog_limit_{false};
  uint64_t taken_seq_ = 0;  // the last record handed to the writer
  uint64_t taken_bytes_ = 0;
  size_t round_room_ = 0;  // what Take reserved for the records of the round after it
};

// Merges the shards' chunks into one serial order (the AOF's): a shard's records keep their
// order; a transaction's payload goes where the markers of every shard it involved are at the
// head of their shards' records (until then those shards wait). That place exists because the
// transaction held its keys on each of those shards at its marker, and it is reached because
// write transactions that share a shard conclude there in the same order on every shard they
// share (docs/persistence.md, "The journal"). Commands get a SELECT before them when their
// database is not the one the output has selected; a payload of several commands is wrapped in
// MULTI/EXEC, as Redis propagates a transaction.
class JournalMerger {
 public:
  explicit JournalMerger(unsigned shards) : shards_(shards) {}

  // A chunk taken from shard `sid`'s journal.
  void Add(unsigned sid, ShardJournal::Chunk chunk);
  // Appends to *out every record that can be placed now. Stops right after a unit with `rotate`
  // and returns true: the caller writes *out to the current file and switches files (the output
  // selects no database from then on) before it drains again. *out is page-aligned so that the
  // writer hands it to direct I/O as it is (io/append_file.h).
  bool Drain(core::PageAlignedString* out);
  // Records still waiting for a marker or a payload.
  bool waiting() const;
  // What waits, for the log: each pending transaction, and each shard's head record.
  std::string WaitingReport() const;
  // The number of shard `sid`'s last record that Drain has placed (all before it are placed).
  uint64_t placed_seq(unsigned sid) const { return shards_[sid].placed_seq; }
  // The bytes of shard `sid`'s records placed so far, in ShardJournal::appended_bytes' count.
  uint64_t placed_bytes(unsigned sid) const { return shards_[sid].placed_bytes; }
  // The database the output has selected (-1: none yet, a new file).
  int selected_db() const { return selected_db_; }
  void set_selected_db(int db) { selected_db_ = db; }

 private:
  struct Pending {
    std::vector<unsigned> at_head;  // shards whose head is this transaction's marker
    bool has_payload = false;
    bool rotate = false;
    int first_db = 0, last_db = 0;
    uint32_t commands = 0;
    std::string resp;
  };
  struct Queue {
    std::deque<std::string> chunks;  // records, oldest first
    size_t pos = 0;                   // in chunks.front()
    uint64_t placed_seq = 0;          // the number of the record before the head
    uint64_t placed_bytes = 0;        // the bytes of the records before the head
  };
  void Select(int db, core::PageAlignedString* out);

  std::vector<Queue> shards_;
  absl::flat_hash_map<uint64_t, Pending> pending_;
  int selected_db_ = -1;
  std::string select_;  // Select's command, encoded (kept: no allocation per SELECT)
};

// A journal id for a transaction coordinated on this thread: unique in the process without a
// shared counter (the thread's index in the low byte).
uint64_t NewJournalId();

// What the write command that a fiber is running journals, when it runs under the transaction
// layer: set by the command dispatcher (server/) for the handler's duration, read by the
// Transactions the handler runs. A fiber, not a thread: other connections' fibers run on the
// same thread while a command waits for its hops.
struct JournalCommand {
  int db = 0;
  std::span<const std::string_view> args;  // the command as the client sent it
  // Inside EXEC: where the commands go (the EXEC's transaction carries the unit); null otherwise.
  JournalUnit* exec_unit = nullptr;
  // Set by a handler whose effect the command as sent would not replay (BLMOVE woken: LMOVE;
  // XREADGROUP: XCLAIMs): journaled instead of args.
  JournalEffect effect{};
  // Set by a handler that changed data without moving the dirty counter (Redis counts no change
  // for a pop served to a blocked client, but propagates it).
  bool force = false;
  // An AOF rewrite's cut: its payload tells the writer to switch files there.
  bool rotate = false;
};
JournalCommand* CurrentJournalCommand();
void SetCurrentJournalCommand(JournalCommand* command);
// Sets the current fiber's JournalCommand for a scope, and puts back the one before (one lookup
// of the fiber's locals for both).
class JournalCommandScope {
 public:
  explicit JournalCommandScope(JournalCommand* command)
      : locals_(CurrentFiberLocals()), previous_(locals_.journal_command) {
    locals_.journal_command = command;
  }
  ~JournalCommandScope() { locals_.journal_command = previous_; }
  JournalCommandScope(const JournalCommandScope&) = delete;
  JournalCommandScope& operator=(const JournalCommandScope&) = delete;

 private:
  FiberLocals& locals_;
  JournalCommand* previous_;
};

}  // namespace shardis::shard

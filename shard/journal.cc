#include "shard/journal.h"

#include <algorithm>
#include <cstring>

#include <absl/strings/str_cat.h>

#include "core/aof_reader.h"
#include "io/proactor.h"
#include "shard/fiber_locals.h"

namespace shardis::shard {

namespace {

// A record: kind (1 byte), then
//   command: db (1 byte), length (4 bytes), the RESP bytes;
//   marker: id (8 bytes), shards (4 bytes);
//   payload: id (8 bytes), first db (1 byte), last db (1 byte), rotate (1 byte), commands
//            (4 bytes), length (4 bytes), the RESP bytes.
// Host byte order: records never leave the process.
template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
template <typename T>
T Get(std::string_view s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof(v));
  return v;
}

// Writes a command record's header (kind, db, the RESP bytes' length) at p; returns its end.
char* PutCommandHeader(char* p, int db, size_t resp) {
  *p++ = char(JournalRecord::kCommand);
  *p++ = char(uint8_t(db));
  const uint32_t len = uint32_t(resp);
  std::memcpy(p, &len, sizeof(len));
  return p + sizeof(len);
}

// What Take leaves room for in the next round's buffer beyond the last round's size, at most.
constexpr size_t kRoundHeadroom = 4 << 20;

constexpr std::string_view kMulti = "*1\r\n$5\r\nMULTI\r\n";
constexpr std::string_view kExec = "*1\r\n$4\r\nEXEC\r\n";

}  // namespace

JournalCommand* CurrentJournalCommand() { return CurrentFiberLocals().journal_command; }
void SetCurrentJournalCommand(JournalCommand* command) {
  CurrentFiberLocals().journal_command = command;
}

uint64_t NewJournalId() {
  thread_local uint64_t counter = 0;
  return (++counter << 8) | (io::Proactor::current()->index() & 0xff);
}

void JournalUnit::Add(int db, std::span<const std::string_view> args) {
  if (commands == 0) {
    first_db = db;
  } else if (db != last_db) {
    const std::string index = std::to_string(db);
    const std::string_view select[] = {"SELECT", index};
    core::AppendRespCommand(&resp, select);
  }
  last_db = db;
  ++commands;
  core::AppendRespCommand(&resp, args);
}

void JournalUnit::Add(int db, std::span<const std::vector<std::string>> commands) {
  std::vector<std::string_view> args;
  for (const std::vector<std::string>& command : commands) {
    args.assign(command.begin(), command.end());
    Add(db, args);
  }
}

bool NextJournalRecord(std::string_view records, size_t* pos, JournalRecord* out) {
  if (*pos >= records.size()) return false;
  size_t at = *pos;
  out->kind = JournalRecord::Kind(uint8_t(records[at++]));
  auto bytes = [&] {
    const uint32_t len = Get<uint32_t>(records, at);
    at += sizeof(len);
    out->resp = records.substr(at, len);
    at += len;
  };
  switch (out->kind) {
    case JournalRecord::kCommand:
      out->db = uint8_t(records[at++]);
      bytes();
      break;
    case JournalRecord::kMarker:
      out->id = Get<uint64_t>(records, at);
      at += sizeof(uint64_t);
      out->shards = Get<uint32_t>(records, at);
      at += sizeof(uint32_t);
      break;
    case JournalRecord::kPayload:
      out->id = Get<uint64_t>(records, at);
      at += sizeof(uint64_t);
      out->db = uint8_t(records[at++]);
      out->last_db = uint8_t(records[at++]);
      out->rotate = records[at++] != 0;
      out->commands = Get<uint32_t>(records, at);
      at += sizeof(uint32_t);
      bytes();
      break;
  }
  *pos = at;
  return true;
}

void ShardJournal::set_on(bool on) { on_ = on; }

void ShardJournal::AppendCommand(int db, std::span<const std::string_view> args) {
  // Every journaled write comes here: the record in one resize and plain stores.
  const size_t resp = core::RespCommandSize(args);
  core::PutRespCommand(AddCommandRecord(db, resp), args);
  Appended(kCommandHeader + resp);
}

void ShardJournal::AppendRequest(int db, std::string_view resp) {
  // Appended, not resized and copied over as AddCommandRecord does: a resize zero-fills the
  // request's bytes first (a memset of every SET's ~170 bytes, 1.4% of the server's CPU at
  // everysec SET P16).
  char header[kCommandHeader];
  PutCommandHeader(header, db, resp.size());
  ReserveRecord(kCommandHeader + resp.size());
  records_.append(header, kCommandHeader);
  records_.append(resp);
  Appended(kCommandHeader + resp.size());
}

void ShardJournal::AppendEffect(int db, std::span<const std::vector<std::string>> commands) {
  if (commands.empty()) return;
  const bool wrap = commands.size() > 1;
  std::vector<std::vector<std::string_view>> views;
  views.reserve(commands.size());
  size_t resp = wrap ? kMulti.size() + kExec.size() : 0;
  for (const std::vector<std::string>& command : commands) {
    views.emplace_back(command.begin(), command.end());
    resp += core::RespCommandSize(views.back());
  }
  char* p = AddCommandRecord(db, resp);
  if (wrap) p = std::copy(kMulti.begin(), kMulti.end(), p);
  for (const std::vector<std::string_view>& args : views) p = core::PutRespCommand(p, args);
  if (wrap) std::copy(kExec.begin(), kExec.end(), p);
  Appended(kCommandHeader + resp);
}

void ShardJournal::ReserveRecord(size_t record) {
  const size_t at = records_.size();
  if (records_.capacity() - at < record) {
    records_.reserve(std::max(at + record, 2 * records_.capacity()));  // growing geometrically
  }
}

char* ShardJournal::AddCommandRecord(int db, size_t resp) {
  const size_t at = records_.size();
  const size_t record = kCommandHeader + resp;
  ReserveRecord(record);
  records_.resize(at + record);
  return PutCommandHeader(records_.data() + at, db, resp);
}

void ShardJournal::AppendMarker(uint64_t id, uint32_t shards) {
  records_.push_back(char(JournalRecord::kMarker));
  Put<uint64_t>(&records_, id);
  Put<uint32_t>(&records_, shards);
  Appended(1 + sizeof(uint64_t) + sizeof(uint32_t));
}

void ShardJournal::AppendPayload(uint64_t id, const JournalUnit& unit) {
  payloads_.push_back(char(JournalRecord::kPayload));
  Put<uint64_t>(&payloads_, id);
  payloads_.push_back(char(uint8_t(unit.commands ? unit.first_db : 0)));
  payloads_.push_back(char(uint8_t(unit.commands ? unit.last_db : 0)));
  payloads_.push_back(char(unit.rotate ? 1 : 0));
  Put<uint32_t>(&payloads_, unit.commands);
  Put<uint32_t>(&payloads_, uint32_t(unit.resp.size()));
  payloads_.append(unit.resp);
}

ShardJournal::Chunk ShardJournal::Take() {
  Chunk c;
  c.records.swap(records_);
  // Room for the next round now, so that its appends do not grow the buffer (each growth copies
  // it all): twice this round's records (at most kRoundHeadroom more), or half the room the last
  // round had, whichever is more. Rounds come in all sizes (a round that waited for a write or an
  // fsync is much larger than one right after it); sized by the last round alone, the buffer was
  // grown and copied in about every round (1.2-1.5% of the server's CPU at everysec SET P16).
  round_room_ = std::max(c.records.size() + std::min(c.records.size(), kRoundHeadroom), round_room_ / 2);
  records_.reserve(round_room_);
  c.payloads.swap(payloads_);
  c.first_seq = taken_seq_ + 1;
  c.end_seq = taken_seq_ = seq_.load(std::memory_order_relaxed);
  c.first_byte = taken_bytes_;
  taken_bytes_ = appended_bytes_.load(std::memory_order_relaxed);
  return c;
}

void JournalMerger::Add(unsigned sid, ShardJournal::Chunk chunk) {
  size_t pos = 0;
  JournalRecord r;
  while (NextJournalRecord(chunk.payloads, &pos, &r)) {
    Pending& p = pending_[r.id];
    p.has_payload = true;
    p.rotate = r.rotate;
    p.first_db = r.db;
    p.last_db = r.last_db;
    p.commands = r.commands;
    p.resp.assign(r.resp);
  }
  Queue& q = shards_[sid];
  // The journal numbers its records from its start, the merger sees them from the writer's.
  if (q.chunks.empty()) {
    q.placed_seq = chunk.first_seq - 1;
    q.placed_bytes = chunk.first_byte;
  }
  if (!chunk.records.empty()) q.chunks.push_back(std::move(chunk.records));
}

void JournalMerger::Select(int db, core::PageAlignedString* out) {
  if (db == selected_db_) return;
  const std::string index = std::to_string(db);
  const std::string_view select[] = {"SELECT", index};
  select_.clear();
  core::AppendRespCommand(&select_, select);
  out->append(select_);
  selected_db_ = db;
}

bool JournalMerger::Drain(core::PageAlignedString* out) {
  // Moves shard q's head past its current record.
  auto pop = [](Queue& q, size_t next) {
    q.placed_bytes += next - q.pos;
    q.pos = next;
    ++q.placed_seq;
    if (q.pos >= q.chunks.front().size()) {
      q.chunks.pop_front();
      q.pos = 0;
    }
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (unsigned sid = 0; sid < shards_.size(); ++sid) {
      Queue& q = shards_[sid];
      while (!q.chunks.empty()) {
        size_t next = q.pos;
        JournalRecord r;
        NextJournalRecord(q.chunks.front(), &next, &r);
        if (r.kind == JournalRecord::kCommand) {
          Select(r.db, out);
          out->append(r.resp);
          pop(q, next);
          progress = true;
          continue;
        }
        // A marker: this shard waits until every shard of the transaction is at its marker and
        // the payload is in.
        Pending& p = pending_[r.id];
        if (std::find(p.at_head.begin(), p.at_head.end(), sid) == p.at_head.end()) {
          p.at_head.push_back(sid);
        }
        if (p.at_head.size() < r.shards || !p.has_payload) break;
        if (p.commands > 0) {
          Select(p.first_db, out);
          if (p.commands > 1) out->append(kMulti);
          out->append(p.resp);
          if (p.commands > 1) out->append(kExec);
          selected_db_ = p.last_db;
        }
        const bool rotate = p.rotate;
        for (unsigned other : p.at_head) {
          Queue& oq = shards_[other];
          size_t onext = oq.pos;
          JournalRecord marker;
          NextJournalRecord(oq.chunks.front(), &onext, &marker);
          pop(oq, onext);
        }
        pending_.erase(r.id);
        if (rotate) {
          selected_db_ = -1;  // the next file selects its database afresh
          return true;
        }
        progress = true;
      }
    }
  }
  return false;
}

bool JournalMerger::waiting() const {
  if (!pending_.empty()) return true;
  for (const Queue& q : shards_) {
    if (!q.chunks.empty()) return true;
  }
  return false;
}

std::string JournalMerger::WaitingReport() const {
  std::string out;
  for (const auto& [id, p] : pending_) {
    absl::StrAppend(&out, "transaction ", id, ": markers at the head of ", p.at_head.size(),
                    " shard(s), payload ", p.has_payload ? "in" : "missing", "; ");
  }
  for (unsigned sid = 0; sid < shards_.size(); ++sid) {
    const Queue& q = shards_[sid];
    if (q.chunks.empty()) continue;
    JournalRecord r;
    size_t pos = q.pos;
    NextJournalRecord(q.chunks.front(), &pos, &r);
    absl::StrAppend(&out, "shard ", sid, " waits at record ", q.placed_seq + 1);
    if (r.kind == JournalRecord::kMarker) {
      absl::StrAppend(&out, ", the marker of transaction ", r.id, " over ", r.shards, " shard(s)");
    }
    out += "; ";
  }
  return out;
}

}  // namespace shardis::shard

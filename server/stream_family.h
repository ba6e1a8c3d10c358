// What the stream family shares with other command families: the read of XREAD/XREADGROUP, for
// the blocking layer, which serves a blocked XREAD when a stream gets new entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/reply_builder.h"
#include "core/stream.h"
#include "shard/transaction.h"

namespace shardis::server {

// The options of one XREAD / XREADGROUP call.
struct StreamReadArgs {
  size_t count = 0;  // 0: no limit
  bool noack = false;
  bool group_read = false;    // XREADGROUP
  std::string_view group;     // XREADGROUP: the group and the consumer
  std::string_view consumer;
};

// The special "after" ID of XREADGROUP's ">" (new entries for the group).
inline constexpr core::StreamID kStreamNewEntries = core::StreamID::Max();

// Serves one stream of an XREAD/XREADGROUP on its shard (Redis' xreadCommand per key): entries
// after `after` (for a group: ">" = kStreamNewEntries reads the group's new entries, another ID
// the consumer's history). When there is something to return (always, for a history read), it
// updates the group (last delivered ID, entries_read, PEL, consumer), writes the entries array
// [[id, [f, v, ...]], ...] on rb and returns true; otherwise it writes and changes nothing and
// returns false. `group` must exist in `s` for a group read. A consumer it creates counts one
// change on `shard` (Redis' dirty; the read itself is counted by the caller, see StreamReadKeys).
// `journal` (non-null while the AOF is on) gets the commands that replay a group read's changes,
// as Redis 7.0 propagates them: an XCLAIM per entry delivered, XGROUP SETID after a NOACK read,
// XGROUP CREATECONSUMER for a consumer a NOACK read made.
bool StreamReadOne(shard::Shard& shard, shard::Db& db, std::string_view key, core::Stream* s,
                   core::StreamID after, const StreamReadArgs& args, int64_t now_ms,
                   core::ReplyBuilder& rb, std::vector<std::vector<std::string>>* journal);

// The whole read of XREAD/XREADGROUP over tx (whose keys are the streams, all checked to exist
// with the group for XREADGROUP): for each key i, StreamReadOne after ids[i]. Writes the reply
// (RESP2 array / RESP3 map of key -> entries, in key order) on rb and returns the number of
// streams served; with 0 nothing is written (the caller blocks, or replies a null array). Runs
// one phase of tx and does not conclude it. Each stream served to a group read counts one change
// (Redis 7.0 counts none for a blocked XREADGROUP it serves later, only its new consumer). A
// group read's journal effect (shard::CurrentJournalCommand) is those changes' commands, never
// the XREADGROUP itself.
size_t StreamReadKeys(shard::Transaction& tx, std::span<const core::StreamID> ids,
                      const StreamReadArgs& args, core::ReplyBuilder& rb);

}  // namespace shardis::server

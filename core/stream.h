// Stream: the value of a Redis stream (XADD, XRANGE, XREADGROUP, ...), with Redis 7.0's
// bookkeeping (last_id, max_deleted_entry_id, entries_added) and its consumer groups.
//
// Entries are kept in ID order in packed nodes, as Redis keeps listpacks in a radix tree: an
// ordered map from each node's master ID (the ID of the first entry ever appended to it) to a node
// whose ONE heap buffer holds the master entry's field names and then every entry as
//   [varint ms - master.ms][varint seq][flags][varint nfields][field/value pairs]
// where an entry whose field names equal the master's (the common case) stores only its values
// (flag kSameFields), as Redis' stream listpacks do. A node takes new entries until it holds
// --stream_node_max_entries entries (live plus deleted, as Redis counts) or the listpack Redis
// would have built for it (computed entry by entry, integers encoded as integers) reaches
// --stream_node_max_bytes; then a new node starts. Deleting an entry removes its bytes (Redis only
// flags it) but still counts it for both limits, so node boundaries — which decide what an
// approximate (~) trim removes and what XINFO reports as radix-tree-keys — are the ones Redis
// has.
//
// Consumer groups hold their last delivered ID, their logical read counter (entries_read) and a
// PEL (pending entries list: ID -> {consumer, delivery time, delivery count}); each consumer holds
// the same NACK records for its own IDs. Groups and consumers are ordered by name (Redis' rax).
//
// Everything lives on the calling thread's ShardHeap; an object is used and destroyed on the shard
// thread that created it. Views handed to callbacks stay valid until the next modification.
#pragma once

#include <absl/functional/function_ref.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/sparse_pages.h"
#include "core/value_object.h"

namespace shardis::core {

// The node limits (gflags stream_node_max_entries / stream_node_max_bytes, Redis' config names,
// give the start values; CONFIG SET changes them through the setters).
size_t StreamNodeMaxEntries();
size_t StreamNodeMaxBytes();         // the limit in effect (0 and huge values mean 1 GiB)
size_t StreamNodeMaxBytesSetting();  // as configured, as CONFIG GET shows it
void SetStreamNodeMaxEntries(size_t n);
void SetStreamNodeMaxBytes(size_t n);

struct StreamID {
  uint64_t ms = 0;
  uint64_t seq = 0;

  static constexpr StreamID Min() { return {0, 0}; }
  static constexpr StreamID Max() { return {UINT64_MAX, UINT64_MAX}; }
  friend auto operator<=>(const StreamID&, const StreamID&) = default;
  bool IsZero() const { return ms == 0 && seq == 0; }
  // Redis' streamIncrID / streamDecrID: false (and no change) at the ends of the ID space.
  bool Incr();
  bool Decr();
  std::string ToString() const;  // "ms-seq"
};

// Redis' streamGenericParseIDOrReply: "<ms>[-<seq>]" with each number read by string2ull (strict
// integer digits, else strtoull, so " 1" and "+1" pass while "-1" does not); a missing seq is
// missing_seq. Unless strict, "-" and "+" are the smallest and largest IDs. With seq_given
// non-null (XADD), "<ms>-*" is accepted and sets *seq_given = false. False on a malformed ID.
bool ParseStreamID(std::string_view s, uint64_t missing_seq, bool strict, StreamID* out,
                   bool* seq_given = nullptr);

using ShardString = std::basic_string<char, std::char_traits<char>, ShardAllocator<char>>;

struct ViewLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a < b; }
};

template <typename K, typename V, typename Less = std::less<K>>
using ShardMap = std::map<K, V, Less, ShardAllocator<std::pair<const K, V>>>;

struct StreamConsumer;

// A pending (delivered, not acknowledged) entry of a group. Owned by the group's PEL; the
// consumer's PEL points at the same record.
struct StreamNack {
  int64_t delivery_time = 0;  // ms
  uint64_t delivery_count = 0;
  StreamConsumer* consumer = nullptr;
};

struct StreamConsumer {
  ShardString name;
  int64_t seen_time = 0;     // ms: the last time a command named it (Redis 7.2's seen-time)
  int64_t active_time = -1;  // ms: the last read or claim that gave it entries; -1: never
  ShardMap<StreamID, StreamNack*> pel;
};

struct StreamGroup {
  static constexpr int64_t kInvalidEntriesRead = -1;  // Redis' SCG_INVALID_ENTRIES_READ

  StreamID last_id;
  int64_t entries_read = 0;
  ShardMap<StreamID, StreamNack*> pel;
  ShardMap<ShardString, StreamConsumer*, ViewLess> consumers;

  ~StreamGroup();
  StreamConsumer* FindConsumer(std::string_view name) const;
  // Creates the consumer (seen now) if absent; *created tells which.
  StreamConsumer* GetOrCreateConsumer(std::string_view name, int64_t now_ms, bool* created);
  // Deletes the consumer and its pending entries; returns how many entries it had pending.
  size_t DeleteConsumer(std::string_view name);
  // Acknowledges id: removes it from the group's and its consumer's PEL. False if not pending.
  bool Ack(StreamID id);
  // Assigns a pending (or new, delivery_count 1 / time now) entry to consumer `c`.
  StreamNack* Assign(StreamID id, StreamConsumer* c, int64_t now_ms);
};

class Stream {
 public:
  // The flat field/value views of one entry: fv[2*i] is field i, fv[2*i+1] its value.
  using FieldValues = std::vector<std::string_view>;
  using EntryFn = absl::FunctionRef<bool(StreamID id, const FieldValues& fv)>;  // false: stop

  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Stream* Clone() const;  // deep copy on the calling thread's heap
  // Active defragmentation (see sparse_pages.h): how many of the entries' blocks (the nodes and
  // their buffers) sit on sparse pages. Nothing moves in place (the maps' nodes and the strings
  // point into themselves): the caller copies the whole stream (Clone) when any does.
  size_t SparseBlocks(const SparsePages& pages) const;

  // Heap bytes owned by the stream (for MEMORY USAGE), not counting this object: its nodes,
  // estimated from the first `samples` of them (0 = all; see SampledBytes), and its consumer
  // groups with their pending entries, estimated likewise per group.
  size_t MallocBytes(size_t samples) const;

  size_t length() const { return length_; }
  StreamID last_id() const { return last_id_; }
  StreamID max_deleted_entry_id() const { return max_deleted_; }
  uint64_t entries_added() const { return entries_added_; }
  // The first live entry's ID, 0-0 when empty (Redis' s->first_id).
  StreamID first_id() const;
  // The last live entry's ID, 0-0 when empty (Redis' streamLastValidID).
  StreamID last_valid_id() const;
  size_t node_count() const { return nodes_.size(); }
  // The master ID of every node, in order (the RDB writer keeps the node boundaries: a node's
  // entries are those from its master ID up to the next node's).
  void ForEachNodeMaster(absl::FunctionRef<void(StreamID master)> fn) const {
    for (const auto& [id, node] : nodes_) fn(id);
  }

  void set_last_id(StreamID id) { last_id_ = id; }
  void set_max_deleted_entry_id(StreamID id) { max_deleted_ = id; }
  void set_entries_added(uint64_t n) { entries_added_ = n; }

  // Appends an entry with `id` (> last_id(), checked by the caller); fv holds field, value pairs.
  void Append(StreamID id, const std::vector<std::string_view>& fv);

  // Visits entries with start <= id <= end in order (rev: from end down to start).
  void Range(StreamID start, StreamID end, bool rev, EntryFn fn) const;
  bool Contains(StreamID id) const;
  // Removes one entry; updates length but not max_deleted (XDEL does that). False if absent.
  bool Delete(StreamID id);

  // Redis' streamTrim. maxlen >= 0 trims by length, else by minid; approx trims whole nodes
  // only; limit (0 = none) caps the entries removed. Returns how many were removed.
  int64_t Trim(int64_t maxlen, StreamID minid, bool approx, int64_t limit);

  // Redis 7.0's lag helpers.
  bool RangeHasTombstones(StreamID start, StreamID end) const;
  int64_t EstimateDistanceFromFirstEverEntry(StreamID id) const;

  // Consumer groups, by name.
  StreamGroup* FindGroup(std::string_view name) const;
  // Null if a group of that name exists.
  StreamGroup* CreateGroup(std::string_view name, StreamID last_id, int64_t entries_read);
  bool DestroyGroup(std::string_view name);
  const ShardMap<ShardString, StreamGroup*, ViewLess>& groups() const { return groups_; }

 private:
  struct Node;
  using NodeMap = ShardMap<StreamID, Node*>;

  // The node whose range holds id (the last node with master <= id), or end().
  NodeMap::const_iterator NodeFor(StreamID id) const;
  void EraseNode(NodeMap::iterator it);

  NodeMap nodes_;
  size_t length_ = 0;
  StreamID last_id_;
  StreamID max_deleted_;
  uint64_t entries_added_ = 0;
  ShardMap<ShardString, StreamGroup*, ViewLess> groups_;
};

}  // namespace shardis::core

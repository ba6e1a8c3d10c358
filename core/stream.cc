#include "core/stream.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/listpack.h"
#include "core/number.h"
#include "core/runtime_setting.h"
#include "core/sampled_bytes.h"
#include "core/varint.h"

DEFINE_uint32(stream_node_max_entries, 100,
              "Most entries (live and deleted) in one packed stream node (Redis' config)");
DEFINE_uint32(stream_node_max_bytes, 4096, "Most bytes in one packed stream node (Redis' config)");

namespace shardis::core {

namespace {

// The flags' values are copied in at start (ApplyConfigFlags), then CONFIG SET writes them.
RuntimeSetting<size_t> g_stream_node_max_entries{100};
RuntimeSetting<size_t> g_stream_node_max_bytes{4096};

}  // namespace

size_t StreamNodeMaxEntries() { return g_stream_node_max_entries.get(); }
size_t StreamNodeMaxBytesSetting() { return g_stream_node_max_bytes.get(); }
// As Redis: 0 (or more than its 1 GiB listpack limit) means the limit.
size_t StreamNodeMaxBytes() {
  constexpr size_t kMax = size_t(1) << 30;
  const size_t v = StreamNodeMaxBytesSetting();
  return v == 0 || v > kMax ? kMax : v;
}
void SetStreamNodeMaxEntries(size_t n) { g_stream_node_max_entries.set(n); }
void SetStreamNodeMaxBytes(size_t n) { g_stream_node_max_bytes.set(n); }

// ---- IDs

bool StreamID::Incr() {
  if (seq == UINT64_MAX) {
    if (ms == UINT64_MAX) return false;
    ++ms;
    seq = 0;
  } else {
    ++seq;
  }
  return true;
}

bool StreamID::Decr() {
  if (seq == 0) {
    if (ms == 0) return false;
    --ms;
    seq = UINT64_MAX;
  } else {
    --seq;
  }
  return true;
}

std::string StreamID::ToString() const {
  char buf[48];
  int n = snprintf(buf, sizeof(buf), "%llu-%llu", static_cast<unsigned long long>(ms),
                   static_cast<unsigned long long>(seq));
  return std::string(buf, size_t(n));
}

namespace {

// Redis' string2ull: string2ll first (negative values refused), then strtoull over the whole
// NUL-terminated string.
bool ParseU64Redis(const char* s, size_t len, uint64_t* out) {
  int64_t ll;
  if (ParseInt64(std::string_view(s, len), &ll)) {
    if (ll < 0) return false;
    *out = uint64_t(ll);
    return true;
  }
  if (len == 0) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == EINVAL || errno == ERANGE || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

bool ParseStreamID(std::string_view s, uint64_t missing_seq, bool strict, StreamID* out,
                   bool* seq_given) {
  char buf[128];
  if (s.size() > sizeof(buf) - 1) return false;
  memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  // Redis works on the C string: an embedded NUL ends it.
  size_t len = strlen(buf);
  if (strict && len == 1 && (buf[0] == '-' || buf[0] == '+')) return false;
  if (seq_given != nullptr) *seq_given = true;
  if (len == 1 && buf[0] == '-') {
    *out = StreamID::Min();
    return true;
  }
  if (len == 1 && buf[0] == '+') {
    *out = StreamID::Max();
    return true;
  }
  char* dash = strchr(buf, '-');
  size_t ms_len = dash ? size_t(dash - buf) : len;
  if (dash) *dash = '\0';
  uint64_t ms, seq;
  if (!ParseU64Redis(buf, ms_len, &ms)) return false;
  if (dash) {
    const char* rest = dash + 1;
    size_t rest_len = strlen(rest);
    if (seq_given != nullptr && rest_len == 1 && rest[0] == '*') {
      seq = 0;
      *seq_given = false;
    } else if (!ParseU64Redis(rest, rest_len, &seq)) {
      return false;
    }
  } else {
    seq = missing_seq;
  }
  *out = StreamID{ms, seq};
  return true;
}

// ---- Packed nodes

namespace {

constexpr uint8_t kSameFields = 1;

void AppendVarint(ShardString* b, uint64_t v) {
  char tmp[10];
  b->append(tmp, core::PutVarint(tmp, v) - tmp);
}

uint64_t ReadVarint(const char* p, size_t* pos) {
  uint64_t v;
  *pos = core::GetVarint(p + *pos, &v) - p;
  return v;
}

std::string_view GetString(const char* p, size_t* pos) {
  size_t n = ReadVarint(p, pos);
  std::string_view s(p + *pos, n);
  *pos += n;
  return s;
}

void PutString(ShardString* b, std::string_view s) {
  AppendVarint(b, s.size());
  b->append(s.data(), s.size());
}

// ---- The size Redis' listpack would have (its node-size limit counts those bytes)

size_t LpIntSize(int64_t v) { return ListpackBuilder::IntEntrySize(v); }
// A string that reads as an integer (string2ll) is stored as one.
size_t LpStringSize(std::string_view s) { return ListpackBuilder::EntrySize(s); }

}  // namespace

struct Stream::Node {
  StreamID master;
  StreamID last;         // the last entry ever appended (Redis keeps it, flagged, when deleted)
  bool last_live = false;  // and it is still there (then it is the node's last live entry)
  uint32_t count = 0;    // live entries
  uint32_t deleted = 0;  // entries removed since the node was created
  uint32_t header = 0;   // bytes of the master field names at the start of buf
  // What Redis' listpack for this node would weigh, without its live/deleted counters: Redis
  // starts a new node when that reaches --stream_node_max_bytes, so ours split where its do.
  // Deletes only flag entries in Redis, so this never shrinks.
  uint64_t lp_bytes = 0;
  ShardString buf;

  uint64_t LpBytes() const { return lp_bytes + LpIntSize(count) + LpIntSize(deleted); }

  // The master field names.
  void MasterFields(std::vector<std::string_view>* out) const {
    out->clear();
    size_t pos = 0;
    size_t n = ReadVarint(buf.data(), &pos);
    for (size_t i = 0; i < n; ++i) out->push_back(GetString(buf.data(), &pos));
  }

  // Decodes the entry at *pos (advanced past it). fv receives field/value views; master fields
  // are passed in (decoded once per walk).
  StreamID Decode(size_t* pos, const std::vector<std::string_view>& master_fields,
                  std::vector<std::string_view>* fv) const {
    const char* p = buf.data();
    StreamID id;
    id.ms = master.ms + ReadVarint(p, pos);
    id.seq = ReadVarint(p, pos);
    uint8_t flags = uint8_t(p[(*pos)++]);
    size_t n = ReadVarint(p, pos);
    if (fv) fv->clear();
    for (size_t i = 0; i < n; ++i) {
      std::string_view f = (flags & kSameFields) ? master_fields[i] : GetString(p, pos);
      std::string_view v = GetString(p, pos);
      if (fv) {
        fv->push_back(f);
        fv->push_back(v);
      }
    }
    return id;
  }

  // Offsets of every entry, in order (for reverse walks and deletes).
  void Offsets(std::vector<size_t>* out, const std::vector<std::string_view>& mf) const {
    out->clear();
    size_t pos = header;
    while (pos < buf.size()) {
      out->push_back(pos);
      Decode(&pos, mf, nullptr);
    }
  }
};

Stream::~Stream() {
  for (auto& [id, node] : nodes_) ShardDelete(node);
  for (auto& [name, g] : groups_) ShardDelete(g);
}

namespace {

// A std::map node: the tree's links and colour (32 bytes in libstdc++) and the pair it holds.
template <typename Map>
size_t MapNodeBytes() {
  return ShardHeap::GoodSize(32 + sizeof(typename Map::value_type));
}

// The heap block of a string, if it is too long for the string's own buffer.
size_t StringHeapBytes(const ShardString& s) {
  constexpr size_t kInlineCapacity = 15;  // libstdc++'s short-string buffer
  return s.capacity() > kInlineCapacity ? ShardHeap::GoodSize(s.capacity() + 1) : 0;
}

}  // namespace

size_t Stream::MallocBytes(size_t samples) const {
  SampledBytes nodes(samples, nodes_.size());
  for (auto it = nodes_.begin(); it != nodes_.end() && !nodes.Done(); ++it) {
    nodes.Add(MapNodeBytes<NodeMap>() + ShardHeap::UsableSize(it->second) +
              StringHeapBytes(it->second->buf));
  }
  size_t bytes = nodes.Total();
  using PelMap = decltype(StreamGroup::pel);
  const size_t nack_bytes = MapNodeBytes<PelMap>() + ShardHeap::GoodSize(sizeof(StreamNack));
  for (const auto& [name, g] : groups_) {
    bytes += MapNodeBytes<decltype(groups_)>() + StringHeapBytes(name) + ShardHeap::UsableSize(g) +
             g->pel.size() * nack_bytes;
    SampledBytes consumers(samples, g->consumers.size());
    for (auto it = g->consumers.begin(); it != g->consumers.end() && !consumers.Done(); ++it) {
      const StreamConsumer* c = it->second;
      consumers.Add(MapNodeBytes<decltype(g->consumers)>() + StringHeapBytes(it->first) +
                    ShardHeap::UsableSize(c) + StringHeapBytes(c->name) +
                    c->pel.size() * MapNodeBytes<PelMap>());
    }
    bytes += consumers.Total();
  }
  return bytes;
}

StreamID Stream::first_id() const {
  if (length_ == 0) return StreamID{};
  StreamID first;
  Range(StreamID::Min(), StreamID::Max(), false, [&](StreamID id, const FieldValues&) {
    first = id;
    return false;
  });
  return first;
}

StreamID Stream::last_valid_id() const {
  if (length_ == 0) return StreamID{};
  // XREAD asks on every call: answer without decoding unless the tail entry was deleted.
  const Node* tail = nodes_.rbegin()->second;
  if (tail->last_live) return tail->last;
  StreamID last;
  Range(StreamID::Min(), StreamID::Max(), true, [&](StreamID id, const FieldValues&) {
    last = id;
    return false;
  });
  return last;
}

void Stream::Append(StreamID id, const std::vector<std::string_view>& fv) {
  DCHECK(fv.size() % 2 == 0);
  size_t nfields = fv.size() / 2;
  size_t raw_bytes = 0;  // Redis' totelelen
  for (std::string_view s : fv) raw_bytes += s.size();
  Node* node = nodes_.empty() ? nullptr : nodes_.rbegin()->second;
  const size_t max_entries = StreamNodeMaxEntries();  // 0: no limit, as in Redis
  if (node != nullptr && (node->LpBytes() + raw_bytes >= StreamNodeMaxBytes() ||
                          (max_entries && node->count + node->deleted >= max_entries))) {
    node = nullptr;
  }
  if (node == nullptr) {
    node = ShardNew<Node>();
    node->master = id;
    AppendVarint(&node->buf, nfields);
    // Listpack header and end byte, then the master entry: count and deleted (in LpBytes),
    // the number of fields, the field names, a zero terminator.
    node->lp_bytes = 7 + LpIntSize(int64_t(nfields)) + LpIntSize(0);
    for (size_t i = 0; i < nfields; ++i) {
      PutString(&node->buf, fv[2 * i]);
      node->lp_bytes += LpStringSize(fv[2 * i]);
    }
    node->header = uint32_t(node->buf.size());
    nodes_.emplace(id, node);
  }
  std::vector<std::string_view> mf;
  node->MasterFields(&mf);
  bool same = mf.size() == nfields;
  for (size_t i = 0; same && i < nfields; ++i) same = mf[i] == fv[2 * i];
  AppendVarint(&node->buf, id.ms - node->master.ms);
  AppendVarint(&node->buf, id.seq);
  node->buf.push_back(char(same ? kSameFields : 0));
  AppendVarint(&node->buf, nfields);
  for (size_t i = 0; i < nfields; ++i) {
    if (!same) PutString(&node->buf, fv[2 * i]);
    PutString(&node->buf, fv[2 * i + 1]);
  }
  // Redis' entry: flags, ms and seq deltas, [field count], [fields], values, lp-count.
  uint64_t lp = LpIntSize(same ? 2 : 0) + LpIntSize(int64_t(id.ms - node->master.ms)) +
                LpIntSize(int64_t(id.seq - node->master.seq));
  for (size_t i = 0; i < nfields; ++i) {
    if (!same) lp += LpStringSize(fv[2 * i]);
    lp += LpStringSize(fv[2 * i + 1]);
  }
  int64_t lp_count = int64_t(nfields) + 3;
  if (!same) {
    lp += LpIntSize(int64_t(nfields));
    lp_count += int64_t(nfields) + 1;
  }
  node->lp_bytes += lp + LpIntSize(lp_count);
  ++node->count;
  node->last = id;
  node->last_live = true;
  ++length_;
  ++entries_added_;
  last_id_ = id;
}

Stream::NodeMap::const_iterator Stream::NodeFor(StreamID id) const {
  auto it = nodes_.upper_bound(id);
  if (it == nodes_.begin()) return nodes_.end();
  return std::prev(it);
}

void Stream::Range(StreamID start, StreamID end, bool rev, EntryFn fn) const {
  if (start > end || nodes_.empty()) return;
  std::vector<std::string_view> mf;
  FieldValues fv;
  if (!rev) {
    auto it = NodeFor(start);
    if (it == nodes_.end()) it = nodes_.begin();
    for (; it != nodes_.end() && it->first <= end; ++it) {
      const Node* node = it->second;
      node->MasterFields(&mf);
      size_t pos = node->header;
      while (pos < node->buf.size()) {
        StreamID id = node->Decode(&pos, mf, &fv);
        if (id < start) continue;
        if (id > end) return;
        if (!fn(id, fv)) return;
      }
    }
    return;
  }
  auto it = NodeFor(end);
  if (it == nodes_.end()) return;
  std::vector<size_t> offsets;
  while (true) {
    const Node* node = it->second;
    node->MasterFields(&mf);
    node->Offsets(&offsets, mf);
    for (size_t k = offsets.size(); k-- > 0;) {
      size_t pos = offsets[k];
      StreamID id = node->Decode(&pos, mf, &fv);
      if (id > end) continue;
      if (id < start) return;
      if (!fn(id, fv)) return;
    }
    if (it == nodes_.begin()) return;
    --it;
  }
}

bool Stream::Contains(StreamID id) const {
  bool found = false;
  Range(id, id, false, [&](StreamID, const FieldValues&) {
    found = true;
    return false;
  });
  return found;
}

void Stream::EraseNode(NodeMap::iterator it) {
  ShardDelete(it->second);
  nodes_.erase(it);
}

bool Stream::Delete(StreamID id) {
  auto cit = NodeFor(id);
  if (cit == nodes_.end()) return false;
  auto it = nodes_.find(cit->first);
  Node* node = it->second;
  std::vector<std::string_view> mf;
  node->MasterFields(&mf);
  size_t pos = node->header;
  while (pos < node->buf.size()) {
    size_t begin = pos;
    StreamID cur = node->Decode(&pos, mf, nullptr);
    if (cur > id) return false;
    if (cur == id) {
      --length_;
      if (cur == node->last) node->last_live = false;
      if (--node->count == 0) {
        EraseNode(it);
      } else {
        node->buf.erase(begin, pos - begin);
        ++node->deleted;
      }
      return true;
    }
  }
  return false;
}

int64_t Stream::Trim(int64_t maxlen, StreamID minid, bool approx, int64_t limit) {
  const bool by_len = maxlen >= 0;
  int64_t removed = 0;
  std::vector<std::string_view> mf;
  while (!nodes_.empty()) {
    if (by_len && int64_t(length_) <= maxlen) break;
    auto it = nodes_.begin();
    Node* node = it->second;
    int64_t entries = node->count;
    if (limit && removed + entries > limit) break;
    node->MasterFields(&mf);
    bool remove_node;
    if (by_len) {
      remove_node = int64_t(length_) - entries >= maxlen;
    } else {
      // The node's last ID (deleted or not, as Redis reads it from its listpack) is below minid.
      remove_node = node->last < minid;
    }
    if (remove_node) {
      length_ -= size_t(entries);
      removed += entries;
      EraseNode(it);
      continue;
    }
    if (approx) break;
    // Remove entries from the front of this node, then stop: what remains is to keep.
    size_t pos = node->header;
    size_t cut_end = pos;
    int64_t from_node = 0;
    while (pos < node->buf.size()) {
      size_t next = pos;
      StreamID id = node->Decode(&next, mf, nullptr);
      bool stop = by_len ? int64_t(length_) <= maxlen : id >= minid;
      if (stop) break;
      pos = cut_end = next;
      --length_;
      ++from_node;
    }
    node->buf.erase(node->header, cut_end - node->header);
    node->count -= uint32_t(from_node);
    node->deleted += uint32_t(from_node);
    removed += from_node;
    break;
  }
  return removed;
}

bool Stream::RangeHasTombstones(StreamID start, StreamID end) const {
  if (length_ == 0 || max_deleted_.IsZero()) return false;
  if (first_id() > max_deleted_) return false;
  return start <= max_deleted_ && max_deleted_ <= end;
}

int64_t Stream::EstimateDistanceFromFirstEverEntry(StreamID id) const {
  if (entries_added_ == 0) return 0;
  if (length_ == 0 && id <= last_id_) return int64_t(entries_added_);
  if (id == last_id_) return int64_t(entries_added_);
  if (id > last_id_) return StreamGroup::kInvalidEntriesRead;
  StreamID first = first_id();
  if (max_deleted_.IsZero() || max_deleted_ < first) {
    if (id < first) return int64_t(entries_added_ - length_);
    if (id == first) return int64_t(entries_added_ - length_ + 1);
  }
  return StreamGroup::kInvalidEntriesRead;
}

// ---- Groups

StreamGroup::~StreamGroup() {
  for (auto& [id, nack] : pel) ShardDelete(nack);
  for (auto& [name, c] : consumers) ShardDelete(c);
}

StreamConsumer* StreamGroup::FindConsumer(std::string_view name) const {
  auto it = consumers.find(name);
  return it == consumers.end() ? nullptr : it->second;
}

StreamConsumer* StreamGroup::GetOrCreateConsumer(std::string_view name, int64_t now_ms,
                                                 bool* created) {
  auto it = consumers.find(name);
  *created = it == consumers.end();
  if (!*created) return it->second;
  StreamConsumer* c = ShardNew<StreamConsumer>();
  c->name.assign(name.data(), name.size());
  c->seen_time = now_ms;
  consumers.emplace(c->name, c);
  return c;
}

size_t StreamGroup::DeleteConsumer(std::string_view name) {
  auto it = consumers.find(name);
  if (it == consumers.end()) return 0;
  StreamConsumer* c = it->second;
  size_t pending = c->pel.size();
  for (auto& [id, nack] : c->pel) {
    pel.erase(id);
    ShardDelete(nack);
  }
  consumers.erase(it);
  ShardDelete(c);
  return pending;
}

bool StreamGroup::Ack(StreamID id) {
  auto it = pel.find(id);
  if (it == pel.end()) return false;
  StreamNack* nack = it->second;
  nack->consumer->pel.erase(id);
  pel.erase(it);
  ShardDelete(nack);
  return true;
}

StreamNack* StreamGroup::Assign(StreamID id, StreamConsumer* c, int64_t now_ms) {
  auto it = pel.find(id);
  StreamNack* nack;
  if (it == pel.end()) {
    nack = ShardNew<StreamNack>();
    nack->delivery_count = 1;
    pel.emplace(id, nack);
  } else {
    nack = it->second;
    if (nack->consumer != c) nack->consumer->pel.erase(id);
  }
  nack->delivery_time = now_ms;
  nack->consumer = c;
  c->pel[id] = nack;
  return nack;
}

StreamGroup* Stream::FindGroup(std::string_view name) const {
  auto it = groups_.find(name);
  return it == groups_.end() ? nullptr : it->second;
}

StreamGroup* Stream::CreateGroup(std::string_view name, StreamID last_id, int64_t entries_read) {
  if (groups_.find(name) != groups_.end()) return nullptr;
  StreamGroup* g = ShardNew<StreamGroup>();
  g->last_id = last_id;
  g->entries_read = entries_read;
  groups_.emplace(ShardString(name.data(), name.size()), g);
  return g;
}

bool Stream::DestroyGroup(std::string_view name) {
  auto it = groups_.find(name);
  if (it == groups_.end()) return false;
  ShardDelete(it->second);
  groups_.erase(it);
  return true;
}

size_t Stream::SparseBlocks(const SparsePages& pages) const {
  size_t n = 0;
  // A map entry lives inside its map node's block; a short buffer lives inside the node.
  for (const auto& entry : nodes_) {
    const Node* node = entry.second;
    n += pages.Contains(&entry) + pages.Contains(node) + pages.Contains(node->buf.data());
  }
  return n;
}

Stream* Stream::Clone() const {
  Stream* s = ShardNew<Stream>();
  for (const auto& [id, node] : nodes_) {
    Node* n = ShardNew<Node>();
    n->master = node->master;
    n->last = node->last;
    n->last_live = node->last_live;
    n->count = node->count;
    n->deleted = node->deleted;
    n->header = node->header;
    n->lp_bytes = node->lp_bytes;
    n->buf = node->buf;
    s->nodes_.emplace(id, n);
  }
  s->length_ = length_;
  s->last_id_ = last_id_;
  s->max_deleted_ = max_deleted_;
  s->entries_added_ = entries_added_;
  for (const auto& [name, g] : groups_) {
    StreamGroup* ng = s->CreateGroup(name, g->last_id, g->entries_read);
    for (const auto& [cname, c] : g->consumers) {
      bool created;
      StreamConsumer* nc = ng->GetOrCreateConsumer(cname, c->seen_time, &created);
      nc->active_time = c->active_time;
      for (const auto& [id, nack] : c->pel) {
        StreamNack* nn = ng->Assign(id, nc, nack->delivery_time);
        nn->delivery_count = nack->delivery_count;
      }
    }
  }
  return s;
}

}  // namespace shardis::core

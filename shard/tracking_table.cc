#include "shard/tracking_table.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "io/proactor.h"

namespace shardis::shard {

namespace {

thread_local CommandClient tl_command_client;
thread_local InvalidationCapture* tl_capture = nullptr;
TrackingDeliverer g_deliverer = nullptr;

// Totals over every shard: INFO's tracking_total_* and the limit's count. Prefixes are counted
// by shard 0 alone (every shard holds a copy of each).
std::atomic<size_t> g_keys{0};
std::atomic<size_t> g_items{0};
std::atomic<size_t> g_prefixes{0};
// Redis' default tracking-table-max-keys.
std::atomic<size_t> g_max_keys{1'000'000};

void DeliverTask(void* arg) {
  auto* m = static_cast<TrackingMessage*>(arg);
  if (g_deliverer != nullptr) {
    g_deliverer(m);
  } else {
    delete m;
  }
}

// To the reader's thread: inline when it is this one, else as a message.
void Send(uint32_t thread, TrackingMessage* m) {
  io::Proactor* self = io::Proactor::current();
  if (self == nullptr || self->index() == thread) {
    DeliverTask(m);
  } else {
    self->Post(thread, io::Task{&DeliverTask, m});
  }
}

}  // namespace

CommandClient& CurrentCommandClient() { return tl_command_client; }

InvalidationCapture::InvalidationCapture(uint64_t client_id) : client_id_(client_id) {
  tl_capture = this;
}
InvalidationCapture::~InvalidationCapture() { tl_capture = nullptr; }
void SetTrackingDeliverer(TrackingDeliverer deliver) { g_deliverer = deliver; }

size_t TrackedKeysTotal() { return g_keys.load(std::memory_order_relaxed); }
size_t TrackedItemsTotal() { return g_items.load(std::memory_order_relaxed); }
size_t TrackedPrefixesTotal() { return g_prefixes.load(std::memory_order_relaxed); }
size_t TrackingTableMaxKeys() { return g_max_keys.load(std::memory_order_relaxed); }
void SetTrackingTableMaxKeys(size_t max_keys) {
  g_max_keys.store(max_keys, std::memory_order_relaxed);
}

TrackingTable::~TrackingTable() {
  for (const auto& [key, readers] : keys_) g_items.fetch_sub(readers.size());
  g_keys.fetch_sub(keys_.size());
  if (shard_id_ == 0) g_prefixes.fetch_sub(prefixes_.size());
}

void TrackingTable::Remember(std::string_view key, const TrackedReader& reader) {
  auto [it, inserted] = keys_.try_emplace(key);
  if (inserted) g_keys.fetch_add(1, std::memory_order_relaxed);
  Readers& readers = it->second;
  for (const TrackedReader& r : readers) {
    if (r.client_id == reader.client_id) return;
  }
  readers.push_back(reader);
  g_items.fetch_add(1, std::memory_order_relaxed);
  if (inserted && TrackingTableMaxKeys() != 0 && TrackedKeysTotal() > TrackingTableMaxKeys())
      [[unlikely]] {
    EnforceLimit();
  }
}

void TrackingTable::TellReaders(
    absl::flat_hash_map<std::string, Readers, core::StringHash, core::StringEq>::iterator it,
    uint64_t writer_id, bool claimed) {
  for (const TrackedReader& r : it->second) {
    if (tl_capture != nullptr && tl_capture->client_id_ == r.client_id) [[unlikely]] {
      tl_capture->keys_.push_back(it->first);
      continue;
    }
    auto* m = new TrackingMessage{r.client_id, writer_id, /*bcast=*/false, {it->first}};
    Send(r.thread, m);
  }
  g_items.fetch_sub(it->second.size(), std::memory_order_relaxed);
  if (!claimed) g_keys.fetch_sub(1, std::memory_order_relaxed);
  keys_.erase(it);
}

void TrackingTable::Invalidate(std::string_view key, uint64_t writer_id) {
  if (!prefixes_.empty()) NoteForBroadcast(key, writer_id);
  if (keys_.empty()) return;
  auto it = keys_.find(key);
  if (it != keys_.end()) TellReaders(it, writer_id, /*claimed=*/false);
}

void TrackingTable::ForgetAllKeys() {
  for (const auto& [key, readers] : keys_) {
    g_items.fetch_sub(readers.size(), std::memory_order_relaxed);
  }
  g_keys.fetch_sub(keys_.size(), std::memory_order_relaxed);
  keys_.clear();
}

void TrackingTable::NoteForBroadcast(std::string_view key, uint64_t writer_id) {
  for (Prefix& p : prefixes_) {
    if (!key.starts_with(p.prefix)) continue;
    p.pending.insert_or_assign(key, writer_id);
    if (!pending_broadcasts_ && flush_nap_ != nullptr) flush_nap_->Wake();
    pending_broadcasts_ = true;
  }
}

void TrackingTable::AddPrefix(std::string_view prefix, const TrackedReader& reader, bool noloop) {
  auto it = std::find_if(prefixes_.begin(), prefixes_.end(),
                         [&](const Prefix& p) { return p.prefix == prefix; });
  if (it == prefixes_.end()) {
    prefixes_.push_back(Prefix{std::string(prefix), {}, {}});
    it = prefixes_.end() - 1;
    if (shard_id_ == 0) g_prefixes.fetch_add(1, std::memory_order_relaxed);
  }
  for (Subscriber& s : it->subscribers) {
    if (s.reader.client_id == reader.client_id) {
      s.noloop = noloop;
      return;
    }
  }
  it->subscribers.push_back({reader, noloop});
}

void TrackingTable::RemovePrefixes(uint64_t client_id) {
  for (Prefix& p : prefixes_) {
    std::erase_if(p.subscribers,
                  [&](const Subscriber& s) { return s.reader.client_id == client_id; });
  }
  const size_t before = prefixes_.size();
  std::erase_if(prefixes_, [](const Prefix& p) { return p.subscribers.empty(); });
  if (shard_id_ == 0) g_prefixes.fetch_sub(before - prefixes_.size(), std::memory_order_relaxed);
}

bool TrackingTable::FlushBroadcasts() {
  if (!pending_broadcasts_) return false;
  pending_broadcasts_ = false;
  for (Prefix& p : prefixes_) {
    if (p.pending.empty()) continue;
    for (const Subscriber& s : p.subscribers) {
      auto* m = new TrackingMessage{s.reader.client_id, 0, /*bcast=*/true, {}};
      m->keys.reserve(p.pending.size());
      for (const auto& [key, writer] : p.pending) {
        // NOLOOP: not the keys whose last write was the subscriber's own.
        if (s.noloop && writer == s.reader.client_id) continue;
        m->keys.push_back(key);
      }
      if (m->keys.empty()) {
        delete m;
        continue;
      }
      Send(s.reader.thread, m);
    }
    p.pending.clear();
  }
  return true;
}

void TrackingTable::EnforceLimit() {
  // Each removal claims one key of the total first, so that shards trimming at the same time
  // stop exactly at the limit together.
  while (!keys_.empty()) {
    const size_t max_keys = TrackingTableMaxKeys();
    if (max_keys == 0) return;
    size_t total = TrackedKeysTotal();
    if (total <= max_keys) return;
    if (!g_keys.compare_exchange_weak(total, total - 1, std::memory_order_relaxed)) continue;
    // As Redis: the readers hear of it as if the key had changed (writer: nobody).
    TellReaders(keys_.begin(), 0, /*claimed=*/true);
  }
}

}  // namespace shardis::shard

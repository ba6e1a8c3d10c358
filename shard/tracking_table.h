// TrackingTable: one shard's side of client-side caching (CLIENT TRACKING, Redis' tracking.c).
//
// Default mode: a read-only command of a tracking client remembers its keys here, on the shard
// that owns them, while it reads them (so no write can slip in between). A write to a remembered
// key sends one invalidation to every client that read it and forgets them (they read it again
// to be told again). BCAST mode: every shard holds a copy of every prefix a client subscribed to;
// keys written under a prefix collect here and go out together once the loop comes round
// (FlushBroadcasts), as Redis sends them before it sleeps.
//
// Nothing is shared: a shard only ever touches its own table. Invalidations travel to the
// tracking client's thread as messages (io::Proactor::Post), where the server delivers them
// (SetTrackingDeliverer). Only the totals that INFO and tracking-table-max-keys need are atomic.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/string_util.h"
#include "io/proactor.h"

namespace shardis::shard {

class HandedOffWork;

// A tracking client, as the shards know it: enough to reach it.
struct TrackedReader {
  uint64_t client_id = 0;
  uint32_t thread = 0;
  bool redirected = false;  // its invalidations go to another client (CLIENT TRACKING REDIRECT)
};

// Who the command running now on this thread runs for: its client (0: none, e.g. expiry), and
// the client's reader when the command's reads are to be remembered. Set by the connection for
// its commands and carried by transactions to their shards. Inline (loop) code on a shard sees
// the value of the command it runs for; a fiber sets it right before what reads it, as another
// fiber may change it while this one waits.
struct CommandClient {
  uint64_t id = 0;
  const TrackedReader* reader = nullptr;
  // CLIENT NO-TOUCH: the command's lookups leave the keys' access clocks alone (Db::Touch).
  bool no_touch = false;
  // The work its commands hand to other clients (the moves its writes hand to blocked BLMOVE
  // clients, blocking.h) is counted here; the client waits for it.
  HandedOffWork* handed_off = nullptr;
};
CommandClient& CurrentCommandClient();
class CommandClientScope {
 public:
  explicit CommandClientScope(CommandClient client) : saved_(CurrentCommandClient()) {
    CurrentCommandClient() = client;
  }
  ~CommandClientScope() { CurrentCommandClient() = saved_; }
  CommandClientScope(const CommandClientScope&) = delete;
  CommandClientScope& operator=(const CommandClientScope&) = delete;

 private:
  CommandClient saved_;
};

// While one lives on this thread, the invalidations of remembered keys for client `client_id`
// are collected into keys() instead of sent: the keys a shard evicts before a command of that
// client, which the command's reply carries ahead of itself, as Redis sends them before the reply
// (the eviction comes first). Nests not; only the owning shard's code runs meanwhile.
class InvalidationCapture {
 public:
  explicit InvalidationCapture(uint64_t client_id);
  ~InvalidationCapture();
  InvalidationCapture(const InvalidationCapture&) = delete;
  InvalidationCapture& operator=(const InvalidationCapture&) = delete;
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  friend class TrackingTable;
  uint64_t client_id_;
  std::vector<std::string> keys_;
};

// What a shard sends to a tracking client's thread.
struct TrackingMessage {
  uint64_t client_id = 0;  // the tracking client
  uint64_t writer_id = 0;  // the client whose write it was (NOLOOP), 0 for none
  bool bcast = false;      // from a prefix (BCAST mode), else from remembered keys
  std::vector<std::string> keys;
};
// The server's delivery of a message, on the tracking client's thread (it owns and frees m).
using TrackingDeliverer = void (*)(TrackingMessage* m);
void SetTrackingDeliverer(TrackingDeliverer deliver);

// Process-wide figures (INFO) and the limit on remembered keys (tracking-table-max-keys).
size_t TrackedKeysTotal();
size_t TrackedItemsTotal();
size_t TrackedPrefixesTotal();
size_t TrackingTableMaxKeys();
void SetTrackingTableMaxKeys(size_t max_keys);

class TrackingTable {
 public:
  TrackingTable() = default;
  ~TrackingTable();
  TrackingTable(const TrackingTable&) = delete;
  TrackingTable& operator=(const TrackingTable&) = delete;

  void set_shard(uint32_t id) { shard_id_ = id; }
  // Whether writes must report to the table: it remembers keys or holds prefixes.
  bool active() const { return !keys_.empty() || !prefixes_.empty(); }

  // reader read key (default mode).
  void Remember(std::string_view key, const TrackedReader& reader);
  // key changed (by writer_id's command; 0: expiry, eviction): its readers are told and
  // forgotten, and the key joins the broadcasts of the prefixes it falls under.
  void Invalidate(std::string_view key, uint64_t writer_id);
  // FLUSHALL/FLUSHDB: forgets every remembered key (the server tells every tracking client).
  void ForgetAllKeys();

  // BCAST: reader follows the keys that start with prefix ("" = every key); noloop: not the
  // keys it wrote itself.
  void AddPrefix(std::string_view prefix, const TrackedReader& reader, bool noloop);
  // Drops every prefix subscription of the client.
  void RemovePrefixes(uint64_t client_id);
  // Sends the keys collected under each prefix since the last call. Returns whether any were.
  bool FlushBroadcasts();
  // The sleep of the shard's fiber that calls FlushBroadcasts and EnforceLimit (ShardSet, which
  // owns it): a broadcast key cuts it short, so the keys go out once the loop has run what is
  // ready now.
  void set_flush_nap(io::Proactor::Nap* nap) { flush_nap_ = nap; }

  // Over tracking-table-max-keys (all shards together): forgets remembered keys of this shard,
  // telling their readers, until the total is back under the limit or this shard has none left.
  void EnforceLimit();

 private:
  using Readers = absl::InlinedVector<TrackedReader, 2>;
  struct Subscriber {
    TrackedReader reader;
    bool noloop = false;
  };
  struct Prefix {
    std::string prefix;
    std::vector<Subscriber> subscribers;
    // Keys written under the prefix since the last flush, with their last writer (NOLOOP).
    absl::flat_hash_map<std::string, uint64_t, core::StringHash, core::StringEq> pending;
  };

  // Sends an invalidation of the key to each of its readers, then forgets it. `claimed`: the
  // key was already taken off the total (EnforceLimit).
  void TellReaders(
      absl::flat_hash_map<std::string, Readers, core::StringHash, core::StringEq>::iterator it,
      uint64_t writer_id, bool claimed);
  void NoteForBroadcast(std::string_view key, uint64_t writer_id);

  uint32_t shard_id_ = 0;
  absl::flat_hash_map<std::string, Readers, core::StringHash, core::StringEq> keys_;
  std::vector<Prefix> prefixes_;
  bool pending_broadcasts_ = false;
  io::Proactor::Nap* flush_nap_ = nullptr;
};

}  // namespace shardis::shard

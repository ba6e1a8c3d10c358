// Keyspace notifications (Redis' notify.c): a write, an expiry or an eviction publishes
//   __keyspace@<db>__:<key>    -> <event>
//   __keyevent@<db>__:<event>  -> <key>
// to the pub/sub subscribers of every thread, for the event classes notify-keyspace-events
// selects.
//
// Cost when the setting is empty: each thread keeps its own copy of the selected classes, so a
// NotifyKeyspaceEvent call is one thread-local load and one branch; nothing is built. When a
// class is on, the owning shard builds the two messages once and posts them to every other thread
// as one task per thread (Proactor::Post: never blocks, FIFO per pair of threads), and publishes
// them on its own thread inline (threads whose connections subscribe to nothing are skipped).
// Every event of a key starts on the key's shard, so each
// subscriber thread receives a key's events in the order they happened. On another thread they
// are delivered after the input that reached it before them (Proactor::RunAfterArrivedInput), as
// PUBLISH's messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardis::shard {

// Redis' NOTIFY_* classes, with its bit values.
enum KeyspaceEventClass : uint32_t {
  kNotifyKeyspace = 1 << 0,  // K: publish on __keyspace@<db>__:<key>
  kNotifyKeyevent = 1 << 1,  // E: publish on __keyevent@<db>__:<event>
  kNotifyGeneric = 1 << 2,   // g: DEL, EXPIRE, RENAME, ...
  kNotifyString = 1 << 3,    // $
  kNotifyList = 1 << 4,      // l
  kNotifySet = 1 << 5,       // s
  kNotifyHash = 1 << 6,      // h
  kNotifyZset = 1 << 7,      // z
  kNotifyExpired = 1 << 8,   // x
  kNotifyEvicted = 1 << 9,   // e
  kNotifyStream = 1 << 10,   // t
  kNotifyKeyMiss = 1 << 11,  // m: not part of A
  kNotifyModule = 1 << 13,   // d: accepted and shown; no module emits it here
  kNotifyNew = 1 << 14,      // n: a key was created; not part of A
  // A: every class but m and n.
  kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet | kNotifyHash |
               kNotifyZset | kNotifyExpired | kNotifyEvicted | kNotifyStream | kNotifyModule,
};

namespace internal {
extern constinit thread_local uint32_t tl_keyspace_events;  // this thread's copy of the setting
void PublishKeyspaceEvent(uint32_t type, std::string_view event, std::string_view key, int db);
}  // namespace internal

// Publishes the event `event` of `key` in database `db` when its class `type` is selected. Call
// on the shard thread that owns the key.
inline void NotifyKeyspaceEvent(uint32_t type, std::string_view event, std::string_view key,
                                int db) {
  if (internal::tl_keyspace_events & type) [[unlikely]] {
    internal::PublishKeyspaceEvent(type, event, key, db);
  }
}

// Redis' keyspaceEventsStringToFlags: nullopt for a character that names no class.
std::optional<uint32_t> ParseKeyspaceEvents(std::string_view classes);
// Redis' keyspaceEventsFlagsToString: CONFIG GET's form ("AKE", "g$xKE", ...).
std::string FormatKeyspaceEvents(uint32_t flags);

// The setting. SetKeyspaceEvents copies it to every thread (from a fiber once the shards run;
// before, the shards take it when they start).
uint32_t KeyspaceEvents();
void SetKeyspaceEvents(uint32_t flags);
// Called by each shard thread when it starts: takes its copy of the setting.
void LoadKeyspaceEventsOnThread();

// How a thread delivers a message to its own subscribers, and whether a thread has any (pub/sub's,
// set by the server at start: shard/ does not know connections). Threads without subscribers are
// skipped; with none anywhere an event costs no more than the disabled check and a few loads.
using LocalPublisher = size_t (*)(std::string_view channel, std::string_view message);
using SubscribersCheck = bool (*)(unsigned thread);
void SetKeyspaceEventPublisher(LocalPublisher publisher, SubscribersCheck has_subscribers);

}  // namespace shardis::shard

// Keyspace notifications (see keyspace_events.h for the design).
#include "shard/keyspace_events.h"

#include <atomic>
#include <memory>
#include <vector>

#include "core/string_util.h"
#include "io/proactor.h"
#include "shard/shard_set.h"

namespace shardis::shard {

namespace internal {
constinit thread_local uint32_t tl_keyspace_events = 0;
}  // namespace internal

namespace {

// The setting as last set; the threads' copies follow it. Written by CONFIG SET (one fiber at a
// time) and at start; read when a shard thread starts.
std::atomic<uint32_t> g_keyspace_events{0};
LocalPublisher g_publisher = nullptr;
SubscribersCheck g_has_subscribers = nullptr;

// One event's messages, as they travel to another thread.
struct EventMessages {
  std::string keyspace_channel;  // empty when K is off
  std::string keyevent_channel;  // empty when E is off
  std::string event;
  std::string key;
};

void Deliver(const EventMessages& m) {
  if (!m.keyspace_channel.empty()) g_publisher(m.keyspace_channel, m.event);
  if (!m.keyevent_channel.empty()) g_publisher(m.keyevent_channel, m.key);
}

void DeliverTask(void* arg) {
  std::unique_ptr<EventMessages> messages(static_cast<EventMessages*>(arg));
  Deliver(*messages);
}

// On a subscribers' thread: delivers after the input that reached the thread before, as
// PUBLISH's deliveries do (an UNSUBSCRIBE sent before the write is in effect).
void DeliverAfterArrivedInputTask(void* arg) {
  io::Proactor::current()->RunAfterArrivedInput(io::Task{&DeliverTask, arg});
}

// Redis' class letters and their bits, in keyspaceEventsFlagsToString's order.
constexpr struct {
  char letter;
  uint32_t flag;
} kClassLetters[] = {
    {'g', kNotifyGeneric}, {'$', kNotifyString},  {'l', kNotifyList},    {'s', kNotifySet},
    {'h', kNotifyHash},    {'z', kNotifyZset},    {'x', kNotifyExpired}, {'e', kNotifyEvicted},
    {'t', kNotifyStream},  {'d', kNotifyModule},  {'n', kNotifyNew},
};

}  // namespace

void internal::PublishKeyspaceEvent(uint32_t, std::string_view event, std::string_view key,
                                    int db) {
  if (g_publisher == nullptr) return;
  // The threads to deliver to: those with subscribers; off the proactor threads (unit tests),
  // only the calling thread.
  io::Proactor* self = io::Proactor::current();
  const unsigned threads = self != nullptr ? shard_set->size() : 0;
  std::vector<unsigned> targets;
  bool here = self == nullptr || g_has_subscribers(self->index());
  for (unsigned t = 0; t < threads; ++t) {
    if (t != self->index() && g_has_subscribers(t)) targets.push_back(t);
  }
  if (!here && targets.empty()) return;
  const uint32_t flags = tl_keyspace_events;
  EventMessages m;
  m.event = event;
  m.key = key;
  if (flags & kNotifyKeyspace) m.keyspace_channel = core::Concat("__keyspace@", db, "__:", key);
  if (flags & kNotifyKeyevent) m.keyevent_channel = core::Concat("__keyevent@", db, "__:", event);
  if (m.keyspace_channel.empty() && m.keyevent_channel.empty()) return;
  for (unsigned t : targets) {
    self->Post(t, io::Task{&DeliverAfterArrivedInputTask, new EventMessages(m)});
  }
  if (here) Deliver(m);
}

std::optional<uint32_t> ParseKeyspaceEvents(std::string_view classes) {
  uint32_t flags = 0;
  for (char c : classes) {
    switch (c) {
      case 'A': flags |= kNotifyAll; continue;
      case 'K': flags |= kNotifyKeyspace; continue;
      case 'E': flags |= kNotifyKeyevent; continue;
      case 'm': flags |= kNotifyKeyMiss; continue;
      default: break;
    }
    bool known = false;
    for (const auto& [letter, flag] : kClassLetters) {
      if (c == letter) {
        flags |= flag;
        known = true;
      }
    }
    if (!known) return std::nullopt;
  }
  return flags;
}

std::string FormatKeyspaceEvents(uint32_t flags) {
  std::string text;
  if ((flags & kNotifyAll) == kNotifyAll) {
    // Redis' keyspaceEventsFlagsToString prints no other class after A, not even n (which A
    // does not include): "AKEn" reads back "AKE", though n stays on. Shown the same way.
    text.push_back('A');
  } else {
    for (const auto& [letter, flag] : kClassLetters) {
      if (flags & flag) text.push_back(letter);
    }
  }
  if (flags & kNotifyKeyspace) text.push_back('K');
  if (flags & kNotifyKeyevent) text.push_back('E');
  if (flags & kNotifyKeyMiss) text.push_back('m');
  return text;
}

uint32_t KeyspaceEvents() { return g_keyspace_events.load(std::memory_order_relaxed); }

void SetKeyspaceEvents(uint32_t flags) {
  g_keyspace_events.store(flags, std::memory_order_relaxed);
  // Before the shards run (start-up) they take the value when they start; afterwards every
  // thread updates its copy before CONFIG SET replies, so the next command sees it anywhere.
  if (shard_set == nullptr || io::Proactor::current() == nullptr) return;
  shard_set->AwaitAll([flags](Shard&) { internal::tl_keyspace_events = flags; });
}

void LoadKeyspaceEventsOnThread() {
  internal::tl_keyspace_events = g_keyspace_events.load(std::memory_order_relaxed);
}

void SetKeyspaceEventPublisher(LocalPublisher publisher, SubscribersCheck has_subscribers) {
  g_publisher = publisher;
  g_has_subscribers = has_subscribers;
}

}  // namespace shardis::shard

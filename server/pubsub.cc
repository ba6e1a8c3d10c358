// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB (see pubsub.h for the design).
#include "server/pubsub.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/glob.h"
#include "core/reply_builder.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

// One thread's subscriptions: channel (or pattern) -> the local connections subscribed to it, in
// subscription order. Only that thread touches it.
class PubSubRegistry {
 public:
  using Map = absl::flat_hash_map<std::string, std::vector<ConnectionState*>, core::StringHash,
                                  core::StringEq>;

  static PubSubRegistry& current() {
    thread_local PubSubRegistry registry;
    return registry;
  }

  Map& channels() { return channels_; }
  Map& patterns() { return patterns_; }

  static void Add(Map& map, std::string_view name, ConnectionState* c) {
    map[name].push_back(c);
  }
  static void Remove(Map& map, std::string_view name, ConnectionState* c) {
    auto it = map.find(name);
    if (it == map.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), c), list.end());
    if (list.empty()) map.erase(it);
  }

  // Delivers to this thread's subscribers of channel and of the patterns matching it; returns
  // how many deliveries were made (a client subscribed both ways receives, and counts, twice).
  size_t Publish(std::string_view channel, std::string_view message) {
    size_t receivers = 0;
    // Each message is formatted once per protocol version, when the first subscriber needs it.
    std::string formatted[2];
    auto deliver = [&](ConnectionState* c, std::string_view pattern, bool is_pattern) {
      std::string& bytes = formatted[c->resp3];
      if (bytes.empty()) {
        core::ReplyBuilder rb(&bytes);
        rb.set_resp3(c->resp3);
        rb.PushHeader(is_pattern ? 4 : 3);
        rb.Bulk(is_pattern ? "pmessage" : "message");
        if (is_pattern) rb.Bulk(pattern);
        rb.Bulk(channel);
        rb.Bulk(message);
      }
      c->push->Push(bytes);
      ++receivers;
    };
    if (auto it = channels_.find(channel); it != channels_.end()) {
      for (ConnectionState* c : it->second) deliver(c, {}, false);
    }
    for (auto& [pattern, subscribers] : patterns_) {
      if (!core::GlobMatch(pattern, channel)) continue;
      formatted[0].clear();  // pmessage names the pattern: one text per pattern
      formatted[1].clear();
      for (ConnectionState* c : subscribers) deliver(c, pattern, true);
    }
    return receivers;
  }

 private:
  Map channels_;
  Map patterns_;
};

// The confirmation Redis sends for each (un)subscription: [kind, name, subscriptions left].
void ReplySubscription(core::ReplyBuilder& rb, std::string_view kind, const std::string* name,
                       size_t count) {
  rb.PushHeader(3);
  rb.Bulk(kind);
  if (name != nullptr) {
    rb.Bulk(*name);
  } else {
    rb.Null();
  }
  rb.Integer(int64_t(count));
}

// SUBSCRIBE channel... / PSUBSCRIBE pattern...
template <bool kPattern>
void CmdSubscribe(ArgSlice args, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  auto& mine = kPattern ? conn.pubsub.patterns : conn.pubsub.channels;
  PubSubRegistry& registry = PubSubRegistry::current();
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name(args[i]);
    if (mine.insert(name).second) {
      PubSubRegistry::Add(kPattern ? registry.patterns() : registry.channels(), name, &conn);
    }
    ReplySubscription(ctx.rb, kPattern ? "psubscribe" : "subscribe", &name, conn.pubsub.count());
  }
}

// UNSUBSCRIBE [channel...] / PUNSUBSCRIBE [pattern...]: no names means all of them.
template <bool kPattern>
void CmdUnsubscribe(ArgSlice args, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  auto& mine = kPattern ? conn.pubsub.patterns : conn.pubsub.channels;
  PubSubRegistry& registry = PubSubRegistry::current();
  auto& map = kPattern ? registry.patterns() : registry.channels();
  const std::string_view kind = kPattern ? "punsubscribe" : "unsubscribe";
  std::vector<std::string> names;
  if (args.size() > 1) {
    names.assign(args.begin() + 1, args.end());
  } else {
    names.assign(mine.begin(), mine.end());
    if (names.empty()) return ReplySubscription(ctx.rb, kind, nullptr, conn.pubsub.count());
  }
  for (const std::string& name : names) {
    if (mine.erase(name) > 0) PubSubRegistry::Remove(map, name, &conn);
    ReplySubscription(ctx.rb, kind, &name, conn.pubsub.count());
  }
}

// PUBLISH channel message: every thread delivers to its own subscribers, in parallel.
void CmdPublish(ArgSlice args, ConnContext& ctx) {
  std::vector<size_t> counts(shard::shard_set->size(), 0);
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    counts[s.id()] = PubSubRegistry::current().Publish(args[1], args[2]);
  });
  size_t total = 0;
  for (size_t n : counts) total += n;
  ctx.rb.Integer(int64_t(total));
}

// PUBSUB CHANNELS [pattern]: the channels with at least one subscriber on some thread.
void PubSubChannels(ArgSlice args, ConnContext& ctx) {
  std::vector<std::vector<std::string>> found(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    for (const auto& [channel, subscribers] : PubSubRegistry::current().channels()) {
      if (args.size() < 3 || core::GlobMatch(args[2], channel)) found[s.id()].push_back(channel);
    }
  });
  absl::flat_hash_set<std::string> channels;
  for (auto& list : found) channels.insert(list.begin(), list.end());
  ctx.rb.ArrayHeader(channels.size());
  for (const std::string& c : channels) ctx.rb.Bulk(c);
}

// PUBSUB NUMSUB [channel...]: subscribers per channel, over every thread.
void PubSubNumSub(ArgSlice args, ConnContext& ctx) {
  const size_t n = args.size() - 2;
  std::vector<std::vector<int64_t>> counts(shard::shard_set->size(), std::vector<int64_t>(n, 0));
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    auto& channels = PubSubRegistry::current().channels();
    for (size_t i = 0; i < n; ++i) {
      auto it = channels.find(args[2 + i]);
      if (it != channels.end()) counts[s.id()][i] = int64_t(it->second.size());
    }
  });
  ctx.rb.ArrayHeader(n * 2);  // flat even in RESP3, as Redis replies it (not a map)
  for (size_t i = 0; i < n; ++i) {
    int64_t total = 0;
    for (const auto& per_thread : counts) total += per_thread[i];
    ctx.rb.Bulk(args[2 + i]);
    ctx.rb.Integer(total);
  }
}

// PUBSUB NUMPAT: distinct patterns subscribed to, over every thread.
void PubSubNumPat(ArgSlice, ConnContext& ctx) {
  std::vector<std::vector<std::string>> found(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    for (const auto& [pattern, subscribers] : PubSubRegistry::current().patterns()) {
      found[s.id()].push_back(pattern);
    }
  });
  absl::flat_hash_set<std::string> patterns;
  for (auto& list : found) patterns.insert(list.begin(), list.end());
  ctx.rb.Integer(int64_t(patterns.size()));
}

void PubSubHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "PUBSUB",
            {"CHANNELS [<pattern>]",
             "    Return the currently active channels matching a <pattern> (default: '*').",
             "NUMPAT", "    Return number of subscriptions to patterns.",
             "NUMSUB [<channel> ...]",
             "    Return the number of subscribers for the specified channels, excluding",
             "    pattern subscriptions(default: no channels)."});
}

constexpr uint32_t kPubSubFlags = kPubSub | kLoading | kStale;
constexpr SubCommand kPubSubSubs[] = {
    {.name = "channels", .arity = -2, .flags = kPubSubFlags, .acl_categories = "pubsub slow",
     .handler = PubSubChannels,
     .docs = {.group = "pubsub", .since = "2.8.0",
              .complexity = "O(N) where N is the number of active channels, and assuming constant "
                            "time pattern matching (relatively short channels and patterns)",
              .summary = "Returns the active channels."}},
    {.name = "numsub", .arity = -2, .flags = kPubSubFlags, .acl_categories = "pubsub slow",
     .handler = PubSubNumSub,
     .docs = {.group = "pubsub", .since = "2.8.0",
              .complexity = "O(N) for the NUMSUB subcommand, where N is the number of requested "
                            "channels", .summary = "Returns a count of subscribers to channels."}},
    {.name = "numpat", .arity = 2, .flags = kPubSubFlags, .acl_categories = "pubsub slow",
     .handler = PubSubNumPat,
     .docs = {.group = "pubsub", .since = "2.8.0", .complexity = "O(1)",
              .summary = "Returns a count of unique pattern subscriptions."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = PubSubHelp,
     .docs = {.group = "pubsub", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
};
constexpr Container kPubSubContainer = {"pubsub", kPubSubSubs};

void CmdPubSub(ArgSlice args, ConnContext& ctx) { DispatchSub(kPubSubContainer, args, ctx); }

}  // namespace

void UnsubscribeAll(ConnectionState& conn) {
  PubSubRegistry& registry = PubSubRegistry::current();
  for (const std::string& c : conn.pubsub.channels) {
    PubSubRegistry::Remove(registry.channels(), c, &conn);
  }
  for (const std::string& p : conn.pubsub.patterns) {
    PubSubRegistry::Remove(registry.patterns(), p, &conn);
  }
  conn.pubsub.channels.clear();
  conn.pubsub.patterns.clear();
}

bool AllowedWhileSubscribed(std::string_view name) {
  for (std::string_view ok : {"subscribe", "unsubscribe", "psubscribe", "punsubscribe",
                              "ssubscribe", "sunsubscribe", "ping", "quit", "reset"}) {
    if (name == ok) return true;
  }
  return false;
}

bool RepliesArePushes(std::string_view name) {
  for (std::string_view push :
       {"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"}) {
    if (name == push) return true;
  }
  return false;
}

void RegisterPubSubFamily(CommandRegistry* r) {
  constexpr uint32_t kF = kPubSub | kNoScript | kLoading | kStale;
  r->Register({.name = "subscribe", .arity = -2, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdSubscribe<false>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of channels to subscribe to.",
                        .summary = "Subscribes the connection to channels."}});
  r->Register({.name = "psubscribe", .arity = -2, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdSubscribe<true>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of patterns the client is "
                                      "already subscribed to.",
                        .summary = "Subscribes the connection to the channels matching glob-style "
                                   "patterns."}});
  r->Register({.name = "unsubscribe", .arity = -1, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdUnsubscribe<false>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of clients already subscribed to "
                                      "a channel.",
                        .summary = "Drops the connection's channel subscriptions, or some of "
                                   "them."}});
  r->Register({.name = "punsubscribe", .arity = -1, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdUnsubscribe<true>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N+M) where N is the number of patterns the client is "
                                      "already subscribed and M is the number of total patterns "
                                      "subscribed in the system (by any client).",
                        .summary = "Drops the connection's pattern subscriptions, or some of "
                                   "them."}});
  r->Register({.name = "publish", .arity = 3, .flags = kPubSub | kLoading | kStale | kFast,
               .keys = kNoKeys, .acl_categories = "pubsub fast", .on_conn = CmdPublish,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N+M) where N is the number of clients subscribed to the "
                                      "receiving channel and M is the total number of subscribed "
                                      "patterns (by any client).",
                        .summary = "Sends a message to the subscribers of a channel."}});
  r->Register({.name = "pubsub", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdPubSub,
               .docs = {.group = "pubsub", .since = "2.8.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about the channels and patterns clients subscribe "
                                   "to."},
               .container = &kPubSubContainer});
}

}  // namespace shardis::server

// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH,
// PUBSUB (see pubsub.h for the design).
#include "server/pubsub.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "core/glob.h"
#include "core/reply_builder.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/command.h"
#include "server/subcommand.h"
#include "shard/keyspace_events.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

// How many channels and patterns each thread's connections subscribe to (Redis' pubsub_channels
// and pubsub_patterns sizes, per thread), so that keyspace notifications skip threads nobody
// listens on. Written by the owning thread only, read by any with relaxed loads: a subscription
// made while an event is on its way may miss that event, as it may in Redis.
constexpr unsigned kSubscriptionThreadSlots = 1024;
std::atomic<size_t> g_thread_subscriptions[kSubscriptionThreadSlots];

// Runs fn on every thread (each one's PubSubRegistry) once that thread has taken in the input
// that reached it before: an (un)subscription a client sent on one connection before this
// command on another is in effect, as one Redis thread reads them in that order (TCL pubsub
// "PUBLISH/PSUBSCRIBE after PUNSUBSCRIBE without arguments"; io::Proactor::RunAfterArrivedInput).
void AwaitAllThreadsInArrivalOrder(absl::FunctionRef<void(shard::Shard&)> fn) {
  shard::shard_set->AwaitAll(fn, io::HopStart::kAfterArrivedInput);
}

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
  Map& shard_channels() { return shard_channels_; }

  // After (un)subscribing: makes this thread's count of channels and patterns visible to others.
  void PublishSubscriptionCount() const {
    const unsigned thread = io::Proactor::current()->index() % kSubscriptionThreadSlots;
    g_thread_subscriptions[thread].store(channels_.size() + patterns_.size(),
                                         std::memory_order_relaxed);
  }

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
    if (auto it = channels_.find(channel); it != channels_.end()) {
      receivers += Deliver(it->second, "message", {}, channel, message);
    }
    for (auto& [pattern, subscribers] : patterns_) {
      if (core::GlobMatch(pattern, channel)) {
        receivers += Deliver(subscribers, "pmessage", pattern, channel, message);
      }
    }
    return receivers;
  }

  // SPUBLISH: delivers to this thread's subscribers of the shard channel (no patterns).
  size_t PublishShard(std::string_view channel, std::string_view message) {
    auto it = shard_channels_.find(channel);
    if (it == shard_channels_.end()) return 0;
    return Deliver(it->second, "smessage", {}, channel, message);
  }

 private:
  // Pushes [kind, (pattern,) channel, message] to each subscriber (the pattern only for
  // pmessage), formatted once per protocol version; returns how many got it.
  static size_t Deliver(const std::vector<ConnectionState*>& subscribers, std::string_view kind,
                        std::string_view pattern, std::string_view channel,
                        std::string_view message) {
    const bool is_pattern = !pattern.empty();
    std::string formatted[2];
    for (ConnectionState* c : subscribers) {
      std::string& bytes = formatted[c->resp3];
      if (bytes.empty()) {
        core::ReplyBuilder rb(&bytes);
        rb.set_resp3(c->resp3);
        rb.PushHeader(is_pattern ? 4 : 3);
        rb.Bulk(kind);
        if (is_pattern) rb.Bulk(pattern);
        rb.Bulk(channel);
        rb.Bulk(message);
      }
      c->push->Push(bytes);
    }
    return subscribers.size();
  }

  Map channels_;
  Map patterns_;
  Map shard_channels_;
};

// The three kinds of subscription: what a client holds, where its thread registers it, and the
// words and count of the confirmations.
enum class SubKind { kChannel, kPattern, kShardChannel };

struct SubKindFacts {
  absl::flat_hash_set<std::string>& mine;
  PubSubRegistry::Map& registered;
  std::string_view subscribe;
  std::string_view unsubscribe;
};

SubKindFacts FactsOf(SubKind kind, ConnectionState& conn) {
  PubSubRegistry& registry = PubSubRegistry::current();
  switch (kind) {
    case SubKind::kChannel:
      return {conn.pubsub.channels, registry.channels(), "subscribe", "unsubscribe"};
    case SubKind::kPattern:
      return {conn.pubsub.patterns, registry.patterns(), "psubscribe", "punsubscribe"};
    case SubKind::kShardChannel:
      break;
  }
  return {conn.pubsub.shard_channels, registry.shard_channels(), "ssubscribe", "sunsubscribe"};
}

// What a confirmation counts: shard channels apart from the others, as in Redis.
size_t SubscriptionCount(SubKind kind, const ConnectionState& conn) {
  return kind == SubKind::kShardChannel ? conn.pubsub.shard_channels.size()
                                        : conn.pubsub.channels_and_patterns();
}

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

// SUBSCRIBE channel... / PSUBSCRIBE pattern... / SSUBSCRIBE shardchannel...
template <SubKind kKind>
void CmdSubscribe(ArgSlice args, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  // Redis refuses SSUBSCRIBE to a client that expects one reply per command (its
  // CLIENT_DENY_BLOCKING, set while EXEC runs), though it lets SUBSCRIBE through there.
  if (kKind == SubKind::kShardChannel && shard::Transaction::CurrentExec() != nullptr) {
    return ctx.rb.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
  }
  SubKindFacts facts = FactsOf(kKind, conn);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name(args[i]);
    if (facts.mine.insert(name).second) PubSubRegistry::Add(facts.registered, name, &conn);
    ReplySubscription(ctx.rb, facts.subscribe, &name, SubscriptionCount(kKind, conn));
  }
  PubSubRegistry::current().PublishSubscriptionCount();
}

// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE [name...]: no names means all of them.
template <SubKind kKind>
void CmdUnsubscribe(ArgSlice args, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  SubKindFacts facts = FactsOf(kKind, conn);
  std::vector<std::string> names;
  if (args.size() > 1) {
    names.assign(args.begin() + 1, args.end());
  } else {
    names.assign(facts.mine.begin(), facts.mine.end());
    if (names.empty()) {
      return ReplySubscription(ctx.rb, facts.unsubscribe, nullptr,
                               SubscriptionCount(kKind, conn));
    }
  }
  for (const std::string& name : names) {
    if (facts.mine.erase(name) > 0) PubSubRegistry::Remove(facts.registered, name, &conn);
    ReplySubscription(ctx.rb, facts.unsubscribe, &name, SubscriptionCount(kKind, conn));
  }
  PubSubRegistry::current().PublishSubscriptionCount();
}

// PUBLISH channel message / SPUBLISH shardchannel message: every thread delivers to its own
// subscribers, in parallel. Without cluster mode every shard channel belongs to this server, so
// SPUBLISH reaches every thread too.
template <bool kShardChannel>
void CmdPublish(ArgSlice args, ConnContext& ctx) {
  std::vector<size_t> counts(shard::shard_set->size(), 0);
  AwaitAllThreadsInArrivalOrder([&](shard::Shard& s) {
    PubSubRegistry& registry = PubSubRegistry::current();
    counts[s.id()] = kShardChannel ? registry.PublishShard(args[1], args[2])
                                   : registry.Publish(args[1], args[2]);
  });
  size_t total = 0;
  for (size_t n : counts) total += n;
  ctx.rb.Integer(int64_t(total));
}

// The channels (or patterns) of one kind with subscribers on some thread, matching `glob`.
absl::flat_hash_set<std::string> DistinctNames(PubSubRegistry::Map& (PubSubRegistry::*map)(),
                                               std::string_view glob) {
  std::vector<std::vector<std::string>> found(shard::shard_set->size());
  AwaitAllThreadsInArrivalOrder([&](shard::Shard& s) {
    for (const auto& [name, subscribers] : (PubSubRegistry::current().*map)()) {
      if (glob == "*" || core::GlobMatch(glob, name)) found[s.id()].push_back(name);
    }
  });
  absl::flat_hash_set<std::string> names;
  for (auto& list : found) names.insert(list.begin(), list.end());
  return names;
}

// PUBSUB CHANNELS [pattern] / PUBSUB SHARDCHANNELS [pattern]: the (shard) channels with at
// least one subscriber on some thread.
template <PubSubRegistry::Map& (PubSubRegistry::*kMap)()>
void ListActiveChannels(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(SubcommandSyntaxError(args));  // one pattern at most
  const absl::flat_hash_set<std::string> channels =
      DistinctNames(kMap, args.size() < 3 ? std::string_view("*") : args[2]);
  ctx.rb.ArrayHeader(channels.size());
  for (const std::string& c : channels) ctx.rb.Bulk(c);
}
constexpr auto PubSubChannels = ListActiveChannels<&PubSubRegistry::channels>;
constexpr auto PubSubShardChannels = ListActiveChannels<&PubSubRegistry::shard_channels>;

// PUBSUB NUMSUB [channel...]: subscribers per channel, over every thread.
void PubSubNumSub(ArgSlice args, ConnContext& ctx) {
  const size_t n = args.size() - 2;
  std::vector<std::vector<int64_t>> counts(shard::shard_set->size(), std::vector<int64_t>(n, 0));
  AwaitAllThreadsInArrivalOrder([&](shard::Shard& s) {
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

// PUBSUB SHARDNUMSUB [shardchannel...]: subscribers per shard channel, over every thread, as a
// flat array of name and count (in RESP3 too, as Redis).
void PubSubShardNumSub(ArgSlice args, ConnContext& ctx) {
  const ArgSlice names = args.subspan(2);
  std::vector<std::vector<int64_t>> counts(shard::shard_set->size());
  AwaitAllThreadsInArrivalOrder([&](shard::Shard& s) {
    const PubSubRegistry::Map& registered = PubSubRegistry::current().shard_channels();
    for (std::string_view name : names) {
      auto it = registered.find(name);
      counts[s.id()].push_back(it == registered.end() ? 0 : int64_t(it->second.size()));
    }
  });
  ctx.rb.ArrayHeader(2 * names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    int64_t total = 0;
    for (const auto& per_thread : counts) total += per_thread[i];
    ctx.rb.Bulk(names[i]);
    ctx.rb.Integer(total);
  }
}

// PUBSUB NUMPAT: distinct patterns subscribed to, over every thread.
void PubSubNumPat(ArgSlice, ConnContext& ctx) {
  ctx.rb.Integer(int64_t(DistinctNames(&PubSubRegistry::patterns, "*").size()));
}

void PubSubHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "PUBSUB",
            {"CHANNELS [<pattern>]",
             "    Return the currently active channels matching a <pattern> (default: '*').",
             "NUMPAT", "    Return number of subscriptions to patterns.",
             "NUMSUB [<channel> ...]",
             "    Return the number of subscribers for the specified channels, excluding",
             "    pattern subscriptions(default: no channels).",
             "SHARDCHANNELS [<pattern>]",
             "    Return the currently active shard level channels matching a <pattern> (default: "
             "'*').",
             "SHARDNUMSUB [<shardchannel> ...]",
             "    Return the number of subscribers for the specified shard level channel(s)"});
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
    {.name = "shardchannels", .arity = -2, .flags = kPubSubFlags, .acl_categories = "pubsub slow",
     .handler = PubSubShardChannels,
     .docs = {.group = "pubsub", .since = "7.0.0",
              .complexity = "O(N) where N is the number of active shard channels, and assuming "
                            "constant time pattern matching (relatively short shard channels).",
              .summary = "Returns the active shard channels."}},
    {.name = "shardnumsub", .arity = -2, .flags = kPubSubFlags, .acl_categories = "pubsub slow",
     .handler = PubSubShardNumSub,
     .docs = {.group = "pubsub", .since = "7.0.0",
              .complexity = "O(N) for the SHARDNUMSUB subcommand, where N is the number of "
                            "requested shard channels",
              .summary = "Returns the count of subscribers of shard channels."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = PubSubHelp,
     .docs = {.group = "pubsub", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
};
constexpr Container kPubSubContainer = {"pubsub", kPubSubSubs};

void CmdPubSub(ArgSlice args, ConnContext& ctx) { DispatchSub(kPubSubContainer, args, ctx); }

}  // namespace

void UnsubscribeAll(ConnectionState& conn) {
  for (SubKind kind : {SubKind::kChannel, SubKind::kPattern, SubKind::kShardChannel}) {
    SubKindFacts facts = FactsOf(kind, conn);
    for (const std::string& name : facts.mine) {
      PubSubRegistry::Remove(facts.registered, name, &conn);
    }
    facts.mine.clear();
  }
  PubSubRegistry::current().PublishSubscriptionCount();
}

PubSubTotals CountPubSub() {
  return {.channels = DistinctNames(&PubSubRegistry::channels, "*").size(),
          .patterns = DistinctNames(&PubSubRegistry::patterns, "*").size(),
          .shard_channels = DistinctNames(&PubSubRegistry::shard_channels, "*").size()};
}

bool ThreadHasSubscriptions(unsigned thread) {
  return g_thread_subscriptions[thread % kSubscriptionThreadSlots].load(
             std::memory_order_relaxed) > 0;
}

size_t PublishOnThisThread(std::string_view channel, std::string_view message) {
  return PubSubRegistry::current().Publish(channel, message);
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
  shard::SetKeyspaceEventPublisher(PublishOnThisThread, ThreadHasSubscriptions);
  constexpr uint32_t kF = kPubSub | kNoScript | kLoading | kStale;
  r->Register({.name = "subscribe", .arity = -2, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdSubscribe<SubKind::kChannel>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of channels to subscribe to.",
                        .summary = "Subscribes the connection to channels."}});
  r->Register({.name = "psubscribe", .arity = -2, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdSubscribe<SubKind::kPattern>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of patterns the client is "
                                      "already subscribed to.",
                        .summary = "Subscribes the connection to the channels matching glob-style "
                                   "patterns."}});
  r->Register({.name = "unsubscribe", .arity = -1, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdUnsubscribe<SubKind::kChannel>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of clients already subscribed to "
                                      "a channel.",
                        .summary = "Drops the connection's channel subscriptions, or some of "
                                   "them."}});
  r->Register({.name = "punsubscribe", .arity = -1, .flags = kF, .keys = kNoKeys,
               .acl_categories = "pubsub slow", .on_conn = CmdUnsubscribe<SubKind::kPattern>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N+M) where N is the number of patterns the client is "
                                      "already subscribed and M is the number of total patterns "
                                      "subscribed in the system (by any client).",
                        .summary = "Drops the connection's pattern subscriptions, or some of "
                                   "them."}});
  r->Register({.name = "publish", .arity = 3,
               .flags = kPubSub | kLoading | kStale | kFast | kMayReplicate,
               .keys = kNoKeys, .acl_categories = "pubsub fast", .on_conn = CmdPublish<false>,
               .docs = {.group = "pubsub", .since = "2.0.0",
                        .complexity = "O(N+M) where N is the number of clients subscribed to the "
                                      "receiving channel and M is the total number of subscribed "
                                      "patterns (by any client).",
                        .summary = "Sends a message to the subscribers of a channel."}});
  // Sharded pub/sub (Redis 7). Its channels are keys to a cluster's routing (not_key key specs);
  // a standalone server holds every slot, so they act as channels of their own namespace.
  constexpr KeyRange kEveryArg = {1, -1, 1};
  r->Register({.name = "ssubscribe", .arity = -2, .flags = kF, .keys = kEveryArg,
               .acl_categories = "pubsub slow", .on_conn = CmdSubscribe<SubKind::kShardChannel>,
               .docs = {.group = "pubsub", .since = "7.0.0",
                        .complexity = "O(N) where N is the number of shard channels to subscribe "
                                      "to.",
                        .summary = "Subscribes the connection to shard channels.",
                        .key_flags = "not_key"}});
  r->Register({.name = "sunsubscribe", .arity = -1, .flags = kF, .keys = kEveryArg,
               .acl_categories = "pubsub slow", .on_conn = CmdUnsubscribe<SubKind::kShardChannel>,
               .docs = {.group = "pubsub", .since = "7.0.0",
                        .complexity = "O(N) where N is the number of clients already "
                                      "subscribed to a shard channel.",
                        .summary = "Drops the connection's shard channel subscriptions, or some "
                                   "of them.",
                        .key_flags = "not_key"}});
  r->Register({.name = "spublish", .arity = 3,
               .flags = kPubSub | kLoading | kStale | kFast | kMayReplicate,
               .keys = kOneKey,
               .acl_categories = "pubsub fast", .on_conn = CmdPublish<true>,
               .docs = {.group = "pubsub", .since = "7.0.0",
                        .complexity = "O(N) where N is the number of clients subscribed to the "
                                      "receiving shard channel.",
                        .summary = "Sends a message to the subscribers of a shard channel.",
                        .key_flags = "not_key"}});
  r->Register({.name = "pubsub", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdPubSub,
               .docs = {.group = "pubsub", .since = "2.8.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about the channels and patterns clients subscribe "
                                   "to."},
               .container = &kPubSubContainer});
}

}  // namespace shardis::server

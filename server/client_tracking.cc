#include "server/client_tracking.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/server_state.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

std::atomic<size_t> g_tracking_clients{0};

constexpr std::string_view kInvalidatePush = ">2\r\n$10\r\ninvalidate\r\n";
constexpr std::string_view kInvalidateMessage =
    "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";

// "All keys" (a flush), in the tracking client's protocol, as Redis sends it.
std::string_view NullPayload(const ConnectionState& c) { return c.resp3 ? "_\r\n" : "$-1\r\n"; }

std::string KeysPayload(const std::vector<std::string>& keys) {
  std::string out;
  core::Append(&out, "*", keys.size(), "\r\n");
  for (const std::string& k : keys) core::Append(&out, "$", k.size(), "\r\n", k, "\r\n");
  return out;
}

// Runs fn(arg) on thread `to`: inline when it is this one.
void RunOn(unsigned to, void (*fn)(void*), void* arg) {
  io::Proactor* self = io::Proactor::current();
  if (self->index() == to) return fn(arg);
  self->Post(to, io::Task{fn, arg});
}

// To the client a reader redirects to, on that client's thread.
struct Redirected {
  uint64_t target = 0;
  uint64_t reader = 0;  // the tracking client, told when the target is gone
  unsigned reader_thread = 0;
  std::string payload;
};
// Back to a reader whose redirect client is gone.
struct BrokenRedirect {
  uint64_t reader = 0;
  uint64_t target = 0;
};

void DeliverBrokenRedirect(void* arg) {
  std::unique_ptr<BrokenRedirect> b(static_cast<BrokenRedirect*>(arg));
  ConnectionState* c = ServerThreadState::current().FindConnection(b->reader);
  if (c == nullptr || !c->tracking.on || c->tracking.redirect != b->target) return;
  c->tracking.broken_redirect = true;
  if (!c->resp3) return;
  std::string push;
  core::Append(&push, ">2\r\n$21\r\ntracking-redir-broken\r\n:", b->target, "\r\n");
  c->push->Push(push);
}

void DeliverRedirected(void* arg) {
  std::unique_ptr<Redirected> r(static_cast<Redirected*>(arg));
  ConnectionState* target = ServerThreadState::current().FindConnection(r->target);
  if (target == nullptr) {
    RunOn(r->reader_thread, &DeliverBrokenRedirect, new BrokenRedirect{r->reader, r->target});
    return;
  }
  if (target->resp3) {
    target->push->Push(core::Concat(kInvalidatePush, r->payload));
  } else if (target->pubsub.count() > 0) {
    // RESP2 has no pushes: a subscribed client gets a message of __redis__:invalidate.
    target->push->Push(core::Concat(kInvalidateMessage, r->payload));
  }
}

}  // namespace

void AppendInvalidationPush(const std::vector<std::string>& keys, std::string* out) {
  core::Append(out, kInvalidatePush, KeysPayload(keys));
}

namespace {

// Sends an invalidation (its keys part, already encoded) for tracking client c, on c's thread.
void SendInvalidation(ConnectionState& c, std::string payload) {
  const TrackingState& t = c.tracking;
  if (t.redirect != 0) {
    RunOn(t.redirect_thread, &DeliverRedirected,
          new Redirected{t.redirect, c.id, c.thread, std::move(payload)});
    return;
  }
  // RESP2 without a redirect has no way to receive it.
  if (c.resp3) c.push->Push(core::Concat(kInvalidatePush, payload));
}

// A shard's message, on the tracking client's thread.
void DeliverFromShard(shard::TrackingMessage* msg) {
  std::unique_ptr<shard::TrackingMessage> m(msg);
  ConnectionState* c = ServerThreadState::current().FindConnection(m->client_id);
  if (c == nullptr || !c->tracking.on) return;
  // Keys read before a switch to BCAST (or the reverse) are not announced any more.
  if (m->bcast != c->tracking.bcast) return;
  if (!m->bcast && c->tracking.noloop && m->writer_id == c->id) return;
  SendInvalidation(*c, KeysPayload(m->keys));
}

// The thread of the client with this id, if it is connected.
std::optional<unsigned> FindClientThread(uint64_t id) {
  std::vector<char> found(shard::shard_set->size(), 0);
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    found[s.id()] = ServerThreadState::current().FindConnection(id) != nullptr;
  });
  for (unsigned t = 0; t < found.size(); ++t) {
    if (found[t]) return t;
  }
  return std::nullopt;
}

// Two prefixes collide when one starts with the other: a key would be announced twice.
bool PrefixesCollide(std::string_view a, std::string_view b) {
  return a.starts_with(b) || b.starts_with(a);
}

// Redis' checkPrefixCollisionsOrReply: the error for the first collision, or empty.
std::string PrefixCollision(const ConnectionState& c,
                            const std::vector<std::string_view>& prefixes) {
  for (size_t i = 0; i < prefixes.size(); ++i) {
    for (const std::string& existing : c.tracking.prefixes) {
      if (PrefixesCollide(existing, prefixes[i])) {
        return core::Concat("ERR Prefix '", prefixes[i], "' overlaps with an existing prefix '",
                            existing, "'. Prefixes for a single client must not overlap.");
      }
    }
    for (size_t j = i + 1; j < prefixes.size(); ++j) {
      if (PrefixesCollide(prefixes[i], prefixes[j])) {
        return core::Concat("ERR Prefix '", prefixes[i],
                            "' overlaps with another provided prefix '", prefixes[j],
                            "'. Prefixes for a single client must not overlap.");
      }
    }
  }
  return {};
}

void EnableTracking(ConnectionState& c, uint64_t redirect, unsigned redirect_thread, bool bcast,
                    bool optin, bool optout, bool noloop,
                    const std::vector<std::string_view>& prefixes) {
  TrackingState& t = c.tracking;
  if (!t.on) g_tracking_clients.fetch_add(1, std::memory_order_relaxed);
  t.on = true;
  t.broken_redirect = false;
  t.redirect = redirect;
  t.redirect_thread = redirect_thread;
  t.bcast = bcast;
  t.optin = optin;
  t.optout = optout;
  t.noloop = noloop;
  t.reader = {c.id, c.thread, /*redirected=*/redirect != 0};
  if (!bcast) return;
  // Every shard holds every prefix (a key may live on any of them); NOLOOP applies to the old
  // prefixes too.
  for (std::string_view p : prefixes.empty() ? std::vector<std::string_view>{""} : prefixes) {
    if (std::find(t.prefixes.begin(), t.prefixes.end(), p) == t.prefixes.end()) {
      t.prefixes.emplace_back(p);
    }
  }
  const shard::TrackedReader reader = t.reader;
  shard::shard_set->AwaitAll([&](shard::Shard& s) {
    for (const std::string& p : t.prefixes) s.tracking().AddPrefix(p, reader, noloop);
  });
}

}  // namespace

size_t TrackingClients() { return g_tracking_clients.load(std::memory_order_relaxed); }

void InstallTrackingDelivery() { shard::SetTrackingDeliverer(&DeliverFromShard); }

void EndCachingAnswer(ConnectionState& c, const CommandSpec* spec) {
  if (c.multi.active || (spec != nullptr && spec->name == "client")) return;
  c.tracking.caching = false;
}

void DisableTracking(ConnectionState& c) {
  TrackingState& t = c.tracking;
  if (!t.prefixes.empty()) {
    const uint64_t id = c.id;
    shard::shard_set->AwaitAll([id](shard::Shard& s) { s.tracking().RemovePrefixes(id); });
    t.prefixes.clear();
  }
  if (t.on) g_tracking_clients.fetch_sub(1, std::memory_order_relaxed);
  // The keys the shards remember for it go when they change (Redis forgets ids lazily too).
  const uint64_t redirect = t.redirect;
  t = TrackingState{};
  t.redirect = redirect;  // kept, as Redis keeps it, though nothing reads it while off
}

void InvalidateTrackingOnFlush(shard::Shard& shard) {
  shard.tracking().ForgetAllKeys();
  if (TrackingClients() == 0) return;
  for (ConnectionState* c : ServerThreadState::current().connections()) {
    if (c->tracking.on) SendInvalidation(*c, std::string(NullPayload(*c)));
  }
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
void ClientTracking(ArgSlice args, ConnContext& ctx) {
  ConnectionState& c = ctx.conn;
  const TrackingState& t = c.tracking;
  int64_t redirect = 0;
  unsigned redirect_thread = 0;
  bool bcast = false, optin = false, optout = false, noloop = false;
  std::vector<std::string_view> prefixes;
  for (size_t j = 3; j < args.size(); ++j) {
    const bool more = j + 1 < args.size();
    if (core::EqualsIgnoreCase(args[j], "redirect") && more) {
      ++j;
      if (redirect != 0) {
        return ctx.rb.Error("ERR A client can only redirect to a single other client");
      }
      if (!core::ParseInt64(args[j], &redirect)) return ctx.rb.Error(kNotIntegerErr);
      // The client must exist now, though it may go away later (Redis' check).
      const std::optional<unsigned> where =
          redirect > 0 ? FindClientThread(uint64_t(redirect)) : std::nullopt;
      if (!where) return ctx.rb.Error("ERR The client ID you want redirect to does not exist");
      redirect_thread = *where;
    } else if (core::EqualsIgnoreCase(args[j], "bcast")) {
      bcast = true;
    } else if (core::EqualsIgnoreCase(args[j], "optin")) {
      optin = true;
    } else if (core::EqualsIgnoreCase(args[j], "optout")) {
      optout = true;
    } else if (core::EqualsIgnoreCase(args[j], "noloop")) {
      noloop = true;
    } else if (core::EqualsIgnoreCase(args[j], "prefix") && more) {
      prefixes.push_back(args[++j]);
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
  }
  if (core::EqualsIgnoreCase(args[2], "off")) {
    DisableTracking(c);
    return ctx.rb.Ok();
  }
  if (!core::EqualsIgnoreCase(args[2], "on")) return ctx.rb.Error(kSyntaxErr);
  // Redis' checks, in its order.
  if (!bcast && !prefixes.empty()) {
    return ctx.rb.Error("ERR PREFIX option requires BCAST mode to be enabled");
  }
  if (t.on && t.bcast != bcast) {
    return ctx.rb.Error(
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
        "then re-enabling it with a different mode.");
  }
  if (bcast && (optin || optout)) {
    return ctx.rb.Error("ERR OPTIN and OPTOUT are not compatible with BCAST");
  }
  if (optin && optout) {
    return ctx.rb.Error("ERR You can't specify both OPTIN mode and OPTOUT mode");
  }
  if ((optin && t.optout) || (optout && t.optin)) {
    return ctx.rb.Error(
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
        "then re-enabling it with a different mode.");
  }
  if (bcast) {
    if (std::string error = PrefixCollision(c, prefixes); !error.empty()) {
      return ctx.rb.Error(error);
    }
  }
  EnableTracking(c, uint64_t(redirect), redirect_thread, bcast, optin, optout, noloop, prefixes);
  ctx.rb.Ok();
}

// CLIENT CACHING YES|NO
void ClientCaching(ArgSlice args, ConnContext& ctx) {
  TrackingState& t = ctx.conn.tracking;
  if (!t.on) {
    return ctx.rb.Error(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
        "OPTOUT mode enabled");
  }
  if (core::EqualsIgnoreCase(args[2], "yes")) {
    if (!t.optin) {
      return ctx.rb.Error(
          "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
    }
  } else if (core::EqualsIgnoreCase(args[2], "no")) {
    if (!t.optout) {
      return ctx.rb.Error(
          "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
    }
  } else {
    return ctx.rb.Error(kSyntaxErr);
  }
  t.caching = true;
  ctx.rb.Ok();
}

// CLIENT GETREDIR: the redirect client's id, 0 without one, -1 when tracking is off.
void ClientGetRedir(ArgSlice, ConnContext& ctx) {
  const TrackingState& t = ctx.conn.tracking;
  ctx.rb.Integer(t.on ? int64_t(t.redirect) : -1);
}

// CLIENT TRACKINGINFO: flags (a set), redirect, prefixes.
void ClientTrackingInfo(ArgSlice, ConnContext& ctx) {
  const TrackingState& t = ctx.conn.tracking;
  std::vector<std::string_view> flags{t.on ? "on" : "off"};
  if (t.bcast) flags.push_back("bcast");
  if (t.optin) {
    flags.push_back("optin");
    if (t.caching) flags.push_back("caching-yes");
  }
  if (t.optout) {
    flags.push_back("optout");
    if (t.caching) flags.push_back("caching-no");
  }
  if (t.noloop) flags.push_back("noloop");
  if (t.broken_redirect) flags.push_back("broken_redirect");
  ctx.rb.MapHeader(3);
  ctx.rb.Bulk("flags");
  ctx.rb.SetHeader(flags.size());
  for (std::string_view f : flags) ctx.rb.Bulk(f);
  ctx.rb.Bulk("redirect");
  ctx.rb.Integer(t.on ? int64_t(t.redirect) : -1);
  ctx.rb.Bulk("prefixes");
  std::vector<std::string_view> prefixes(t.prefixes.begin(), t.prefixes.end());
  std::sort(prefixes.begin(), prefixes.end());  // Redis lists them from a radix tree: sorted
  ctx.rb.BulkArray(prefixes);
}

}  // namespace shardis::server

// The ACL user table, the connections' users and ACL LOG (see acl_users.h).
#include "server/acl_users.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>

#include "core/sha256.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/command.h"
#include "server/command_stats.h"
#include "server/connection_state.h"
#include "server/server_state.h"
#include "shard/shard.h"
#include "shard/shard_set.h"

DEFINE_string(requirepass, "",
              "password of the default user; clients must AUTH before other commands "
              "(empty: no authentication)");
DEFINE_uint64(acllog_max_len, 128, "entries ACL LOG keeps, as Redis' acllog-max-len");

namespace shardis::server {

namespace {

// acllog-max-len: read when an entry is added, under the table's mutex.
std::atomic<uint64_t> g_acl_log_max_len{128};
// Redis' ACL_LOG_GROUPING_MAX_TIME_DELTA: similar denials within a minute share an entry.
constexpr int64_t kAclLogGroupingMs = 60000;

struct AclLogEntry {
  uint64_t count = 1;
  AclDenial reason;
  AclLogContext context;
  std::string object, username, client_info;
  int64_t updated_ms = 0, created_ms = 0;
  uint64_t entry_id = 0;
};

struct Users {
  std::mutex mu;
  std::map<std::string, AclUserPtr, std::less<>> by_name;  // sorted, as Redis' rax
  bool loaded = false;  // --requirepass applied (at first use, after flags are parsed)
  std::deque<AclLogEntry> log;  // newest first
  uint64_t log_entries = 0;
};
// Whether the default user needs AUTH, for the per-connection question; written under mu.
// -1: the table is not made yet.
std::atomic<int> g_auth_required{-1};

// Redis' ACLCreateDefaultUser: +@all ~* &* on nopass; at start --requirepass sets its password.
AclUser MakeDefaultUser(bool with_requirepass) {
  AclUser u("default");
  const std::string pass = core::Concat(">", FLAGS_requirepass);
  std::vector<std::string_view> rules = {"+@all", "~*", "&*", "on", "nopass"};
  if (with_requirepass && !FLAGS_requirepass.empty()) rules.push_back(pass);
  ApplyAclRules(&u, rules);
  return u;
}

void NoteDefaultLocked(const AclUser& d) {
  g_auth_required.store(!d.nopass || !d.enabled ? 1 : 0, std::memory_order_relaxed);
}

Users& TheUsers() {
  static Users users;
  return users;
}

// Locks the table, creating the default user at first use.
std::unique_lock<std::mutex> Lock(Users& u) {
  std::unique_lock lock(u.mu);
  if (!u.loaded) {
    u.loaded = true;
    auto d = std::make_shared<const AclUser>(MakeDefaultUser(true));
    NoteDefaultLocked(*d);
    u.by_name["default"] = std::move(d);
  }
  return lock;
}

// Compares the SHA-256 hex digests in time that does not depend on where they differ (Redis'
// time_independent_strcmp serves the same purpose).
bool SameDigest(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

// Redis' ACLCheckUserCredentials.
bool CredentialsOk(const AclUser& u, std::string_view password) {
  if (!u.enabled) return false;
  if (u.nopass) return true;
  const std::string digest = core::Sha256Hex(password);
  bool ok = false;
  for (const std::string& p : u.passwords) ok |= SameDigest(p, digest);
  return ok;
}

// What changes for connections of a user: its new rules, or (null) that it went.
struct UserChange {
  std::string name;
  AclUserPtr rules;
  // ACL SETUSER closes subscribers to channels the new rules revoke (Redis'
  // ACLKillPubsubClientsIfNeeded); ACL LOAD copies the default user's new rules over the old
  // ones without that check, as Redis 7.2's ACLLoadFromFile.
  bool close_revoked_subscribers = true;
};

// Whether the connection's user still allows every channel and pattern it is subscribed to.
bool SubscriptionsAllowed(const ConnectionState& c) {
  const AclUser& u = *c.user;
  if (c.pubsub.count() == 0 || u.unrestricted) return true;
  auto allowed = [&](const auto& names, bool patterns) {
    return std::all_of(names.begin(), names.end(),
                       [&](const std::string& n) { return AclAllowsChannel(u, n, patterns); });
  };
  return allowed(c.pubsub.channels, false) && allowed(c.pubsub.patterns, true) &&
         allowed(c.pubsub.shard_channels, false);
}

// Each thread updates its own connections: new rules are swapped in; a deleted user's
// connections close (Redis' ACLFreeUserAndKillClients), the caller's own after its reply, and so
// do subscribers to channels the new rules no longer allow.
void PublishAclUsers(const std::vector<UserChange>& changes, ConnContext* ctx) {
  if (shard::shard_set == nullptr || changes.empty()) return;  // no connections yet
  ConnectionState* me = ctx != nullptr ? &ctx->conn : nullptr;
  shard::shard_set->AwaitAll([&](shard::Shard&) {
    for (ConnectionState* c : ServerThreadState::current().connections()) {
      if (c->user == nullptr) continue;
      for (const UserChange& change : changes) {
        if (c->user->name != change.name) continue;
        if (change.rules != nullptr) {
          c->pending_user = change.rules;
          c->pending_user_checks_subscriptions = change.close_revoked_subscribers;
          // The caller runs this command on this thread: nothing of it runs elsewhere now.
          if (!c->executing || c == me) ApplyPendingAclUser(*c);
          continue;
        }
        if (c->executing && c != me) {
          // Its user stays as it is while a script of it may read it elsewhere; it closes.
          if (!c->killed) c->push->Kill();
          continue;
        }
        c->authenticated = false;
        c->user = DefaultAclUser();
        if (c == me) {
          c->close_after_reply = true;
        } else if (!c->killed) {
          c->push->Kill();
        }
      }
    }
  });
}

// Whether the calling thread is the connection's own (false in a script run on a key's shard).
bool OnConnectionThread(const ConnectionState& conn) {
  const io::Proactor* here = io::Proactor::current();
  return here == nullptr || here->index() == conn.thread;
}

// Redis' ACLUpdateInfoMetrics, on this thread's counters (summed by INFO).
void CountAclDenial(AclDenial reason) {
  ThreadStats& stats = ServerThreadState::current().stats();
  switch (reason) {
    case AclDenial::kAuth: ++stats.acl_denied_auth; break;
    case AclDenial::kCommand: ++stats.acl_denied_cmd; break;
    case AclDenial::kKey: ++stats.acl_denied_key; break;
    case AclDenial::kChannel: ++stats.acl_denied_channel; break;
    case AclDenial::kNone: break;
  }
}

}  // namespace

AclUserPtr DefaultAclUser() {
  Users& u = TheUsers();
  auto lock = Lock(u);
  return u.by_name.find("default")->second;
}

AclUserPtr FindAclUser(std::string_view name) {
  Users& u = TheUsers();
  auto lock = Lock(u);
  auto it = u.by_name.find(name);
  return it == u.by_name.end() ? nullptr : it->second;
}

std::vector<AclUserPtr> AllAclUsers() {
  Users& u = TheUsers();
  auto lock = Lock(u);
  std::vector<AclUserPtr> all;
  for (const auto& [name, user] : u.by_name) all.push_back(user);
  return all;
}

std::string SetAclUser(std::string_view name, std::span<const std::string_view> rules,
                       ConnContext* ctx) {
  Users& u = TheUsers();
  AclUserPtr published;
  {
    auto lock = Lock(u);
    auto it = u.by_name.find(name);
    // Staged on a copy: a rule in error leaves the user as it was, as in Redis.
    AclUser staged = it != u.by_name.end() ? *it->second : AclUser(std::string(name));
    if (std::string err = ApplyAclRules(&staged, rules); !err.empty()) return err;
    published = std::make_shared<const AclUser>(std::move(staged));
    if (name == "default") NoteDefaultLocked(*published);
    u.by_name[std::string(name)] = published;
  }
  PublishAclUsers({{std::string(name), published}}, ctx);
  return "";
}

size_t DeleteAclUsers(std::span<const std::string_view> names, ConnContext* ctx) {
  Users& u = TheUsers();
  std::vector<UserChange> gone;
  {
    auto lock = Lock(u);
    for (std::string_view name : names) {
      auto it = u.by_name.find(name);
      if (it == u.by_name.end()) continue;
      gone.push_back({it->first, nullptr});
      u.by_name.erase(it);
    }
  }
  PublishAclUsers(gone, ctx);
  return gone.size();
}

void ReplaceAclUsers(std::vector<AclUser> users, ConnContext* ctx) {
  Users& u = TheUsers();
  std::vector<UserChange> changes;
  {
    auto lock = Lock(u);
    std::map<std::string, AclUserPtr, std::less<>> next;
    next["default"] = std::make_shared<const AclUser>(MakeDefaultUser(false));
    for (AclUser& user : users) {
      std::string name = user.name;
      next[name] = std::make_shared<const AclUser>(std::move(user));
    }
    // Redis' ACLLoadFromFile frees every old user, killing its clients; the default user's
    // clients keep their connection with the new rules.
    for (const auto& [name, old] : u.by_name) {
      if (name == "default") {
        changes.push_back({name, next["default"], /*close_revoked_subscribers=*/false});
      } else {
        changes.push_back({name, nullptr});
      }
    }
    NoteDefaultLocked(*next["default"]);
    u.by_name = std::move(next);
  }
  PublishAclUsers(changes, ctx);
}

bool CheckPassword(std::string_view user, std::string_view password) {
  AclUserPtr found = FindAclUser(user);
  return found != nullptr && CredentialsOk(*found, password);
}

bool AuthRequired() {
  int required = g_auth_required.load(std::memory_order_relaxed);
  if (required < 0) [[unlikely]] {
    // Before the commands are registered the users cannot be made: --requirepass answers.
    if (NumCommandStatsIds() == 0) return !FLAGS_requirepass.empty();
    DefaultAclUser();  // makes the table, applying --requirepass
    required = g_auth_required.load(std::memory_order_relaxed);
  }
  return required == 1;
}

void ResetConnectionUser(ConnectionState& conn) {
  conn.user = DefaultAclUser();
  conn.authenticated = !AuthRequired();
}

bool AuthenticateConnection(ConnectionState& conn, std::string_view user,
                            std::string_view password, std::string_view command) {
  AclUserPtr found = FindAclUser(user);
  if (found == nullptr || !CredentialsOk(*found, password)) {
    AddAclLogEntry(conn, AclDenial::kAuth,
                   conn.multi.active ? AclLogContext::kMulti : AclLogContext::kTopLevel, command,
                   user);
    return false;
  }
  conn.user = std::move(found);
  conn.authenticated = true;
  return true;
}

std::string RequirePass() {
  // CONFIG GET requirepass shows the password itself, which only --requirepass and CONFIG SET
  // know: Redis keeps it (server.requirepass) beside the default user's digest.
  // Not Lock(): CONFIG's registration reads it before the commands (and so the users) exist.
  Users& u = TheUsers();
  std::lock_guard lock(u.mu);
  return FLAGS_requirepass;
}

void SetRequirePass(std::string_view password) {
  // Redis' ACLUpdateDefaultUserPassword: resetpass, then >password or nopass.
  const std::string pass = core::Concat(">", password);
  std::vector<std::string_view> rules = {"resetpass"};
  rules.push_back(password.empty() ? std::string_view("nopass") : std::string_view(pass));
  {
    Users& u = TheUsers();
    std::lock_guard lock(u.mu);
    FLAGS_requirepass = std::string(password);
  }
  if (NumCommandStatsIds() == 0) return;  // at start: the default user is made with it later
  SetAclUser("default", rules, nullptr);
}

std::string CheckAclCall(ConnectionState& conn, const CommandSpec& spec,
                         const SubCommand* sub, ArgSlice args, AclLogContext context) {
  const AclCheck check = CheckAclCommand(*conn.user, spec, sub, args);
  if (check.denial == AclDenial::kNone) return "";
  const std::string_view object =
      check.denial == AclDenial::kCommand ? AclCommandName(spec, sub) : args[check.arg];
  if (context == AclLogContext::kTopLevel && conn.multi.active) context = AclLogContext::kMulti;
  if (OnConnectionThread(conn)) {
    AddAclLogEntry(conn, check.denial, context, object, conn.user->name);
  } else {
    // Nothing else touches the list meanwhile: the client's fiber waits for this run.
    conn.deferred_acl_denials.push_back(
        {check.denial, context, std::string(object), conn.user->name});
  }
  return AclDenialMessage(*conn.user, check, spec, sub, args, /*verbose=*/false);
}

void ApplyPendingAclUser(ConnectionState& conn) {
  std::shared_ptr<const AclUser> rules = std::move(conn.pending_user);
  conn.pending_user = nullptr;
  // An AUTH as another user in the meantime makes the change not its own any more.
  if (rules == nullptr || conn.user == nullptr || conn.user->name != rules->name) return;
  conn.user = std::move(rules);
  if (conn.pending_user_checks_subscriptions && !SubscriptionsAllowed(conn) && !conn.killed) {
    conn.push->Kill();
  }
}

void LogDeferredAclDenials(ConnectionState& conn) {
  if (conn.deferred_acl_denials.empty() || !OnConnectionThread(conn)) return;
  for (const DeferredAclDenial& d : conn.deferred_acl_denials) {
    AddAclLogEntry(conn, d.reason, d.context, d.object, d.username);
  }
  conn.deferred_acl_denials.clear();
}

void AddAclLogEntry(const ConnectionState& conn, AclDenial reason, AclLogContext context,
                    std::string_view object, std::string_view username) {
  CountAclDenial(reason);
  AclLogEntry e{.reason = reason, .context = context, .object = std::string(object),
                .username = std::string(username), .client_info = ClientInfoLine(conn)};
  e.updated_ms = e.created_ms = shard::NowMs();
  Users& u = TheUsers();
  auto lock = Lock(u);
  // Redis looks at the 10 newest entries for one to bump instead.
  for (size_t i = 0; i < std::min<size_t>(10, u.log.size()); ++i) {
    AclLogEntry& old = u.log[i];
    if (old.reason == e.reason && old.context == e.context && old.object == e.object &&
        old.username == e.username && std::abs(old.updated_ms - e.updated_ms) <= kAclLogGroupingMs) {
      old.client_info = std::move(e.client_info);
      old.updated_ms = e.updated_ms;
      ++old.count;
      AclLogEntry moved = std::move(old);
      u.log.erase(u.log.begin() + i);
      u.log.push_front(std::move(moved));
      return;
    }
  }
  e.entry_id = u.log_entries++;
  u.log.push_front(std::move(e));
  // As Redis, a smaller acllog-max-len trims the log at the next entry, not at CONFIG SET.
  while (u.log.size() > g_acl_log_max_len.load(std::memory_order_relaxed)) u.log.pop_back();
}

void ReplyAclLog(ConnContext& ctx, int64_t count) {
  std::vector<AclLogEntry> entries;
  {
    Users& u = TheUsers();
    auto lock = Lock(u);
    const size_t n = std::min<size_t>(size_t(std::max<int64_t>(count, 0)), u.log.size());
    entries.assign(u.log.begin(), u.log.begin() + n);
  }
  const int64_t now = shard::NowMs();
  ctx.rb.ArrayHeader(entries.size());
  for (const AclLogEntry& e : entries) {
    static constexpr std::array<std::string_view, 5> kReasons = {"unknown", "command", "key",
                                                                  "auth", "channel"};
    static constexpr std::array<std::string_view, 3> kContexts = {"toplevel", "multi", "lua"};
    ctx.rb.MapHeader(10);
    ctx.rb.Bulk("count");
    ctx.rb.Integer(int64_t(e.count));
    ctx.rb.Bulk("reason");
    ctx.rb.Bulk(kReasons[size_t(e.reason)]);
    ctx.rb.Bulk("context");
    ctx.rb.Bulk(kContexts[size_t(e.context)]);
    ctx.rb.Bulk("object");
    ctx.rb.Bulk(e.object);
    ctx.rb.Bulk("username");
    ctx.rb.Bulk(e.username);
    ctx.rb.Bulk("age-seconds");
    ctx.rb.Double(double(now - e.updated_ms) / 1000);
    ctx.rb.Bulk("client-info");
    ctx.rb.Bulk(e.client_info);
    ctx.rb.Bulk("entry-id");
    ctx.rb.Integer(int64_t(e.entry_id));
    ctx.rb.Bulk("timestamp-created");
    ctx.rb.Integer(e.created_ms);
    ctx.rb.Bulk("timestamp-last-updated");
    ctx.rb.Integer(e.updated_ms);
  }
}

uint64_t AclLogMaxLen() { return g_acl_log_max_len.load(std::memory_order_relaxed); }
void SetAclLogMaxLen(uint64_t len) { g_acl_log_max_len.store(len, std::memory_order_relaxed); }

void ResetAclLog() {
  Users& u = TheUsers();
  auto lock = Lock(u);
  u.log.clear();
}

}  // namespace shardis::server

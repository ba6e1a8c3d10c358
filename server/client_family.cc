// CLIENT ID / GETNAME / SETNAME / INFO / LIST / KILL / PAUSE / UNPAUSE / REPLY / SETINFO /
// NO-EVICT / NO-TOUCH / HELP; TRACKING, CACHING, GETREDIR and TRACKINGINFO are in
// client_tracking.cc.
//
// CLIENT LIST and CLIENT KILL reach every client with one hop to every thread: each thread formats
// (or closes) its own connections, writing into its slot of a vector the calling fiber owns. A
// killed connection is closed by its own thread (PushSink::Kill), so nothing is shared.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/acl_users.h"
#include "server/arg_parser.h"
#include "server/blocked_client.h"
#include "server/client_pause.h"
#include "server/client_tracking.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

// CLIENT LIST's flags letters, as Redis' catClientInfoString (those that apply here).
std::string ClientFlags(const ConnectionState& c) {
  std::string f;
  if (c.monitor) f.push_back('O');
  if (c.pubsub.count() > 0) f.push_back('P');
  if (c.multi.active) f.push_back('x');
  if (c.blocked != nullptr) f.push_back('b');
  if (c.tracking.on) f.push_back('t');
  if (c.tracking.broken_redirect) f.push_back('R');
  if (c.tracking.bcast) f.push_back('B');
  if (c.close_after_reply) f.push_back('c');
  if (c.killed) f.push_back('A');
  if (c.no_evict) f.push_back('e');
  if (c.no_touch) f.push_back('T');
  if (f.empty()) f.push_back('N');
  return f;
}

// One CLIENT LIST / CLIENT INFO line, with Redis 7's fields (multi-mem, rbs and rbp are not
// tracked: MULTI's queue and the reply buffers are counted in argv-mem and omem/tot-mem). Call on
// the client's own thread.
void AppendClientLine(std::string* out, const ConnectionState& c, int64_t now_ms) {
  const ClientBuffers b = c.push != nullptr ? c.push->Buffers() : ClientBuffers{};
  core::Append(out, "id=", c.id, " addr=", c.addr, " laddr=", c.laddr, " fd=", c.fd,
               " name=", c.name, " age=", (now_ms - c.created_ms) / 1000,
               " idle=", (now_ms - c.last_interaction_ms) / 1000, " flags=", ClientFlags(c),
               " db=", c.db, " sub=", c.pubsub.channels.size(),
               " psub=", c.pubsub.patterns.size(), " ssub=",
               c.pubsub.shard_channels.size(), " multi=",
               c.multi.active ? int64_t(c.multi.queue.size()) : int64_t(-1));
  core::Append(out, " qbuf=", b.qbuf, " qbuf-free=", b.qbuf_free, " argv-mem=", b.argv_mem,
               " multi-mem=0 rbs=0 rbp=0 obl=", b.obl, " oll=", b.oll, " omem=", b.omem,
               " tot-mem=", b.tot_mem, " events=r cmd=",
               c.last_command.empty() ? std::string_view("NULL") : c.last_command,
               c.last_subcommand.empty() ? "" : "|", c.last_subcommand,
               " user=", c.user != nullptr ? std::string_view(c.user->name) : "default",
               " redir=-1 resp=", c.resp3 ? 3 : 2, " lib-name=", c.lib_name,
               " lib-ver=", c.lib_ver, "\n");
}

// Redis' client types (getClientType): a monitor counts as normal.
enum class ClientType { kNormal, kPubSub, kOther };

// Redis' getClientTypeByName, with its error for an unknown name.
ClientType ReadClientType(ArgParser& p) {
  if (p.Check("normal")) return ClientType::kNormal;
  if (p.Check("pubsub")) return ClientType::kPubSub;
  if (p.Check("master") || p.Check("replica") || p.Check("slave")) {
    return ClientType::kOther;  // no client has it here
  }
  p.Fail(core::Concat("ERR Unknown client type '", p.Peek(), "'"));
  return ClientType::kOther;
}

ClientType TypeOf(const ConnectionState& c) {
  return c.pubsub.count() > 0 ? ClientType::kPubSub : ClientType::kNormal;
}

void ReplyText(core::ReplyBuilder& rb, std::string_view text) {
  if (rb.resp3()) {
    rb.Verbatim(text, "txt");
  } else {
    rb.Bulk(text);
  }
}

void ClientId(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(int64_t(ctx.conn.id)); }

void ClientGetName(ArgSlice, ConnContext& ctx) {
  if (ctx.conn.name.empty()) return ctx.rb.Null();
  ctx.rb.Bulk(ctx.conn.name);
}

void ClientSetName(ArgSlice args, ConnContext& ctx) {
  if (!ValidClientAttr(args[2])) return ctx.rb.Error(kClientNameErr);
  ctx.conn.name.assign(args[2].data(), args[2].size());
  ctx.rb.Ok();
}

void ClientInfo(ArgSlice, ConnContext& ctx) {
  std::string line;
  AppendClientLine(&line, ctx.conn, shard::NowMs());
  ReplyText(ctx.rb, line);
}

// CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id [id ...]]
void ClientList(ArgSlice args, ConnContext& ctx) {
  // As Redis 7.0: either one TYPE filter or one ID list, not both.
  std::optional<ClientType> type;
  std::vector<int64_t> ids;
  ArgParser p(args, 2);
  if (args.size() == 4 && p.Check("type", 1)) {
    type = ReadClientType(p);
  } else if (args.size() >= 4 && p.Check("id", 1)) {
    while (p.HasNext()) {
      ids.push_back(p.NextInt64("ERR Invalid client ID"));
    }
  } else if (args.size() != 2) {
    p.Fail(kSyntaxErr);
  }
  if (p.ReplyError(ctx.rb)) return;

  // Every thread formats its own clients; the lines are then ordered by id, like Redis' list.
  std::vector<std::vector<std::pair<uint64_t, std::string>>> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](Shard& s) {
    auto& out = per_thread[s.id()];
    const int64_t now = shard::NowMs();
    for (const ConnectionState* c : ServerThreadState::current().connections()) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), int64_t(c->id)) == ids.end()) continue;
      if (type && TypeOf(*c) != *type) continue;
      std::string line;
      AppendClientLine(&line, *c, now);
      out.emplace_back(c->id, std::move(line));
    }
  });
  std::vector<std::pair<uint64_t, std::string>> lines;
  for (auto& v : per_thread) {
    for (auto& l : v) lines.push_back(std::move(l));
  }
  std::sort(lines.begin(), lines.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string text;
  for (const auto& l : lines) text += l.second;
  ReplyText(ctx.rb, text);
}

// Which clients CLIENT KILL closes.
struct KillFilter {
  std::optional<uint64_t> id;
  std::optional<std::string> addr, laddr;
  std::optional<ClientType> type;
  std::optional<int64_t> max_age_s;
  std::optional<std::string> user;
  bool skip_me = true;

  bool Matches(const ConnectionState& c, const ConnectionState& me, int64_t now_ms) const {
    if (skip_me && &c == &me) return false;
    if (id && c.id != *id) return false;
    if (addr && c.addr != *addr) return false;
    if (laddr && c.laddr != *laddr) return false;
    if (type && TypeOf(c) != *type) return false;
    if (max_age_s && (now_ms - c.created_ms) / 1000 < *max_age_s) return false;
    return !user || (c.user != nullptr && c.user->name == *user);
  }
};

// Closes the matching clients on every thread (each thread closes its own); returns how many.
// The caller itself, when it matches, closes after its reply.
size_t KillClients(const KillFilter& filter, ConnContext& ctx) {
  std::vector<size_t> killed(shard::shard_set->size(), 0);
  ConnectionState& me = ctx.conn;
  shard::shard_set->AwaitAll([&](Shard& s) {
    const int64_t now = shard::NowMs();
    for (ConnectionState* c : ServerThreadState::current().connections()) {
      if (c->killed || !filter.Matches(*c, me, now)) continue;
      ++killed[s.id()];
      if (c == &me) {
        me.close_after_reply = true;  // the caller's own thread: this lambda runs inline there
      } else {
        c->push->Kill();
      }
    }
  });
  size_t total = 0;
  for (size_t n : killed) total += n;
  return total;
}

// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends the wait of a client blocked in BLPOP & co., XREAD
// BLOCK or WAIT, on whichever thread it lives: 1 if it was blocked, 0 otherwise.
void ClientUnblock(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 4) return ctx.rb.Error(SubcommandSyntaxError(args));
  bool with_error = false;
  if (args.size() == 4) {
    if (core::EqualsIgnoreCase(args[3], "error")) {
      with_error = true;
    } else if (!core::EqualsIgnoreCase(args[3], "timeout")) {
      return ctx.rb.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    }
  }
  int64_t id;
  if (!core::ParseInt64(args[2], &id)) return ctx.rb.Error(kNotIntegerErr);
  // The client's own thread ends its wait (nothing about a client is touched elsewhere). This
  // command's reply then waits (Dispatch: moves.Wait) until the unblocked command is over.
  std::vector<char> unblocked(shard::shard_set->size(), 0);
  shard::shard_set->AwaitAll([&](Shard& s) {
    for (ConnectionState* c : ServerThreadState::current().connections()) {
      if (int64_t(c->id) == id && c->blocked != nullptr) {
        unblocked[s.id()] = c->blocked->Unblock(with_error, &ctx.conn.handed_off);
      }
    }
  });
  ctx.rb.Integer(std::count(unblocked.begin(), unblocked.end(), 1));
}

// CLIENT KILL ip:port | CLIENT KILL <filter> <value> ... (ID, ADDR, LADDR, TYPE, USER, SKIPME,
// MAXAGE).
void ClientKill(ArgSlice args, ConnContext& ctx) {
  KillFilter filter;
  if (args.size() == 3) {
    // The old form: one address, the caller included; +OK or an error.
    filter.addr = std::string(args[2]);
    filter.skip_me = false;
    if (KillClients(filter, ctx) == 0) return ctx.rb.Error("ERR No such client");
    return ctx.rb.Ok();
  }
  // Every filter takes a value: one left without it is a syntax error, as in Redis.
  ArgParser p(args, 2);
  while (p.HasNext()) {
    if (p.Check("id", 1)) {
      filter.id = uint64_t(p.NextInRange(1, INT64_MAX, "ERR client-id should be greater than 0"));
    } else if (p.Check("type", 1)) {
      filter.type = ReadClientType(p);
    } else if (p.Check("addr", 1)) {
      filter.addr = std::string(p.Next());
    } else if (p.Check("laddr", 1)) {
      filter.laddr = std::string(p.Next());
    } else if (p.Check("user", 1)) {
      const std::string_view user = p.Next();
      if (FindAclUser(user) == nullptr) p.Fail(core::Concat("ERR No such user '", user, "'"));
      filter.user = std::string(user);
    } else if (p.Check("skipme", 1)) {
      if (p.Check("yes")) {
        filter.skip_me = true;
      } else if (p.Check("no")) {
        filter.skip_me = false;
      } else {
        p.Fail(kSyntaxErr);
      }
    } else if (p.Check("maxage", 1)) {
      filter.max_age_s = p.Next<int64_t>();
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  ctx.rb.Integer(int64_t(KillClients(filter, ctx)));
}

// CLIENT PAUSE timeout [WRITE|ALL]
void ClientPause(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 4) return ctx.rb.Error(SubcommandSyntaxError(args));
  PauseType type = PauseType::kAll;
  // Redis reads the mode before the timeout: a bad mode is reported first.
  ArgParser mode(args, 3);
  if (mode.Check("write")) {
    type = PauseType::kWrite;
  } else if (mode.HasNext() && !mode.Check("all")) {
    return ctx.rb.Error("ERR CLIENT PAUSE mode must be WRITE or ALL");
  }
  ArgParser p(args, 2);
  const int64_t ms = p.NextInt64("ERR timeout is not an integer or out of range");
  if (p.ReplyError(ctx.rb)) return;
  if (ms < 0) return ctx.rb.Error("ERR timeout is negative");
  if (ms > 0) PauseClients(shard::NowMs() + ms, type);
  ctx.rb.Ok();
}

void ClientUnpause(ArgSlice, ConnContext& ctx) {
  UnpauseClients();
  ctx.rb.Ok();
}

// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP reply nothing themselves.
void ClientReply(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 2);
  if (p.Check("on")) {
    ctx.conn.reply_off = false;
    ctx.conn.reply_skip_next = false;
    ctx.conn.reply_skip = false;
    ctx.rb.Ok();
  } else if (p.Check("off")) {
    ctx.conn.reply_off = true;
  } else if (p.Check("skip")) {
    if (!ctx.conn.reply_off) ctx.conn.reply_skip_next = true;
  } else {
    ctx.rb.Error(kSyntaxErr);
  }
}

// CLIENT SETINFO LIB-NAME name | LIB-VER version (Redis 7.2; clients send it on connect).
void ClientSetInfo(ArgSlice args, ConnContext& ctx) {
  std::string_view attr = args[2], value = args[3];
  ArgParser p(args, 2);
  std::string* target;
  if (p.Check("lib-name")) {
    target = &ctx.conn.lib_name;
  } else if (p.Check("lib-ver")) {
    target = &ctx.conn.lib_ver;
  } else {
    return ctx.rb.Error(core::Concat("ERR Unrecognized option '", attr, "'"));
  }
  if (!ValidClientAttr(value)) {
    return ctx.rb.Error(core::Concat("ERR ", core::ToLower(attr),
                                     " cannot contain spaces, newlines or special characters."));
  }
  target->assign(value.data(), value.size());
  ctx.rb.Ok();
}

// CLIENT NO-EVICT / NO-TOUCH ON|OFF: stored and shown in CLIENT LIST's flags (client eviction
// and LRU tracking do not exist yet, so nothing else reads them).
template <bool ConnectionState::*kFlag>
void ClientOnOff(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 2);
  if (p.Check("on")) {
    ctx.conn.*kFlag = true;
  } else if (p.Check("off")) {
    ctx.conn.*kFlag = false;
  } else {
    return ctx.rb.Error(kSyntaxErr);
  }
  ctx.rb.Ok();
}

void ClientHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CLIENT",
            {"CACHING (YES|NO)",
             "    In OPTIN/OPTOUT tracking mode: whether the next command's keys are tracked.",
             "GETNAME", "    Return the name of the current connection.", "GETREDIR",
             "    Return the client ID tracking redirects to (0: none, -1: tracking is off).",
             "ID",
             "    Return the ID of the current connection.", "INFO",
             "    Return information about the current connection.",
             "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
             "    Return information about client connections.", "SETNAME <name>",
             "    Assign a name to the current connection.", "SETINFO (LIB-NAME|LIB-VER) <value>",
             "    Record the client library's name or version.", "NO-EVICT (ON|OFF)",
             "    Protect the current connection from eviction.", "NO-TOUCH (ON|OFF)",
             "    Do not alter the last access time of keys this connection reads.",
             "KILL <ip:port>", "    Kill connection made from <ip:port>.",
             "KILL <option> <value> [<option> <value> [...]]",
             "    Kill connections. Options are:",
             "    * ADDR (<ip:port>|<unixsocket>:0)",
             "      Kill connections made from the specified address",
             "    * LADDR (<ip:port>|<unixsocket>:0)",
             "      Kill connections made to specified local address",
             "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
             "    * USER <username>", "      Kill connections authenticated by <username>.",
             "    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
             "    * ID <client-id>", "      Kill connections by client id.",
             "    * MAXAGE <maxage>", "      Kill connections older than the specified age.",
             "PAUSE <timeout> [WRITE|ALL]",
             "    Suspend all, or just write, clients for <timeout> milliseconds.",
             "UNBLOCK <clientid> [TIMEOUT|ERROR]",
             "    End the wait of a blocked client, as a timeout or with an error.",
             "UNPAUSE", "    Stop the current client pause, resuming traffic.",
             "REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
             "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
             "         [OPTIN] [OPTOUT] [NOLOOP]",
             "    Turn client-side caching invalidations on or off for this connection.",
             "TRACKINGINFO", "    Show this connection's tracking settings."});
}

constexpr uint32_t kConnSub = kNoScript | kLoading | kStale;
constexpr std::string_view kAdminConnAcl = "admin slow dangerous connection";

constexpr SubCommand kClientSubs[] = {
    {.name = "id", .arity = 2, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientId,
     .docs = {.group = "connection", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Returns the connection's unique ID."}},
    {.name = "getname", .arity = 2, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientGetName,
     .docs = {.group = "connection", .since = "2.6.9", .complexity = "O(1)",
              .summary = "Returns the connection's name."}},
    {.name = "setname", .arity = 3, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientSetName,
     .docs = {.group = "connection", .since = "2.6.9", .complexity = "O(1)",
              .summary = "Sets the connection's name."}},
    {.name = "setinfo", .arity = 4, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientSetInfo,
     .docs = {.group = "connection", .since = "7.2.0", .complexity = "O(1)",
              .summary = "Sets information about the client library."}},
    {.name = "info", .arity = 2, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientInfo,
     .docs = {.group = "connection", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Returns information about the connection.",
              .tips = "nondeterministic_output"}},
    {.name = "list", .arity = -2, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientList,
     .docs = {.group = "connection", .since = "2.4.0",
              .complexity = "O(N) where N is the number of client connections",
              .summary = "Lists open connections.", .tips = "nondeterministic_output"}},
    {.name = "no-evict", .arity = 3, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientOnOff<&ConnectionState::no_evict>,
     .docs = {.group = "connection", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Sets the client eviction mode of the connection."}},
    {.name = "no-touch", .arity = 3, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientOnOff<&ConnectionState::no_touch>,
     .docs = {.group = "connection", .since = "7.2.0", .complexity = "O(1)",
              .summary = "Controls whether the connection's commands alter the last access time of "
                         "keys."}},
    {.name = "getredir", .arity = 2, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientGetRedir,
     .docs = {.group = "connection", .since = "6.0.0", .complexity = "O(1)",
              .summary = "Returns the client ID tracking notifications are redirected to."}},
    {.name = "tracking", .arity = -3, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientTracking,
     .docs = {.group = "connection", .since = "6.0.0",
              .complexity = "O(1). Some options may introduce additional complexity.",
              .summary = "Turns client-side caching invalidations on or off for the connection."}},
    {.name = "caching", .arity = 3, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientCaching,
     .docs = {.group = "connection", .since = "6.0.0", .complexity = "O(1)",
              .summary = "Says whether the next command's keys are tracked (OPTIN/OPTOUT modes)."}},
    {.name = "trackinginfo", .arity = 2, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientTrackingInfo,
     .docs = {.group = "connection", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Returns the connection's client-side caching settings."}},
    {.name = "kill", .arity = -3, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientKill,
     .docs = {.group = "connection", .since = "2.4.0",
              .complexity = "O(N) where N is the number of client connections",
              .summary = "Terminates open connections."}},
    {.name = "unblock", .arity = -3, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientUnblock,
     .docs = {.group = "connection", .since = "5.0.0",
              .complexity = "O(log N) where N is the number of client connections",
              .summary = "Ends another client's wait in a blocking command."}},
    {.name = "pause", .arity = -3, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientPause,
     .docs = {.group = "connection", .since = "2.9.50", .complexity = "O(1)",
              .summary = "Suspends commands processing."}},
    {.name = "unpause", .arity = 2, .flags = kAdminSub, .acl_categories = kAdminConnAcl,
     .handler = ClientUnpause,
     .docs = {.group = "connection", .since = "6.2.0",
              .complexity = "O(N) Where N is the number of paused clients",
              .summary = "Resumes processing commands from paused clients."}},
    {.name = "reply", .arity = 3, .flags = kConnSub, .acl_categories = "slow connection",
     .handler = ClientReply,
     .docs = {.group = "connection", .since = "3.2.0", .complexity = "O(1)",
              .summary = "Instructs the server whether to reply to commands."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow connection",
     .handler = ClientHelp,
     .docs = {.group = "connection", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about subcommands."}},
};

constexpr Container kClient = {"client", kClientSubs};

void CmdClient(ArgSlice args, ConnContext& ctx) { DispatchSub(kClient, args, ctx); }

}  // namespace

bool ValidClientAttr(std::string_view s) {
  for (char c : s) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

std::string ClientInfoLine(const ConnectionState& c) {
  std::string line;
  AppendClientLine(&line, c, shard::NowMs());
  line.pop_back();  // the '\n'
  return line;
}

void RegisterClientFamily(CommandRegistry* r) {
  r->Register({.name = "client", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdClient,
               .docs = {.group = "connection", .since = "2.4.0",
                        .complexity = "Depends on subcommand.",
                        .summary = "Commands about client connections."},
               .container = &kClient});
}

}  // namespace shardis::server

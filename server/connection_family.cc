// Commands about the client's own connection: PING, ECHO, QUIT, HELLO, SELECT, RESET.
#include <optional>

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>

#include "core/number.h"
#include "core/string_util.h"
#include "server/auth.h"
#include "server/arg_parser.h"
#include "server/client_tracking.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/monitor.h"
#include "server/multi_family.h"
#include "server/pubsub.h"
#include "server/server_state.h"
#include "shard/shard.h"

namespace shardis::server {

namespace {

void Ping(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 2) return ctx.rb.Error(WrongArgsError("ping"));
  if (!ctx.conn.resp3 && ctx.conn.pubsub.count() > 0) {
    // A RESP2 subscriber cannot tell a reply from a message: Redis answers in the message shape.
    ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk("pong");
    return ctx.rb.Bulk(args.size() == 2 ? args[1] : "");
  }
  if (args.size() == 2) return ctx.rb.Bulk(args[1]);
  ctx.rb.SimpleString("PONG");
}

void Echo(ArgSlice args, ConnContext& ctx) { ctx.rb.Bulk(args[1]); }

void Quit(ArgSlice, ConnContext& ctx) {
  ctx.rb.Ok();
  ctx.conn.close_after_reply = true;
}

void Select(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 1);
  const int index = ReadDbIndex(p);
  if (p.ReplyError(ctx.rb)) return;
  ctx.conn.db = index;
  ctx.rb.Ok();
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
// In Redis 7.2's order (helloCommand): the version, then the options left to right (a bad name
// is refused where it stands), then AUTH, then the name and the protocol: a HELLO that fails
// changes nothing on the connection.
void Hello(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 1);
  const int64_t version =
      p.HasNext() ? p.NextInt64("ERR Protocol version is not an integer or out of range")
                  : (ctx.conn.resp3 ? 3 : 2);
  if (p.ok() && (version < 2 || version > 3)) p.Fail("NOPROTO unsupported protocol version");
  std::optional<std::string_view> new_name;
  std::string_view user, password;
  bool auth = false;
  while (p.HasNext()) {
    if (p.Check("AUTH", 2)) {
      user = p.Next();
      password = p.Next();
      auth = true;
    } else if (p.Check("SETNAME", 1)) {
      new_name = p.Next();
      if (!ValidClientAttr(*new_name)) p.Fail(kClientNameErr);
    } else {
      p.Fail(core::Concat("ERR Syntax error in HELLO option '", p.Peek(), "'"));
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  if (auth) {
    if (!AuthenticateConnection(ctx.conn, user, password, args[0])) {
      return ctx.rb.Error(kWrongPassErr);
    }
  }
  if (!ctx.conn.authenticated && AuthRequired()) {
    // Redis 7.2's text (7.0 wrote "HELLO AUTH <user> <pass>").
    return ctx.rb.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
        "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
        "RESP protocol version at the same time");
  }
  if (new_name) ctx.conn.name = std::string(*new_name);
  ctx.conn.resp3 = version == 3;
  ctx.rb.set_resp3(ctx.conn.resp3);
  ctx.rb.MapHeader(7);
  ctx.rb.Bulk("server");
  ctx.rb.Bulk("redis");
  ctx.rb.Bulk("version");
  ctx.rb.Bulk(kRedisVersion);
  ctx.rb.Bulk("proto");
  ctx.rb.Integer(version);
  ctx.rb.Bulk("id");
  ctx.rb.Integer(int64_t(ctx.conn.id));
  ctx.rb.Bulk("mode");
  ctx.rb.Bulk("standalone");
  ctx.rb.Bulk("role");
  ctx.rb.Bulk("master");
  ctx.rb.Bulk("modules");
  ctx.rb.ArrayHeader(0);
}

// RESET: the connection as if it were new: no MULTI, no WATCH, no subscriptions, no tracking,
// database 0, RESP2, no name, not monitoring, replies on, and not authenticated when a password
// is set.
void Reset(ArgSlice, ConnContext& ctx) {
  DiscardMulti(ctx.conn);
  UnwatchAll(ctx.conn);
  UnsubscribeAll(ctx.conn);
  DisableTracking(ctx.conn);
  StopMonitoring(ctx.conn);
  ResetConnectionUser(ctx.conn);
  ctx.conn.reply_off = false;
  ctx.conn.reply_skip_next = false;
  ctx.conn.no_evict = false;
  ctx.conn.no_touch = false;
  ctx.conn.db = 0;
  ctx.conn.resp3 = false;
  ctx.conn.name.clear();
  ctx.rb.set_resp3(false);
  ctx.rb.SimpleString("RESET");
}

}  // namespace

void RegisterConnectionFamily(CommandRegistry* r) {
  r->Register({.name = "reset", .arity = 1,
               .flags = kFast | kStale | kNoScript | kLoading | kNoAuth | kAllowBusy,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = &Reset,
               .docs = {.group = "connection", .since = "6.2.0", .complexity = "O(1)",
                        .summary = "Returns the connection to its state right after connecting."}});
  r->Register({.name = "ping", .arity = -1, .flags = kFast, .keys = kNoKeys,
               .acl_categories = "fast connection", .on_conn = &Ping,
               .docs = {.group = "connection", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the server's liveliness response.",
                        .tips = "request_policy:all_shards response_policy:all_succeeded"}});
  r->Register({.name = "echo", .arity = 2, .flags = kFast | kStale | kLoading, .keys = kNoKeys,
               .acl_categories = "fast connection", .on_conn = &Echo,
               .docs = {.group = "connection", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the given string."}});
  r->Register({.name = "quit", .arity = -1,
               .flags = kFast | kStale | kNoScript | kLoading | kNoAuth | kAllowBusy,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = &Quit,
               .docs = {.group = "connection", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Closes the connection."}});
  r->Register({.name = "select", .arity = 2, .flags = kFast | kStale | kLoading, .keys = kNoKeys,
               .acl_categories = "fast connection", .on_conn = &Select,
               .docs = {.group = "connection", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Changes the selected database."}});
  r->Register({.name = "hello", .arity = -1,
               .flags = kFast | kStale | kNoScript | kLoading | kNoAuth | kAllowBusy,
               .keys = kNoKeys, .acl_categories = "fast connection", .on_conn = &Hello,
               .docs = {.group = "connection", .since = "6.0.0", .complexity = "O(1)",
                        .summary = "Handshakes with the server (protocol version)."}});
}

}  // namespace shardis::server

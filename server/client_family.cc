// CLIENT ID / GETNAME / SETNAME / INFO / LIST / SETINFO / NO-EVICT / NO-TOUCH / GETREDIR / HELP.
//
// CLIENT LIST gathers the clients with one hop to every thread: each thread formats the lines of
// its own connections into its slot of a vector the calling fiber owns.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

// A name or library attribute may only hold printable ASCII without spaces, as in Redis.
bool ValidClientAttr(std::string_view s) {
  for (char c : s) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// One CLIENT LIST / CLIENT INFO line, with Redis 7's fields (the buffer figures are not tracked).
// Call on the client's own thread.
void AppendClientLine(std::string* out, const ConnectionState& c, int64_t now_ms) {
  core::Append(out, "id=", c.id, " addr=", c.addr, " laddr=", c.laddr, " fd=", c.fd,
               " name=", c.name, " age=", (now_ms - c.created_ms) / 1000,
               " idle=", (now_ms - c.last_interaction_ms) / 1000, " flags=N db=", c.db,
               " sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0");
  core::Append(out, " rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=",
               c.last_command.empty() ? std::string_view("NULL") : c.last_command,
               " user=default redir=-1 resp=", c.resp3 ? 3 : 2, " lib-name=", c.lib_name,
               " lib-ver=", c.lib_ver, "\n");
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
  if (!ValidClientAttr(args[2])) {
    return ctx.rb.Error("ERR Client names cannot contain spaces, newlines or special characters.");
  }
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
  bool none = false;  // a type no client has here (master, replica, pubsub)
  std::vector<int64_t> ids;
  if (args.size() == 4 && core::EqualsIgnoreCase(args[2], "type")) {
    std::string_view type = args[3];
    if (core::EqualsIgnoreCase(type, "master") || core::EqualsIgnoreCase(type, "replica") ||
        core::EqualsIgnoreCase(type, "slave") || core::EqualsIgnoreCase(type, "pubsub")) {
      none = true;
    } else if (!core::EqualsIgnoreCase(type, "normal")) {
      return ctx.rb.Error(core::Concat("ERR Unknown client type '", type, "'"));
    }
  } else if (args.size() >= 4 && core::EqualsIgnoreCase(args[2], "id")) {
    for (size_t i = 3; i < args.size(); ++i) {
      int64_t id;
      if (!core::ParseInt64(args[i], &id)) return ctx.rb.Error("ERR Invalid client ID");
      ids.push_back(id);
    }
  } else if (args.size() != 2) {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (none) return ReplyText(ctx.rb, "");

  // Every thread formats its own clients; the lines are then ordered by id, like Redis' list.
  std::vector<std::vector<std::pair<uint64_t, std::string>>> per_thread(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](Shard& s) {
    auto& out = per_thread[s.id()];
    const int64_t now = shard::NowMs();
    for (const ConnectionState* c : ServerThreadState::current().connections()) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), int64_t(c->id)) == ids.end()) continue;
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

// CLIENT SETINFO LIB-NAME name | LIB-VER version (Redis 7.2; clients send it on connect).
void ClientSetInfo(ArgSlice args, ConnContext& ctx) {
  std::string_view attr = args[2], value = args[3];
  std::string* target;
  if (core::EqualsIgnoreCase(attr, "lib-name")) {
    target = &ctx.conn.lib_name;
  } else if (core::EqualsIgnoreCase(attr, "lib-ver")) {
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

// CLIENT NO-EVICT / NO-TOUCH ON|OFF: accepted; nothing is evicted and LRU is not tracked yet.
void ClientOnOff(ArgSlice args, ConnContext& ctx) {
  if (!core::EqualsIgnoreCase(args[2], "on") && !core::EqualsIgnoreCase(args[2], "off")) {
    return ctx.rb.Error(kSyntaxErr);
  }
  ctx.rb.Ok();
}

void ClientGetRedir(ArgSlice, ConnContext& ctx) { ctx.rb.Integer(-1); }

void ClientHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CLIENT",
            {"GETNAME", "    Return the name of the current connection.", "GETREDIR",
             "    Return the client ID tracking redirects to (-1: none).", "ID",
             "    Return the ID of the current connection.", "INFO",
             "    Return information about the current connection.",
             "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
             "    Return information about client connections.", "SETNAME <name>",
             "    Assign a name to the current connection.", "SETINFO (LIB-NAME|LIB-VER) <value>",
             "    Record the client library's name or version.", "NO-EVICT (ON|OFF)",
             "    Protect the current connection from eviction.", "NO-TOUCH (ON|OFF)",
             "    Do not alter the last access time of keys this connection reads."});
}

constexpr uint32_t kConnSub = kNoScript | kLoading | kStale;
constexpr std::string_view kAdminConnAcl = "admin slow dangerous connection";

constexpr SubCommand kClientSubs[] = {
    {"id", 2, kConnSub, "slow connection", "", "5.0.0", "Returns the connection's unique ID.",
     ClientId},
    {"getname", 2, kConnSub, "slow connection", "", "2.6.9", "Returns the connection's name.",
     ClientGetName},
    {"setname", 3, kConnSub, "slow connection", "", "2.6.9", "Sets the connection's name.",
     ClientSetName},
    {"setinfo", 4, kConnSub, "slow connection", "", "7.2.0",
     "Sets information about the client library.", ClientSetInfo},
    {"info", 2, kConnSub, "slow connection", "nondeterministic_output", "6.2.0",
     "Returns information about the connection.", ClientInfo},
    {"list", -2, kAdminSub, kAdminConnAcl, "nondeterministic_output", "2.4.0",
     "Lists open connections.", ClientList},
    {"no-evict", 3, kAdminSub, kAdminConnAcl, "", "7.0.0",
     "Sets the client eviction mode of the connection.", ClientOnOff},
    {"no-touch", 3, kConnSub, "slow connection", "", "7.2.0",
     "Controls whether the connection's commands alter the last access time of keys.", ClientOnOff},
    {"getredir", 2, kConnSub, "slow connection", "", "6.0.0",
     "Returns the client ID tracking notifications are redirected to.", ClientGetRedir},
    {"help", 2, kLoading | kStale, "slow connection", "", "5.0.0",
     "Returns helpful text about subcommands.", ClientHelp},
};

constexpr Container kClient = {"client", kClientSubs};

void CmdClient(ArgSlice args, ConnContext& ctx) { DispatchSub(kClient, args, ctx); }

}  // namespace

void RegisterClientFamily(CommandRegistry* r) {
  r->Register({"client", -2, 0, 0, 0, 0, "slow", nullptr, CmdClient});
  RegisterContainer(kClient);
}

}  // namespace shardis::server

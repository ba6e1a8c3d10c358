// CONFIG GET / SET / RESETSTAT / REWRITE / HELP.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/glob.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/command_stats.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

// The parameters CONFIG GET knows, with their (fixed, for now) values.
std::vector<std::pair<std::string_view, std::string>> ConfigTable() {
  const ServerInfo& info = Info();
  char cwd[4096];
  std::string dir = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
  return {
      {"appendfsync", "everysec"},
      {"appendonly", "no"},
      {"bind", info.bind},
      {"client-query-buffer-limit", "1073741824"},
      {"cluster-enabled", "no"},
      {"daemonize", "no"},
      {"databases", core::Concat(Shard::kNumDbs)},
      {"dbfilename", "dump.rdb"},
      {"dir", dir},
      {"enable-debug-command", "yes"},
      {"hz", "10"},
      {"io-threads", "1"},
      {"maxclients", "10000"},
      {"maxmemory", "0"},
      {"maxmemory-clients", "0"},
      {"maxmemory-eviction-tenacity", "10"},
      {"maxmemory-policy", "noeviction"},
      {"maxmemory-samples", "5"},
      {"notify-keyspace-events", ""},
      {"port", core::Concat(info.port)},
      {"protected-mode", "no"},
      {"proto-max-bulk-len", "536870912"},
      {"replica-read-only", "yes"},
      {"requirepass", ""},
      {"save", ""},
      {"slowlog-log-slower-than", "10000"},
      {"slowlog-max-len", "128"},
      {"tcp-keepalive", "300"},
      {"timeout", "0"},
  };
}

void ConfigGet(ArgSlice args, ConnContext& ctx) {
  auto table = ConfigTable();
  std::vector<bool> matched(table.size(), false);
  size_t n = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    for (size_t j = 0; j < table.size(); ++j) {
      if (!matched[j] && core::GlobMatch(args[i], table[j].first, /*nocase=*/true)) {
        matched[j] = true;
        ++n;
      }
    }
  }
  ctx.rb.MapHeader(n);
  for (size_t j = 0; j < table.size(); ++j) {
    if (!matched[j]) continue;
    ctx.rb.Bulk(table[j].first);
    ctx.rb.Bulk(table[j].second);
  }
}

// Nothing is settable yet: setting a known parameter to the value it already has succeeds (clients
// and test suites do that), anything else is refused rather than silently ignored.
void ConfigSet(ArgSlice args, ConnContext& ctx) {
  if (args.size() % 2 != 0) return ctx.rb.Error(WrongArgsError("config|set"));
  auto table = ConfigTable();
  for (size_t i = 2; i < args.size(); i += 2) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const auto& p) { return core::EqualsIgnoreCase(p.first, args[i]); });
    if (it == table.end()) {
      return ctx.rb.Error(core::Concat(
          "ERR Unknown option or number of arguments for CONFIG SET - '", args[i], "'"));
    }
    if (!core::EqualsIgnoreCase(it->second, args[i + 1])) {
      return ctx.rb.Error(core::Concat("ERR Unsupported CONFIG parameter: ", args[i]));
    }
  }
  ctx.rb.Ok();
}

void ConfigResetStat(ArgSlice, ConnContext& ctx) {
  shard::shard_set->AwaitAll([](Shard& s) {
    ServerThreadState::current().stats() = ThreadStats{};
    s.stats() = shard::ShardStats{};
    ResetThreadCommandStats();  // commandstats, errorstats, latencystats
  });
  ctx.rb.Ok();
}

void ConfigRewrite(ArgSlice, ConnContext& ctx) {
  ctx.rb.Error("ERR The server is running without a config file");
}

void ConfigHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CONFIG",
            {"GET <pattern> [<pattern> ...]",
             "    Return the parameters matching the glob-like patterns and their values.",
             "SET <directive> <value> [<directive> <value> ...]",
             "    Set configuration directives (only to their current values, for now).",
             "RESETSTAT", "    Reset the statistics reported by INFO.", "REWRITE",
             "    Rewrite the configuration file (there is none)."});
}

constexpr std::string_view kAdminAcl = "admin slow dangerous";

constexpr SubCommand kConfigSubs[] = {
    {"get", -3, kAdminSub, kAdminAcl, "", "2.0.0", "Returns the values of parameters.", ConfigGet},
    {"set", -4, kAdminSub, kAdminAcl, "request_policy:all_nodes response_policy:all_succeeded",
     "2.0.0", "Sets parameters.", ConfigSet},
    {"resetstat", 2, kAdminSub, kAdminAcl, "", "2.0.0", "Resets the server's statistics.",
     ConfigResetStat},
    {"rewrite", 2, kAdminSub, kAdminAcl, "", "2.8.0", "Rewrites the configuration file.",
     ConfigRewrite},
    {"help", 2, kLoading | kStale, "slow", "", "5.0.0", "Returns helpful text about subcommands.",
     ConfigHelp},
};

constexpr Container kConfig = {"config", kConfigSubs};

void CmdConfig(ArgSlice args, ConnContext& ctx) { DispatchSub(kConfig, args, ctx); }

}  // namespace

void RegisterConfigFamily(CommandRegistry* r) {
  r->Register({"config", -2, 0, 0, 0, 0, "slow", nullptr, CmdConfig});
  RegisterContainer(kConfig);
}

}  // namespace shardis::server

// CONFIG GET / SET / RESETSTAT / REWRITE / HELP.
#include <glog/logging.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/glob.h"
#include "core/string_util.h"
#include "io/proactor.h"
#include "server/command.h"
#include "server/command_stats.h"
#include "server/config_registry.h"
#include "server/config_rewrite.h"
#include "server/persistence_status.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/eviction.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

using shard::Shard;

void ConfigGet(ArgSlice args, ConnContext& ctx) {
  const auto& params = Config().params();
  // The name each matched parameter is shown with: a pattern without glob characters is an exact
  // (case-insensitive) name and Redis echoes it as the client wrote it; the first match wins.
  std::vector<std::string_view> shown(params.size());
  size_t n = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    const bool exact = args[i].find_first_of("*?[\\") == std::string_view::npos;
    for (size_t j = 0; j < params.size(); ++j) {
      if (!shown[j].empty()) continue;
      if (params[j].hidden && !exact) continue;  // as Redis: only by its exact name
      if (exact ? core::EqualsIgnoreCase(args[i], params[j].name)
                : core::GlobMatch(args[i], params[j].name, /*nocase=*/true)) {
        shown[j] = exact ? args[i] : params[j].name;
        ++n;
      }
    }
  }
  ctx.rb.MapHeader(n);
  for (size_t j = 0; j < params.size(); ++j) {
    if (shown[j].empty()) continue;
    ctx.rb.Bulk(shown[j]);
    ctx.rb.Bulk(params[j].get());
  }
}

// As Redis 7: every pair is validated before any is applied, so a bad pair leaves every
// parameter as it was. Setters cannot fail once a value is validated (they store into atomics);
// only an apply function (the TLS context) can, and then the old values are put back. Redis'
// order of checks: first the names of every pair (unknown, immutable, protected, loading,
// duplicate; shown as the client wrote them), then the values (shown with the parameter's own
// name).
void ConfigSet(ArgSlice args, ConnContext& ctx) {
  if (args.size() % 2 != 0) return ctx.rb.Error(WrongArgsError("config|set"));
  auto failed = [&](std::string_view name, std::string_view why) {
    ctx.rb.Error(core::Concat("ERR CONFIG SET failed (possibly related to argument '", name,
                              "') - ", why));
  };
  std::vector<const ConfigParam*> params;
  for (size_t i = 2; i < args.size(); i += 2) {
    const ConfigParam* p = Config().Find(args[i]);
    if (p == nullptr) {
      return ctx.rb.Error(core::Concat(
          "ERR Unknown option or number of arguments for CONFIG SET - '", args[i], "'"));
    }
    if ((!p->is_mutable || !p->set) &&
        !(p->accepts_own_value && IsCurrentValue(*p, args[i + 1]))) {
      return failed(args[i], "can't set immutable config");
    }
    if (p->is_protected && !ProtectedConfigAllowed(ctx.conn.addr)) {
      return failed(args[i], "can't set protected config");
    }
    if (p->deny_loading && Persistence().loading.load(std::memory_order_relaxed)) {
      return ctx.rb.Error("LOADING Redis is loading the dataset in memory");
    }
    if (std::find(params.begin(), params.end(), p) != params.end()) {
      return failed(args[i], "duplicate parameter");
    }
    params.push_back(p);
  }
  std::vector<ConfigValue> values;
  for (size_t k = 0; k < params.size(); ++k) {
    const ConfigParam& p = *params[k];
    absl::StatusOr<ConfigValue> v = ConfigRegistry::Parse(p, args[3 + 2 * k]);
    if (!v.ok()) return failed(p.name, std::string(v.status().message()));
    if (p.check) {
      if (absl::Status s = p.check(*v); !s.ok()) return failed(p.name, std::string(s.message()));
    }
    values.push_back(*std::move(v));
  }
  std::vector<std::string> old_values;
  for (const ConfigParam* p : params) old_values.push_back(p->get());
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->set) params[k]->set(values[k]);  // a fixed parameter keeps its value
  }
  // Redis' apply functions, each once; a failure restores every value and re-applies them.
  std::vector<absl::Status (*)()> applied;
  for (const ConfigParam* p : params) {
    if (p->apply == nullptr || std::ranges::find(applied, p->apply) != applied.end()) continue;
    applied.push_back(p->apply);
    if (absl::Status s = p->apply(); !s.ok()) {
      for (size_t k = 0; k < params.size(); ++k) {
        absl::StatusOr<ConfigValue> old = ConfigRegistry::Parse(*params[k], old_values[k]);
        if (params[k]->set && old.ok()) params[k]->set(*old);
      }
      for (auto fn : applied) (void)fn();
      return failed(p->name, std::string(s.message()));
    }
  }
  if (std::any_of(params.begin(), params.end(),
                  [](const ConfigParam* p) { return p->name == "maxmemory"; })) {
    shard::EvictOverMaxMemory();
  }
  ctx.rb.Ok();
}

void ConfigResetStat(ArgSlice, ConnContext& ctx) {
  shard::shard_set->AwaitAll([](Shard& s) {
    ServerThreadState::current().stats() = ThreadStats{};
    // The dirty counter is no statistic but what the save schedule counts: Redis' RESETSTAT
    // keeps it too.
    const uint64_t dirty = s.stats().dirty;
    s.stats() = shard::ShardStats{};
    s.stats().dirty = dirty;
    ResetThreadCommandStats();  // commandstats, errorstats, latencystats
    for (int i = 0; i < Shard::kNumDbs; ++i) s.db(i).ResetStats();
    s.defrag().ResetStats();
    s.lazy_free().ResetStats();  // lazyfreed_objects, as Redis' lazyfreeResetStats
    io::Proactor::current()->ResetCycleStats();
  });
  ctx.rb.Ok();
}

void ConfigRewrite(ArgSlice, ConnContext& ctx) {
  if (Info().config_file.empty()) {
    return ctx.rb.Error("ERR The server is running without a config file");
  }
  if (absl::Status s = RewriteConfigFile(Info().config_file); !s.ok()) {
    LOG(WARNING) << "CONFIG REWRITE failed: " << s.message();
    return ctx.rb.Error(core::Concat("ERR Rewriting config file: ", s.message()));
  }
  LOG(INFO) << "CONFIG REWRITE executed with success.";
  ctx.rb.Ok();
}

void ConfigHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "CONFIG",
            {"GET <pattern> [<pattern> ...]",
             "    Return the parameters matching the glob-like patterns and their values.",
             "SET <directive> <value> [<directive> <value> ...]",
             "    Set the configuration directives to the given values.",
             "RESETSTAT", "    Reset the statistics reported by INFO.", "REWRITE",
             "    Rewrite the configuration file."});
}

constexpr std::string_view kAdminAcl = "admin slow dangerous";

constexpr SubCommand kConfigSubs[] = {
    {.name = "get", .arity = -3, .flags = kAdminSub, .acl_categories = kAdminAcl,
     .handler = ConfigGet,
     .docs = {.group = "server", .since = "2.0.0",
              .complexity = "O(N) when N is the number of configuration parameters provided",
              .summary = "Returns the values of parameters."}},
    {.name = "set", .arity = -4, .flags = kAdminSub, .acl_categories = kAdminAcl,
     .handler = ConfigSet,
     .docs = {.group = "server", .since = "2.0.0",
              .complexity = "O(N) when N is the number of configuration parameters provided",
              .summary = "Sets parameters.",
              .tips = "request_policy:all_nodes response_policy:all_succeeded"}},
    {.name = "resetstat", .arity = 2, .flags = kAdminSub, .acl_categories = kAdminAcl,
     .handler = ConfigResetStat,
     .docs = {.group = "server", .since = "2.0.0", .complexity = "O(1)",
              .summary = "Resets the server's statistics."}},
    {.name = "rewrite", .arity = 2, .flags = kAdminSub, .acl_categories = kAdminAcl,
     .handler = ConfigRewrite,
     .docs = {.group = "server", .since = "2.8.0", .complexity = "O(1)",
              .summary = "Rewrites the configuration file."}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow",
     .handler = ConfigHelp,
     .docs = {.group = "server", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Returns helpful text about subcommands."}},
};

constexpr Container kConfig = {"config", kConfigSubs};

void CmdConfig(ArgSlice args, ConnContext& ctx) { DispatchSub(kConfig, args, ctx); }

}  // namespace

void RegisterConfigFamily(CommandRegistry* r) {
  r->Register({.name = "config", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdConfig,
               .docs = {.group = "server", .since = "2.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands about configuration."},
               .container = &kConfig});
}

}  // namespace shardis::server

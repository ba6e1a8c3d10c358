#include "server/config_registry.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::server {
namespace {

// What CONFIG SET of `text` would store (as CONFIG GET shows it), or Redis' error text.
std::string Parsed(const ConfigParam& p, std::string_view text) {
  absl::StatusOr<ConfigValue> v = ConfigRegistry::Parse(p, text);
  return v.ok() ? ConfigRegistry::Format(p, *v) : std::string(v.status().message());
}

TEST(ConfigRegistry, PercentMemoryParameterAsRedis) {
  ConfigParam p{.name = "maxmemory-clients", .type = ConfigType::kMemory, .min = -100,
                .max = INT64_MAX, .percent = true};
  EXPECT_EQ(Parsed(p, "0"), "0");
  EXPECT_EQ(Parsed(p, "1mb"), "1048576");
  EXPECT_EQ(Parsed(p, "10%"), "10%");
  EXPECT_EQ(Parsed(p, "100%"), "100%");
  EXPECT_EQ(Parsed(p, "200%"), "percentage argument must be less or equal to 100");
  EXPECT_EQ(Parsed(p, "-1%"), "argument must be a memory or percent value");
  EXPECT_EQ(Parsed(p, "%"), "argument must be a memory or percent value");
  EXPECT_EQ(Parsed(p, "abc"), "argument must be a memory or percent value");
  p.percent = false;  // a plain memory parameter knows no percentages
  EXPECT_EQ(Parsed(p, "10%"), "argument must be a memory value");
}

TEST(ConfigRegistry, AcceptedParametersStoreTheirValue) {
  ConfigRegistry r;
  RegisterFixedConfigParams(r);
  const ConfigParam* backlog = r.Find("repl-backlog-size");
  ASSERT_NE(backlog, nullptr);
  EXPECT_TRUE(backlog->is_mutable);
  EXPECT_EQ(backlog->get(), "1048576");
  backlog->set(*ConfigRegistry::Parse(*backlog, "10000002"));
  EXPECT_EQ(backlog->get(), "10000002");
  EXPECT_EQ(Parsed(*backlog, "0"), "argument must be between 1 and 9223372036854775807 inclusive");

  // An alias shares its main parameter's value.
  const ConfigParam* slave = r.Find("slave-priority");
  ASSERT_NE(slave, nullptr);
  slave->set(*ConfigRegistry::Parse(*slave, "7"));
  EXPECT_EQ(r.Find("replica-priority")->get(), "7");

  // Redis' formatting of the multi-word ones.
  const ConfigParam* sigint = r.Find("shutdown-on-sigint");
  sigint->set(*ConfigRegistry::Parse(*sigint, "NOW nosave"));
  EXPECT_EQ(sigint->get(), "nosave now");
  EXPECT_EQ(Parsed(*sigint, "save nosave"),
            "shutdown options SAVE and NOSAVE can't be used simultaneously");
  const ConfigParam* oom = r.Find("oom-score-adj-values");
  EXPECT_EQ(Parsed(*oom, "1 2"), "wrong number of arguments");
  oom->set(*ConfigRegistry::Parse(*oom, "01 -2 3"));
  EXPECT_EQ(oom->get(), "1 -2 3");

  // Immutable in Redis: no setter, whatever the value.
  const ConfigParam* daemonize = r.Find("daemonize");
  EXPECT_FALSE(daemonize->is_mutable);
}

}  // namespace
}  // namespace shardis::server

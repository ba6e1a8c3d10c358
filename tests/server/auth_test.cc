#include "server/auth.h"

#include <gtest/gtest.h>

#include "server/command.h"

namespace shardis::server {
namespace {

// Users are made of rules over the command table, which is registered once per process: ctest
// runs each test in a process of its own, so every test asks for it.
void RegisterCommandsOnce() {
  static const bool registered = [] {
    RegisterAllFamilies(&Registry());
    return true;
  }();
  (void)registered;
}

class AclUserTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { RegisterCommandsOnce(); }
};

TEST(AuthTest, RuntimePassword) {
  RegisterCommandsOnce();
  EXPECT_EQ(RequirePass(), "");  // --requirepass defaults to empty: nopass
  EXPECT_FALSE(AuthRequired());
  EXPECT_TRUE(CheckPassword("default", "anything"));
  EXPECT_FALSE(CheckPassword("someone", "anything"));

  SetRequirePass("pw");  // what CONFIG SET requirepass calls
  EXPECT_EQ(RequirePass(), "pw");
  EXPECT_TRUE(AuthRequired());
  EXPECT_TRUE(CheckPassword("default", "pw"));
  EXPECT_FALSE(CheckPassword("default", "pw2"));
  EXPECT_FALSE(CheckPassword("default", ""));
  EXPECT_FALSE(CheckPassword("other", "pw"));

  SetRequirePass("");
  EXPECT_FALSE(AuthRequired());
}

// The rules of one user and their canonical text (Redis 7.2's ACL LIST).
std::string Describe(std::vector<std::string_view> rules, std::string* error = nullptr) {
  AclUser u("u");
  const std::string err = ApplyAclRules(&u, rules);
  if (error != nullptr) *error = err;
  return DescribeAclUser(u);
}

TEST_F(AclUserTest, CanonicalText) {
  EXPECT_EQ(Describe({}), "off sanitize-payload resetchannels -@all");
  EXPECT_EQ(Describe({"on", "nopass", "~*", "&*", "+@all"}),
            "on nopass sanitize-payload ~* &* +@all");
  // A rule replaces an earlier one on the same command, and a command's those on its subcommands.
  EXPECT_EQ(Describe({"+get", "+config|get", "-@hash", "-get", "+config"}),
            "off sanitize-payload resetchannels -@all -@hash -get +config");
  EXPECT_EQ(Describe({"+@all", "-flushall", "%R~r*", "%W~w*", "%R~w*", "&c"}),
            "off sanitize-payload %R~r* ~w* resetchannels &c +@all -flushall");
  EXPECT_EQ(Describe({"(+get ~a*)", "clearselectors", "(~b* +set)"}),
            "off sanitize-payload resetchannels -@all (~b* resetchannels -@all +set)");
  EXPECT_EQ(Describe({"+@all", "~*", "on", "reset"}), "off sanitize-payload resetchannels -@all");
}

TEST_F(AclUserTest, Errors) {
  std::string err;
  Describe({"~*", "~x"}, &err);
  EXPECT_EQ(err.substr(0, 43), "Error in ACL SETUSER modifier '~x': Adding ");
  Describe({"+nosuch"}, &err);
  EXPECT_EQ(err, "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL");
  Describe({"(+get", "~a"}, &err);
  EXPECT_EQ(err, "Unmatched parenthesis in acl selector starting at '(+get'.");
  Describe({"%RX~a"}, &err);
  EXPECT_EQ(err, "Error in ACL SETUSER modifier '%RX~a': Syntax error");
}

TEST_F(AclUserTest, Checks) {
  AclUser u("u");
  const std::vector<std::string_view> rules = {"+get", "%R~r*", "resetchannels", "&n.*"};
  ASSERT_EQ(ApplyAclRules(&u, rules), "");
  EXPECT_FALSE(u.unrestricted);
  const CommandSpec& get = *Registry().Find("get");
  const std::vector<std::string_view> ok = {"get", "r1"}, bad_key = {"get", "w1"};
  EXPECT_EQ(CheckAclCommand(u, get, nullptr, ok).denial, AclDenial::kNone);
  const AclCheck denied = CheckAclCommand(u, get, nullptr, bad_key);
  EXPECT_EQ(denied.denial, AclDenial::kKey);
  EXPECT_EQ(denied.arg, 1);
  const std::vector<std::string_view> set = {"set", "r1", "v"};
  EXPECT_EQ(CheckAclCommand(u, *Registry().Find("set"), nullptr, set).denial, AclDenial::kCommand);
  EXPECT_TRUE(AclAllowsChannel(u, "n.x", false));
  EXPECT_FALSE(AclAllowsChannel(u, "n.x*", true));  // a pattern must be the same pattern
  EXPECT_TRUE(AclAllowsChannel(u, "n.*", true));
}

// SPUBLISH's and SSUBSCRIBE's shard channels are NOT_KEY key specs: checked as channels, never
// against key patterns (Redis' ACL key check skips NOT_KEY specs).
TEST_F(AclUserTest, ShardChannelsAreNoKeys) {
  AclUser u("u");
  const std::vector<std::string_view> rules = {"+@all", "~k*", "resetchannels", "&c*"};
  ASSERT_EQ(ApplyAclRules(&u, rules), "");
  const std::vector<std::string_view> publish = {"spublish", "c1", "m"};
  EXPECT_EQ(CheckAclCommand(u, *Registry().Find("spublish"), nullptr, publish).denial,
            AclDenial::kNone);
  const std::vector<std::string_view> subscribe = {"ssubscribe", "c1", "d1"};
  const AclCheck denied = CheckAclCommand(u, *Registry().Find("ssubscribe"), nullptr, subscribe);
  EXPECT_EQ(denied.denial, AclDenial::kChannel);
  EXPECT_EQ(denied.arg, 2);
}

// acl-pubsub-default: the channels a new user, a new selector and 'reset' start from.
TEST_F(AclUserTest, PubsubDefault) {
  SetAclNewUsersAllowAllChannels(true);
  EXPECT_EQ(Describe({"(+get)"}), "off sanitize-payload &* -@all (&* -@all +get)");
  EXPECT_EQ(Describe({"resetchannels", "&x", "reset"}), "off sanitize-payload &* -@all");
  SetAclNewUsersAllowAllChannels(false);
  EXPECT_EQ(Describe({"allchannels", "reset"}), "off sanitize-payload resetchannels -@all");
}

}  // namespace
}  // namespace shardis::server

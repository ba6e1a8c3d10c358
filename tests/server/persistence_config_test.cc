#include "server/persistence_config.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/config_registry.h"

DECLARE_string(enable_protected_configs);

namespace shardis::server {
namespace {

std::string SaveError(std::string_view text) {
  absl::StatusOr<std::vector<SaveRule>> rules = ParseSaveRules(text);
  return rules.ok() ? "ok" : std::string(rules.status().message());
}

TEST(ParseSaveRules, PairsOfSecondsAndChanges) {
  EXPECT_EQ(*ParseSaveRules("3600 1 300 100 60 10000"),
            (std::vector<SaveRule>{{3600, 1}, {300, 100}, {60, 10000}}));
  EXPECT_EQ(*ParseSaveRules(""), std::vector<SaveRule>{});  // save "": snapshots off
  EXPECT_EQ(*ParseSaveRules("1 0"), (std::vector<SaveRule>{{1, 0}}));
}

TEST(ParseSaveRules, ReadsTokensAsStrtollDoes) {
  // As Redis: each token must be used up by strtoll, which takes a sign and leading blanks,
  // clamps on overflow, and reads an empty token as 0 (a valid change count).
  EXPECT_EQ(*ParseSaveRules("+5 -0"), (std::vector<SaveRule>{{5, 0}}));
  EXPECT_EQ(*ParseSaveRules("\t1 1"), (std::vector<SaveRule>{{1, 1}}));
  EXPECT_EQ(*ParseSaveRules("1 "), (std::vector<SaveRule>{{1, 0}}));
  EXPECT_EQ(*ParseSaveRules("99999999999999999999 1"),
            (std::vector<SaveRule>{{INT64_MAX, 1}}));
}

TEST(ParseSaveRules, RefusesWhatRedisRefuses) {
  for (std::string_view bad : {"100", "0 1", "-1 1", "1 -1", "abc 1", "1 abc", "1  1", "1 1 ",
                               " ", " 1 1", "1.5 1", "0x10 1", "1 1 2", "1\t1"}) {
    EXPECT_EQ(SaveError(bad), "Invalid save parameters") << bad;
  }
}

TEST(FormatSaveRules, AsConfigGetShowsThem) {
  EXPECT_EQ(FormatSaveRules({{3600, 1}, {300, 100}}), "3600 1 300 100");
  EXPECT_EQ(FormatSaveRules({}), "");
}

TEST(ValidateDbFilename, AFileNameNotAPath) {
  EXPECT_TRUE(ValidateDbFilename("dump.rdb").ok());
  EXPECT_TRUE(ValidateDbFilename("").ok());  // Redis allows an empty name
  EXPECT_TRUE(ValidateDbFilename("..").ok());
  for (std::string_view bad : {"a/b", "/dump.rdb", "a\\b"}) {
    EXPECT_EQ(ValidateDbFilename(bad).message(), "dbfilename can't be a path, just a filename");
  }
}

TEST(ValidateDir, ChdirsErrorTexts) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  EXPECT_TRUE(ValidateDir(tmp.string()).ok());
  EXPECT_TRUE(ValidateDir(".").ok());
  EXPECT_EQ(ValidateDir("").message(), "No such file or directory");
  EXPECT_EQ(ValidateDir((tmp / "shardis-no-such-dir").string()).message(),
            "No such file or directory");
  const std::filesystem::path file = tmp / "shardis-persistence-config-test-file";
  std::ofstream(file) << "x";
  EXPECT_EQ(ValidateDir(file.string()).message(), "Not a directory");
  EXPECT_EQ(ValidateDir((file / "sub").string()).message(), "Not a directory");
  std::filesystem::remove(file);
}

TEST(ProtectedConfigAllowed, AsRedisEnableProtectedConfigs) {
  const std::string saved = FLAGS_enable_protected_configs;
  FLAGS_enable_protected_configs = "no";
  EXPECT_FALSE(ProtectedConfigAllowed("127.0.0.1:5000"));
  FLAGS_enable_protected_configs = "yes";
  EXPECT_TRUE(ProtectedConfigAllowed("10.0.0.1:5000"));
  FLAGS_enable_protected_configs = "local";
  EXPECT_TRUE(ProtectedConfigAllowed("127.0.0.1:5000"));
  EXPECT_TRUE(ProtectedConfigAllowed("::1:5000"));
  // Redis compares the address text: other loopback addresses are not "local".
  EXPECT_FALSE(ProtectedConfigAllowed("127.0.0.2:5000"));
  EXPECT_FALSE(ProtectedConfigAllowed("10.0.0.1:5000"));
  FLAGS_enable_protected_configs = saved;
}

}  // namespace
}  // namespace shardis::server

#include "server/command_line_config.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

// Flags of this test binary, standing for shardis' gflags.
DEFINE_bool(test_bool, false, "a bool flag (--logtostderr)");
DEFINE_int32(test_level, 0, "a flag given with a single dash (-v 2)");
DEFINE_string(test_pass, "", "a string flag (--requirepass)");

namespace shardis::server {
namespace {

struct Taken {
  std::string lines;              // the config lines
  std::vector<std::string> left;  // what gflags gets, after the program name
};

// A command line `shardis args...` as main gets it.
struct CommandLine {
  explicit CommandLine(std::vector<std::string> a) : args(std::move(a)) {
    args.insert(args.begin(), "shardis");
    for (std::string& arg : args) argv.push_back(arg.data());
    argc = int(argv.size());
  }
  std::vector<std::string> Left() const { return {argv.begin() + 1, argv.begin() + argc}; }

  std::vector<std::string> args;
  std::vector<char*> argv;
  int argc;
};

Taken Take(std::vector<std::string> args) {
  CommandLine line(std::move(args));
  Taken t;
  t.lines = TakeConfigArguments(&line.argc, line.argv.data());
  t.left = line.Left();
  return t;
}

TEST(CommandLineConfig, NameAndValuesBecomeOneQuotedLine) {
  Taken t = Take({"--save", "60", "1000", "300", "10", "--appendonly", "yes"});
  EXPECT_EQ(t.lines, "save \"60\" \"1000\" \"300\" \"10\"\nappendonly \"yes\"");
  EXPECT_TRUE(t.left.empty());
  // A value with spaces, quotes or control bytes stays one word, quoted as Redis quotes it.
  EXPECT_EQ(Take({"--dbfilename", "my \"dump\"\n.rdb"}).lines,
            "dbfilename \"my \\\"dump\\\"\\n.rdb\"");
  // A value may start with a single dash.
  EXPECT_EQ(Take({"--slowlog-log-slower-than", "-1"}).lines, "slowlog-log-slower-than \"-1\"");
}

TEST(CommandLineConfig, SaveWithoutValueIsSaveEmptyAsRedis) {
  EXPECT_EQ(Take({"--save", ""}).lines, "save \"\"");
  EXPECT_EQ(Take({"--save", "--port", "7000"}).lines, "save \"\"\nport \"7000\"");
  EXPECT_EQ(Take({"--port", "7000", "--save"}).lines, "port \"7000\"\nsave \"\"");
}

TEST(CommandLineConfig, OneArgumentHoldingAWholeLine) {
  Taken t = Take({"--port 6380", "--save 60 1000", "2000", "--test_bool"});
  EXPECT_EQ(t.lines, "port 6380\nsave 60 1000 \"2000\"");
  EXPECT_EQ(t.left, std::vector<std::string>{"--test_bool"});
}

TEST(CommandLineConfig, GflagsFormsStayInArgvInOrder) {
  Taken t = Take({"--test_level=7000", "--test_bool", "--maxmemory", "1gb", "-test_level", "2",
                  "--test_level=3", "--flagfile", "/x/flags", "--test_pass=a b"});
  EXPECT_EQ(t.lines, "maxmemory \"1gb\"");
  EXPECT_EQ(t.left, (std::vector<std::string>{"--test_level=7000", "--test_bool", "-test_level",
                                              "2", "--test_level=3", "--flagfile", "/x/flags",
                                              "--test_pass=a b"}));
}

TEST(CommandLineConfig, AssignmentToAParameterWithoutAGflagIsItsLine) {
  // activedefrag has no gflag: `--activedefrag=yes` is `--activedefrag yes`, not an unknown flag.
  Taken t = Take({"--activedefrag=yes", "--test_level=3", "--notify-keyspace-events=", "--x=a b"});
  EXPECT_EQ(t.lines, "activedefrag \"yes\"\nnotify-keyspace-events \"\"\nx \"a b\"");
  EXPECT_EQ(t.left, std::vector<std::string>{"--test_level=3"});
}

TEST(CommandLineConfig, ValuesEndAtASingleDashFlag) {
  Taken t = Take({"--hz", "10", "-test_level", "2", "--maxclients", "-notest_bool"});
  EXPECT_EQ(t.lines, "hz \"10\"");
  EXPECT_EQ(t.left,
            (std::vector<std::string>{"-test_level", "2", "--maxclients", "-notest_bool"}));
}

TEST(CommandLineConfig, NothingAfterDoubleDashIsTaken) {
  Taken t = Take({"--hz", "10", "--", "--port", "1"});
  EXPECT_EQ(t.lines, "hz \"10\"");
  EXPECT_EQ(t.left, (std::vector<std::string>{"--", "--port", "1"}));
}

TEST(CommandLineConfig, LoneDashFirstOrLastIsStdin) {
  auto take_stdin = [](std::vector<std::string> args) {
    CommandLine line(std::move(args));
    const bool taken = TakeStdinArgument(&line.argc, line.argv.data());
    return std::pair{taken, line.Left()};
  };
  using Args = std::vector<std::string>;
  EXPECT_EQ(take_stdin({"-", "--port", "1"}), std::pair(true, Args{"--port", "1"}));
  EXPECT_EQ(take_stdin({"--port", "1", "-"}), std::pair(true, Args{"--port", "1"}));
  EXPECT_EQ(take_stdin({"-"}), std::pair(true, Args{}));
  EXPECT_EQ(take_stdin({"--port", "-", "1"}), std::pair(false, Args{"--port", "-", "1"}));
  EXPECT_EQ(take_stdin({}), std::pair(false, Args{}));
}

TEST(CommandLineConfig, StrayArgumentIsLeftForTheCaller) {
  Taken t = Take({"--test_bool", "--test_level=1", "stray"});
  EXPECT_EQ(t.lines, "");
  EXPECT_EQ(t.left, (std::vector<std::string>{"--test_bool", "--test_level=1", "stray"}));
}

}  // namespace
}  // namespace shardis::server

// Keyspace notifications on one thread: the setting's parse and CONFIG GET form (Redis'
// keyspaceEventsStringToFlags / FlagsToString), and the events the Db itself publishes (new,
// expired), delivered through the publisher the server installs.
#include "shard/keyspace_events.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/compact_value.h"
#include "shard/db.h"

namespace shardis::shard {
namespace {

std::vector<std::pair<std::string, std::string>>& Published() {
  static std::vector<std::pair<std::string, std::string>> published;
  return published;
}

size_t Record(std::string_view channel, std::string_view message) {
  Published().emplace_back(channel, message);
  return 1;
}

class KeyspaceEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetKeyspaceEventPublisher(Record, [](unsigned) { return true; });
    Published().clear();
  }
  void TearDown() override { Select(""); }
  static void Select(std::string_view classes) {
    SetKeyspaceEvents(*ParseKeyspaceEvents(classes));
    LoadKeyspaceEventsOnThread();
  }
};

TEST_F(KeyspaceEventsTest, ParsesAndShowsAsRedis) {
  EXPECT_EQ(ParseKeyspaceEvents(""), 0u);
  EXPECT_EQ(ParseKeyspaceEvents("KEA"), kNotifyKeyspace | kNotifyKeyevent | kNotifyAll);
  EXPECT_EQ(ParseKeyspaceEvents("x?"), std::nullopt);
  EXPECT_EQ(ParseKeyspaceEvents("a"), std::nullopt);  // case matters
  EXPECT_EQ(FormatKeyspaceEvents(*ParseKeyspaceEvents("KEA")), "AKE");
  EXPECT_EQ(FormatKeyspaceEvents(*ParseKeyspaceEvents("Eg$lshzxetdK")), "AKE");
  EXPECT_EQ(FormatKeyspaceEvents(*ParseKeyspaceEvents("AnmKE")), "AKEm");  // n hides after A
  EXPECT_EQ(FormatKeyspaceEvents(*ParseKeyspaceEvents("nd$E")), "$dnE");
  EXPECT_EQ(FormatKeyspaceEvents(0), "");
}

TEST_F(KeyspaceEventsTest, NothingWithoutTheClass) {
  Select("KE$");
  NotifyKeyspaceEvent(kNotifyGeneric, "del", "k", 0);
  EXPECT_TRUE(Published().empty());
  NotifyKeyspaceEvent(kNotifyString, "set", "k", 3);
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(Published(),
            (std::vector<P>{{"__keyspace@3__:k", "set"}, {"__keyevent@3__:set", "k"}}));
}

TEST_F(KeyspaceEventsTest, DbPublishesNewAndExpired) {
  Select("Kxn");
  Db db;
  bool inserted;
  const std::string key = "key";
  const uint64_t hash = core::HashBytes(key);
  Db::Iterator it = db.FindOrInsert(key, hash, 1000, &inserted);
  db.SetExpire(it, key, hash, 2000);
  db.FindOrInsert(key, hash, 1500, &inserted);  // still live: not new
  EXPECT_FALSE(Db::Found(db.Find(key, hash, 2000)));
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(Published(),
            (std::vector<P>{{"__keyspace@0__:key", "new"}, {"__keyspace@0__:key", "expired"}}));
}

}  // namespace
}  // namespace shardis::shard

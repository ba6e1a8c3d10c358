#include "server/auth.h"

#include <gtest/gtest.h>

namespace shardis::server {
namespace {

TEST(AuthTest, RuntimePassword) {
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

}  // namespace
}  // namespace shardis::server

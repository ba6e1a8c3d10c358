#include "core/glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace shardis::core {
namespace {

TEST(GlobTest, Basics) {
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_TRUE(GlobMatch("abc", "abc"));
  EXPECT_FALSE(GlobMatch("abc", "abd"));
  EXPECT_FALSE(GlobMatch("abc", "ab"));
  EXPECT_FALSE(GlobMatch("ab", "abc"));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("user:*", "user:1000"));
  EXPECT_FALSE(GlobMatch("user:*", "use"));
  EXPECT_TRUE(GlobMatch("*:*", "a:b"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(GlobMatch("a*b*c", "abc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXXbYY"));
  EXPECT_TRUE(GlobMatch("a**", "a"));
  EXPECT_TRUE(GlobMatch("*a", "aaa"));
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo"));
  EXPECT_TRUE(GlobMatch("h*llo", "hllo"));
}

TEST(GlobTest, Classes) {
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo"));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_TRUE(GlobMatch("h[b-a]llo", "hallo"));  // reversed range
  EXPECT_FALSE(GlobMatch("h[a-b]llo", "hcllo"));
  EXPECT_TRUE(GlobMatch("[\\]]", "]"));
  EXPECT_TRUE(GlobMatch("[\\-]", "-"));
  EXPECT_TRUE(GlobMatch("[a-]", "^"));  // "a-]" is the range ']'..'a', as in Redis
  EXPECT_FALSE(GlobMatch("[a-]", "-"));
  EXPECT_FALSE(GlobMatch("[]", "]"));  // "[]" is an empty class, matching nothing
  EXPECT_TRUE(GlobMatch("[ab", "b"));  // unterminated class runs to the end of the pattern
  EXPECT_FALSE(GlobMatch("[ab", "bc"));
  EXPECT_TRUE(GlobMatch("[^", "x"));  // empty negated class
  EXPECT_FALSE(GlobMatch("[", "x"));
}

TEST(GlobTest, Escapes) {
  EXPECT_TRUE(GlobMatch("\\*", "*"));
  EXPECT_FALSE(GlobMatch("\\*", "a"));
  EXPECT_TRUE(GlobMatch("a\\?", "a?"));
  EXPECT_FALSE(GlobMatch("a\\?", "ab"));
  EXPECT_TRUE(GlobMatch("\\", "\\"));  // a trailing backslash is literal
  EXPECT_TRUE(GlobMatch("\\[a]", "[a]"));
}

TEST(GlobTest, NoCase) {
  EXPECT_TRUE(GlobMatch("HeLLo", "hello", true));
  EXPECT_FALSE(GlobMatch("HeLLo", "hello", false));
  EXPECT_TRUE(GlobMatch("[A-C]x", "bX", true));
  EXPECT_TRUE(GlobMatch("[abc]", "B", true));
  EXPECT_FALSE(GlobMatch("[\\A]", "a", true));  // an escaped class member ignores nocase
  EXPECT_TRUE(GlobMatch("\\A", "a", true));     // but a top-level escape does not
  EXPECT_FALSE(GlobMatch("[Z-a]", "z", true));  // bounds lower-cased after ordering: empty
}

// Outcomes of SCAN/KEYS MATCH on redis-server 7.0.15.
TEST(GlobTest, RedisQuirks) {
  EXPECT_FALSE(GlobMatch("*", ""));  // HSCAN MATCH ** skips an empty field
  EXPECT_FALSE(GlobMatch("**", ""));
  EXPECT_TRUE(GlobMatch("[a", "a"));
  EXPECT_TRUE(GlobMatch("[^", "a"));
  // Signed char ranges: 0xE9 is -23, inside [\x80-a] i.e. -128..97.
  EXPECT_TRUE(GlobMatch("[\x80-a]", "\xe9"));
  EXPECT_FALSE(GlobMatch("[a-\xff]", "b"));  // -1..97
}

TEST(GlobTest, BinarySafe) {
  const std::string pat("a\0*", 3);
  EXPECT_TRUE(GlobMatch(pat, std::string("a\0bc", 4)));
  EXPECT_FALSE(GlobMatch(pat, "abc"));
}

TEST(GlobTest, PathologicalPatternsAreFast) {
  std::string pattern;
  for (int i = 0; i < 5000; ++i) pattern += "a*";
  pattern += "b";
  const std::string str(20000, 'a');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(GlobMatch(pattern, str));
  // Past kMaxGlobStars runs of '*', Redis 7.2 gives up even where a match exists.
  EXPECT_FALSE(GlobMatch(pattern.substr(0, pattern.size() - 1), str));
  std::string stars_and_any;  // Redis' regression test for CVE-2024-31228
  for (int i = 0; i < 50000; ++i) stars_and_any += "*?";
  EXPECT_FALSE(GlobMatch(stars_and_any, std::string(50000, 'a')));
  EXPECT_FALSE(GlobMatch(std::string(100000, '*') + "b", std::string(100000, 'a')));
  EXPECT_TRUE(GlobMatch(std::string(100000, '*') + "a", std::string(100000, 'a')));
  EXPECT_FALSE(GlobMatch("*" + std::string(1000, 'a') + "b", std::string(20000, 'a')));
  // Quadratic at worst (like Redis): far below a second here, and no recursion at all.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Redis 7.2 counts the runs of '*' followed by something: up to 1000 match, the 1001st fails.
TEST(GlobTest, NestedStarBound) {
  const std::string str(3000, 'a');
  auto stars = [](size_t runs) {
    std::string p;
    for (size_t i = 0; i < runs; ++i) p += "*a";
    return p;
  };
  EXPECT_TRUE(GlobMatch(stars(kMaxGlobStars), str));
  EXPECT_FALSE(GlobMatch(stars(kMaxGlobStars + 1), str));
  EXPECT_TRUE(GlobMatch(stars(kMaxGlobStars) + "*", str));  // a trailing run is free
  EXPECT_FALSE(GlobMatch(stars(kMaxGlobStars + 1) + "*", str));
  EXPECT_TRUE(GlobMatch(stars(kMaxGlobStars) + "**", str));
  EXPECT_TRUE(GlobMatch(std::string(5000, '*'), str));  // one run, however long
}

}  // namespace
}  // namespace shardis::core

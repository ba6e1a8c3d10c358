// Glob-style matching for KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET and friends.

#pragma once

#include <string_view>

namespace shardis::core {

// Matches str against pattern with the results of Redis 7.0's stringmatchlen():
//   *        any run of characters        ?      any one character
//   [abc]    one of a, b, c               [^ab]  any character but a and b
//   [a-z]    a range (reversed [z-a] too) \x     the character x, literally
// Redis quirks kept on purpose: an unterminated class ("[ab") runs to the end of the pattern; in a
// class "a-]" is a range ending at ']'; an escaped character inside a class ignores `nocase`;
// range bounds compare as signed chars (as on x86-64); and an EMPTY str only matches an empty
// pattern ("*" does not match "") - KEYS and SCAN special-case the pattern "*" themselves.
//
// Iterative, O(|pattern| * |str|) in the worst case and O(1) stack: when the text after a '*'
// fails, only the most recent '*' is retried one character further. That is enough because every
// other pattern element consumes exactly one character (the argument behind Redis'
// skipLongerMatches). So "a*a*a*...b" cannot blow a fiber stack or take exponential time, and,
// unlike Redis 7.0.9+, we need no cut-off for patterns with more than 1000 stars.
bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase = false);

}  // namespace shardis::core

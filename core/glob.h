// Glob-style matching for KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET and friends.

#pragma once

#include <cstddef>
#include <string_view>

namespace shardis::core {

// Redis 7.2's stringmatchlen() gives up (no match) when matching would pass more than this many
// runs of '*' that are followed by something: each such run is one recursion level there
// (CVE-2024-31228). A trailing run is not counted, it matches at once.
inline constexpr size_t kMaxGlobStars = 1000;

// Matches str against pattern with the results of Redis 7.2's stringmatchlen():
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
// skipLongerMatches). So "a*a*a*...b" cannot blow a fiber stack or take exponential time. The
// kMaxGlobStars cut-off is kept only so results equal Redis': with no recursion we do not need it.
bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase = false);

}  // namespace shardis::core

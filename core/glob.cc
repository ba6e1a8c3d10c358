#include "core/glob.h"

#include <cstddef>
#include <utility>

namespace shardis::core {

namespace {

// Redis compares plain `char`s, which are signed on x86-64; range checks on bytes >= 0x80 depend
// on that, so we reproduce it explicitly instead of relying on this platform's char.
int Signed(char c) { return static_cast<signed char>(c); }

// tolower() in the "C" locale Redis runs in: ASCII letters only.
int Lower(int c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

bool SameChar(char a, char b, bool nocase) {
  return nocase ? Lower(Signed(a)) == Lower(Signed(b)) : a == b;
}

// Matches the character class whose '[' is at p[i] against c. Sets *next to the index just past
// the class; an unterminated class ends with the pattern.
bool MatchClass(std::string_view p, size_t i, char c, bool nocase, size_t* next) {
  const size_t n = p.size();
  size_t j = i + 1;
  const bool negate = j < n && p[j] == '^';
  if (negate) ++j;
  bool match = false;
  for (; j < n; ++j) {
    if (p[j] == '\\' && n - j >= 2) {
      ++j;
      if (p[j] == c) match = true;  // exact, even with nocase (as Redis)
    } else if (p[j] == ']') {
      break;
    } else if (n - j >= 3 && p[j + 1] == '-') {
      int lo = Signed(p[j]);
      int hi = Signed(p[j + 2]);
      int ch = Signed(c);
      if (lo > hi) std::swap(lo, hi);
      // Redis lower-cases after ordering the bounds, so [Z-a] matches nothing with nocase.
      if (nocase) {
        lo = Lower(lo);
        hi = Lower(hi);
        ch = Lower(ch);
      }
      if (ch >= lo && ch <= hi) match = true;
      j += 2;
    } else if (SameChar(p[j], c, nocase)) {
      match = true;
    }
  }
  *next = j < n ? j + 1 : n;
  return match != negate;
}

// Matches the single pattern element (anything but '*') at p[i] against c.
bool MatchElement(std::string_view p, size_t i, char c, bool nocase, size_t* next) {
  switch (p[i]) {
    case '?':
      *next = i + 1;
      return true;
    case '[':
      return MatchClass(p, i, c, nocase, next);
    case '\\':
      if (i + 1 < p.size()) ++i;  // a trailing backslash matches itself
      [[fallthrough]];
    default:
      *next = i + 1;
      return SameChar(p[i], c, nocase);
  }
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase) {
  const std::string_view& p = pattern;
  const std::string_view& s = str;
  // stringmatchlen's main loop never runs for an empty string, so only "" matches it.
  if (s.empty()) return p.empty();

  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t stars_passed = 0;  // runs of '*' behind pi, for Redis' nesting bound
  size_t pi = 0;
  size_t si = 0;
  size_t star_pi = kNone;  // pattern index just after the most recent run of '*'
  size_t star_si = 0;      // string index where that star's match currently ends
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      if (pi == p.size()) return true;  // a trailing star swallows the rest
      if (++stars_passed > kMaxGlobStars) return false;
      star_pi = pi;
      star_si = si;
      continue;
    }
    size_t next;
    if (pi < p.size() && MatchElement(p, pi, s[si], nocase, &next)) {
      pi = next;
      ++si;
      continue;
    }
    if (star_pi == kNone) return false;
    // Let the last star absorb one more character and retry the rest from there.
    pi = star_pi;
    si = ++star_si;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace shardis::core

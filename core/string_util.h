// Small string helpers on std::string_view. Debian 12's abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), so absl's string functions and its
// heterogeneous map lookup do not take std::string_view; these adapters close the gap.
#pragma once

#include <absl/hash/hash.h>
#include <absl/strings/ascii.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/string_view.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardis::core {

inline absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Transparent hash/equality so that maps keyed by std::string can be probed with a string_view
// without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return absl::HashOf(ToAbsl(s)); }
};
struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// C's isspace() in the "C" locale (Redis' isspace checks: space, \t, \n, \v, \f, \r), without
// the locale lookup.
inline bool IsCSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The words of a space-separated list ("write string slow"), as views into s.
std::vector<std::string_view> SplitWords(std::string_view s);

inline std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

inline std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_toupper(static_cast<unsigned char>(c));
  return out;
}

namespace internal {
template <typename T>
decltype(auto) AsAlphaNum(const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view> &&
                !std::is_convertible_v<const T&, absl::string_view>) {
    return ToAbsl(std::string_view(v));
  } else {
    return (v);
  }
}
}  // namespace internal

// absl::StrCat / StrAppend that also accept std::string_view.
template <typename... Args>
std::string Concat(const Args&... args) {
  return absl::StrCat(internal::AsAlphaNum(args)...);
}
template <typename... Args>
void Append(std::string* out, const Args&... args) {
  absl::StrAppend(out, internal::AsAlphaNum(args)...);
}

// Redis' sdscatrepr: `s` quoted, with C escapes for what is not printable (MONITOR lines, log
// lines that show client input).
void AppendRepr(std::string* out, std::string_view s);

}  // namespace shardis::core

// The manifest of Redis 7.0's multi-part AOF (the text file `appendonly.aof.manifest` in the AOF
// directory) and the names of the files it lists. No I/O: text in, text out; the server reads and
// writes the files.
//
// A manifest has one line per file, "file <name> seq <n> type <b|h|i>\n": at most one base file
// (a snapshot, in RDB or AOF format), the history files (a previous base and incr files, kept
// until they are deleted) and the incr files (commands after the base, oldest first). Parsing
// follows Redis' aofLoadManifestFromFile rule for rule, with its error texts; formatting writes
// the bytes Redis' getAofManifestAsString writes.
#pragma once

#include <absl/status/statusor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

struct AofFileInfo {
  // The manifest writes the type as this character.
  enum class Type : char { kBase = 'b', kHistory = 'h', kIncr = 'i' };

  std::string name;  // a file name in the AOF directory, never a path
  int64_t seq = 0;   // never 0 in a parsed manifest
  Type type = Type::kIncr;

  bool operator==(const AofFileInfo&) const = default;
};

struct AofManifest {
  std::optional<AofFileInfo> base;
  std::vector<AofFileInfo> history;  // in manifest order
  std::vector<AofFileInfo> incrs;    // in manifest order: strictly increasing seq
  // The seq of the base / of the last incr (0 without one): the next file gets one more.
  int64_t current_base_seq = 0;
  int64_t current_incr_seq = 0;

  bool operator==(const AofManifest&) const = default;
};

// Redis' limit on a manifest line, newline included (MANIFEST_MAX_LINE).
inline constexpr size_t kAofManifestMaxLine = 1024;

// Parses a manifest as Redis 7.0 loads it. Errors are InvalidArgument with Redis' text, after the
// line number where there is one: "at line 2: Found duplicate base file information". Redis' rules
// worth knowing: '#' starts a comment line; a blank line is an error; every line, the last one
// too, must end with '\n' within kAofManifestMaxLine bytes ("...contains too long line"); keys are
// case-insensitive, in any order, and unknown keys are ignored, but a line needs at least 6 words
// and an even number of them; `seq` is read like atoll (so "abc" is 0, which is invalid); `type`
// is the first character of its value; incr seqs must increase; an empty text is an error ("Found
// an empty AOF manifest"), a text with nothing but comments is an empty manifest.
absl::StatusOr<AofManifest> ParseAofManifest(std::string_view text);

// The manifest's text: the base, then the history, then the incr files, one line each; a name
// that needs it (a space, a quote, a byte that is not printable) is quoted as sdscatrepr does.
std::string FormatAofManifest(const AofManifest& manifest);

// ---- File names. `aof_filename` is the appendfilename setting ("appendonly.aof").

inline constexpr std::string_view kAofBaseSuffix = ".base";
inline constexpr std::string_view kAofIncrSuffix = ".incr";
inline constexpr std::string_view kAofRdbFormatSuffix = ".rdb";
inline constexpr std::string_view kAofAofFormatSuffix = ".aof";
inline constexpr std::string_view kAofManifestSuffix = ".manifest";
inline constexpr std::string_view kAofTempPrefix = "temp-";

// "appendonly.aof.manifest" / "temp-appendonly.aof.manifest" (written, then renamed over it).
std::string AofManifestName(std::string_view aof_filename);
std::string AofTempManifestName(std::string_view aof_filename);
// "appendonly.aof.3.base.rdb" (rdb_format: a snapshot, aof-use-rdb-preamble yes) or
// "appendonly.aof.3.base.aof".
std::string AofBaseName(std::string_view aof_filename, int64_t seq, bool rdb_format);
// "appendonly.aof.3.incr.aof".
std::string AofIncrName(std::string_view aof_filename, int64_t seq);

// ---- Manifest changes, as Redis makes them during a rewrite.

// Redis' getNewBaseFileNameAndMarkPreAsHistory: the current base (if any) becomes the first
// history file and a new base with the next base seq takes its place. Returns the new base.
const AofFileInfo& AddNewAofBase(AofManifest* manifest, std::string_view aof_filename,
                                 bool rdb_format);
// Redis' getNewIncrAofName: appends an incr file with the next incr seq. Returns it.
const AofFileInfo& AddNewAofIncr(AofManifest* manifest, std::string_view aof_filename);
// Redis' markRewrittenIncrAofAsHistory: the incr files that the new base covers become history
// (ahead of the existing history, in their order). keep_last: AOF is on, so the last incr file is
// the one being written and stays.
void MarkRewrittenAofIncrsAsHistory(AofManifest* manifest, bool keep_last);

}  // namespace shardis::core

#include "core/aof_manifest.h"

#include <absl/status/status.h>
#include <absl/strings/match.h>

#include <algorithm>
#include <string>

#include "core/number.h"
#include "core/resp_parser.h"
#include "core/string_util.h"

namespace shardis::core {

namespace {

// Redis' sdsneedsrepr: what would not come back the same through sdssplitargs unquoted.
bool NeedsRepr(std::string_view s) {
  for (unsigned char c : s) {
    if (c == '\\' || c == '"' || c < 0x20 || c >= 0x7f || IsCSpace(c)) return true;
  }
  return false;
}

// The text before the first NUL: Redis handles these values as C strings.
std::string_view CString(std::string_view s) { return s.substr(0, s.find('\0')); }

absl::Status LineError(int line, std::string_view message) {
  return absl::InvalidArgumentError(Concat("at line ", line, ": ", message));
}

void AppendInfo(std::string* out, const AofFileInfo& info) {
  Append(out, "file ");
  if (NeedsRepr(info.name)) {
    AppendRepr(out, info.name);
  } else {
    Append(out, info.name);
  }
  const char type[] = {static_cast<char>(info.type), '\n', '\0'};
  Append(out, " seq ", info.seq, " type ", type);
}

}  // namespace

absl::StatusOr<AofManifest> ParseAofManifest(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("Found an empty AOF manifest");
  AofManifest manifest;
  int64_t max_incr_seq = 0;
  int line_number = 0;
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos < text.size()) {
    // What fgets() reads into Redis' buffer: up to the '\n' included, at most MANIFEST_MAX_LINE
    // bytes. A longer line is read in pieces, each counted (and checked) as a line of its own.
    size_t n = std::min(text.size() - pos, kAofManifestMaxLine);
    if (size_t nl = text.substr(pos, n).find('\n'); nl != std::string_view::npos) n = nl + 1;
    const std::string_view buf = CString(text.substr(pos, n));
    pos += n;
    ++line_number;

    if (!buf.empty() && buf[0] == '#') continue;  // a comment
    if (buf.find('\n') == std::string_view::npos) {
      return LineError(line_number, "The AOF manifest file contains too long line");
    }
    // sdstrim(line, " \t\r\n"): only these four, not \v or \f.
    std::string_view line = buf;
    const size_t first = line.find_first_not_of(" \t\r\n");
    line = first == std::string_view::npos
               ? std::string_view()
               : line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
    if (line.empty() || !SplitArgs(line, &args) || args.size() < 6 || args.size() % 2 != 0) {
      return LineError(line_number, "Invalid AOF manifest file format");
    }

    std::optional<std::string> name;
    AofFileInfo info;
    char type = '\0';
    for (size_t i = 0; i < args.size(); i += 2) {
      const std::string_view value = CString(args[i + 1]);
      if (absl::EqualsIgnoreCase(args[i], "file")) {
        if (value.find_first_of("/\\") != std::string_view::npos) {
          return LineError(line_number, "File can't be a path, just a filename");
        }
        name = std::string(value);
      } else if (absl::EqualsIgnoreCase(args[i], "seq")) {
        info.seq = ParseCLongPrefix(value);
      } else if (absl::EqualsIgnoreCase(args[i], "type")) {
        type = value.empty() ? '\0' : value[0];
      }  // other keys: ignored, for forward compatibility
    }
    if (!name || info.seq == 0 || type == '\0') {
      return LineError(line_number, "Invalid AOF manifest file format");
    }
    info.name = std::move(*name);

    switch (type) {
      case 'b':
        if (manifest.base) return LineError(line_number, "Found duplicate base file information");
        info.type = AofFileInfo::Type::kBase;
        manifest.current_base_seq = info.seq;
        manifest.base = std::move(info);
        break;
      case 'h':
        info.type = AofFileInfo::Type::kHistory;
        manifest.history.push_back(std::move(info));
        break;
      case 'i':
        if (info.seq <= max_incr_seq) {
          return LineError(line_number, "Found a non-monotonic sequence number");
        }
        info.type = AofFileInfo::Type::kIncr;
        max_incr_seq = manifest.current_incr_seq = info.seq;
        manifest.incrs.push_back(std::move(info));
        break;
      default:
        return LineError(line_number, "Unknown AOF file type");
    }
  }
  return manifest;
}

std::string FormatAofManifest(const AofManifest& manifest) {
  std::string out;
  if (manifest.base) AppendInfo(&out, *manifest.base);
  for (const AofFileInfo& info : manifest.history) AppendInfo(&out, info);
  for (const AofFileInfo& info : manifest.incrs) AppendInfo(&out, info);
  return out;
}

std::string AofManifestName(std::string_view aof_filename) {
  return Concat(aof_filename, kAofManifestSuffix);
}

std::string AofTempManifestName(std::string_view aof_filename) {
  return Concat(kAofTempPrefix, aof_filename, kAofManifestSuffix);
}

std::string AofBaseName(std::string_view aof_filename, int64_t seq, bool rdb_format) {
  return Concat(aof_filename, ".", seq, kAofBaseSuffix,
                rdb_format ? kAofRdbFormatSuffix : kAofAofFormatSuffix);
}

std::string AofIncrName(std::string_view aof_filename, int64_t seq) {
  return Concat(aof_filename, ".", seq, kAofIncrSuffix, kAofAofFormatSuffix);
}

const AofFileInfo& AddNewAofBase(AofManifest* manifest, std::string_view aof_filename,
                                 bool rdb_format) {
  if (manifest->base) {
    manifest->base->type = AofFileInfo::Type::kHistory;
    manifest->history.insert(manifest->history.begin(), std::move(*manifest->base));
  }
  const int64_t seq = ++manifest->current_base_seq;
  manifest->base =
      AofFileInfo{AofBaseName(aof_filename, seq, rdb_format), seq, AofFileInfo::Type::kBase};
  return *manifest->base;
}

const AofFileInfo& AddNewAofIncr(AofManifest* manifest, std::string_view aof_filename) {
  const int64_t seq = ++manifest->current_incr_seq;
  manifest->incrs.push_back({AofIncrName(aof_filename, seq), seq, AofFileInfo::Type::kIncr});
  return manifest->incrs.back();
}

void MarkRewrittenAofIncrsAsHistory(AofManifest* manifest, bool keep_last) {
  std::vector<AofFileInfo>& incrs = manifest->incrs;
  const size_t moved = keep_last && !incrs.empty() ? incrs.size() - 1 : incrs.size();
  for (size_t i = 0; i < moved; ++i) incrs[i].type = AofFileInfo::Type::kHistory;
  manifest->history.insert(manifest->history.begin(), std::make_move_iterator(incrs.begin()),
                           std::make_move_iterator(incrs.begin() + moved));
  incrs.erase(incrs.begin(), incrs.begin() + moved);
}

}  // namespace shardis::core

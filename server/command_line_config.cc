#include "server/command_line_config.h"

#include <gflags/gflags.h>

#include <string_view>

#include "core/string_util.h"

namespace shardis::server {
namespace {

bool StartsOption(std::string_view arg) { return arg.size() > 2 && arg.starts_with("--"); }

bool FlagExists(std::string_view name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(std::string(name).c_str(), &info);
}

// Where the values of a `--name` end: at the next `--` argument, as in Redis, or at a single-dash
// gflags flag (`-v 2`), which Redis has none of; other values may start with '-' (`-1`).
bool EndsValues(std::string_view arg) {
  if (arg.starts_with("--")) return true;
  if (!arg.starts_with("-")) return false;
  const std::string_view name = arg.substr(1, arg.find('=') - 1);
  return FlagExists(name) || (name.starts_with("no") && FlagExists(name.substr(2)));
}

}  // namespace

bool TakeStdinArgument(int* argc, char** argv) {
  for (int i : {1, *argc - 1}) {
    if (i < 1 || i >= *argc || std::string_view(argv[i]) != "-") continue;
    for (int j = i; j + 1 < *argc; ++j) argv[j] = argv[j + 1];
    --*argc;
    return true;
  }
  return false;
}

bool IsGflagsOwnFlag(std::string_view name) {
  gflags::CommandLineFlagInfo info;
  if (!gflags::GetCommandLineFlagInfo(std::string(name).c_str(), &info)) return false;
  const std::string_view file = info.filename;
  const size_t slash = file.rfind('/');
  return file.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with("gflags");
}

std::string TakeConfigArguments(int* argc, char** argv) {
  std::string lines;
  int kept = 1;
  int i = 1;
  while (i < *argc) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // gflags' end of flags: the rest is not ours either
    const std::string_view name = StartsOption(arg) ? arg.substr(2) : std::string_view();
    const bool whole_line = name.find(' ') != std::string_view::npos &&
                            name.find('=') > name.find(' ');
    int end = i + 1;  // one past the values of `--name`
    while (end < *argc && !EndsValues(argv[end])) ++end;
    const bool save_without_value = name == "save" && end == i + 1;
    const bool config_line =
        whole_line || (!name.empty() && name.find('=') == std::string_view::npos &&
                       (end > i + 1 || save_without_value) && !IsGflagsOwnFlag(name));
    // `--name=value` where name is no gflag (a Redis parameter such as activedefrag, which has
    // only its config line): the same line as `--name value`, not an unknown flag for gflags.
    const size_t eq = name.find('=');
    const bool assignment = !config_line && eq != std::string_view::npos && eq > 0 &&
                            !FlagExists(name.substr(0, eq));
    if (assignment) {
      if (!lines.empty()) lines.push_back('\n');
      lines.append(name.substr(0, eq));
      lines.push_back(' ');
      core::AppendRepr(&lines, name.substr(eq + 1));
      ++i;
      continue;
    }
    if (!config_line) {
      argv[kept++] = argv[i++];
      continue;
    }
    if (!lines.empty()) lines.push_back('\n');
    lines.append(name);
    if (save_without_value) lines.append(" \"\"");
    for (int v = i + 1; v < end; ++v) {
      lines.push_back(' ');
      core::AppendRepr(&lines, argv[v]);
    }
    i = end;
  }
  while (i < *argc) argv[kept++] = argv[i++];
  *argc = kept;
  return lines;
}

}  // namespace shardis::server

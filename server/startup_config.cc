#include "server/acl_file.h"
#include "server/startup_config.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/resp_parser.h"
#include "core/string_util.h"
#include "server/command_line_config.h"
#include "server/config_registry.h"
#include "server/server_state.h"

extern char** environ;

namespace shardis::server {

namespace {

using Sources = ConfigSources;

// Redis' sdssplitargs on one line (the inline-command parser does exactly that).
absl::Status SplitLine(const std::string& line, std::vector<std::string>* out) {
  core::RespParser parser;
  std::string request = line + "\r\n";
  if (parser.Parse(request.data(), request.size()) != core::RespParser::Result::kDone) {
    return absl::InvalidArgumentError("unbalanced quotes");
  }
  out->assign(parser.args().begin(), parser.args().end());
  return absl::OkStatus();
}

// The value of a list parameter (ConfigParam::accumulates) from a file, flag or variable: its
// words, split as Redis splits a config line, joined by single spaces as CONFIG SET takes them.
std::string ListValue(const ConfigParam* p, const std::string& value) {
  if (p == nullptr || !p->accumulates) return value;
  if (value.find_first_not_of(" \t") == std::string::npos) return "";  // blanks: no words
  std::vector<std::string> words;
  if (!SplitLine(value, &words).ok()) return value;  // left to the parameter's check to refuse
  std::string joined;
  for (const std::string& w : words) core::Append(&joined, joined.empty() ? "" : " ", w);
  return joined;
}

bool FlagExists(const std::string& name) {
  // gflags looks names up as C strings: "save\0x" would find --save, and its value would be set
  // without the CONFIG parameter's check (found by tests/fuzz/config_file_fuzz.cc).
  if (name.find('\0') != std::string::npos) return false;
  gflags::CommandLineFlagInfo info;
  if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) return false;
  // gflags' own flags are not settings (found by tests/fuzz/config_file_fuzz.cc).
  return !IsGflagsOwnFlag(name);
}

// Sets a flag from a config-file or environment value, through the registry when the flag backs a
// CONFIG parameter (so "1gb" becomes bytes and enums are checked). Returns an error text or "".
std::string SetFlag(const std::string& flag, const std::string& value) {
  // gflags takes values as C strings: one with a NUL byte would be cut there, after the check
  // below passed on the whole of it (found by tests/fuzz/config_file_fuzz.cc).
  if (value.find('\0') != std::string::npos) return core::Concat("invalid value '", value, "'");
  std::string canonical = value;
  if (const ConfigParam* p = Config().FindByFlag(flag)) {
    absl::StatusOr<ConfigValue> v = ConfigRegistry::Parse(*p, ListValue(p, value));
    if (!v.ok()) return std::string(v.status().message());
    canonical = ConfigRegistry::Format(*p, *v);
  }
  if (gflags::SetCommandLineOption(flag.c_str(), canonical.c_str()).empty()) {
    return core::Concat("invalid value '", value, "'");
  }
  return "";
}

// Redis' MULTI_ARG_CONFIG parameters (config.c): a line may give them several words. Every other
// directive takes exactly one value ("wrong number of arguments").
bool TakesSeveralWords(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "save", "client-output-buffer-limit", "oom-score-adj-values", "bind", "replicaof",
      "slaveof", "latency-tracking-info-percentiles", "shutdown-on-sigint", "shutdown-on-sigterm"};
  for (std::string_view n : kNames) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

absl::Status LoadConfigText(const std::string& text, std::string_view path,
                            ConfigSources* sources, int first_line) {
  std::istringstream in(text);
  std::string line;
  int lineno = first_line - 1;
  std::vector<std::vector<std::string>> user_lines;
  while (std::getline(in, line)) {
    ++lineno;
    // Trimmed as Redis trims a line (sdstrim " \t\r\n"), and shown so in an error.
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    line = line.substr(start, line.find_last_not_of(" \t\r") + 1 - start);
    auto fail = [&](std::string_view why) {
      return absl::InvalidArgumentError(core::Concat(
          "\n*** FATAL CONFIG FILE ERROR (Redis ", kRedisVersion, ") ***\n",
          "Reading the configuration file, at line ", lineno, "\n>>> '", line, "'\n", why));
    };
    std::vector<std::string> args;
    if (!SplitLine(line, &args).ok()) return fail("Unbalanced quotes in configuration line");
    if (args.empty()) continue;  // only separators the trim keeps (a form feed): Redis skips it
    const std::string name = core::ToLower(args[0]);
    const ConfigParam* p = Config().Find(name);
    if (args.size() < 2 && p != nullptr) {
      return fail("wrong number of arguments");
    }
    std::string value = args.size() > 1 ? args[1] : "";
    for (size_t i = 2; i < args.size(); ++i) core::Append(&value, " ", args[i]);
    const std::string source = path.empty() ? "command line" : core::Concat(path, ":", lineno);

    if (name == "user") {  // ACL users, applied once the commands are registered
      user_lines.emplace_back(args.begin() + 1, args.end());
      continue;
    }
    std::string flag = p != nullptr ? std::string(p->flag) : "";
    if (p == nullptr) {
      flag = name;
      for (char& c : flag) c = c == '-' ? '_' : c;
      if (!FlagExists(flag) || args.size() != 2) {
        return fail("Bad directive or wrong number of arguments");
      }
    } else if (args.size() != 2 && !TakesSeveralWords(p->name)) {
      return fail("wrong number of arguments");
    }
    if (p != nullptr && p->accumulates) {
      // As Redis 7.0: a later line adds its words to the earlier lines' (the first line of the
      // file replaces the default, and the command line's lines follow the file's); an empty
      // value clears what the lines before it gave. A SHARDIS_ variable replaced those lines,
      // and the command line's lines replace its value in turn.
      value = ListValue(p, value);
      std::string earlier;
      const auto earlier_source = sources->find(flag);
      if (earlier_source != sources->end() && !earlier_source->second.starts_with("SHARDIS_") &&
          !value.empty() &&
          gflags::GetCommandLineOption(flag.c_str(), &earlier) && !earlier.empty()) {
        value = core::Concat(earlier, " ", value);
      }
    }
    if (!flag.empty()) {
      if (std::string err = SetFlag(flag, value); !err.empty()) {
        return fail(err);
      }
      (*sources)[flag] = source;
      continue;
    }
    // A CONFIG parameter without a flag: mutable ones are applied now (start-up, one thread);
    // fixed Redis ones are accepted only with the value shardis has.
    absl::StatusOr<ConfigValue> v = ConfigRegistry::Parse(*p, value);
    if (!v.ok()) return fail(std::string(v.status().message()));
    if (p->set) {
      p->set(*v);
      (*sources)[std::string(p->name)] = source;
    } else if (ConfigRegistry::Format(*p, *v) != p->get()) {
      return fail(core::Concat("'", p->name, "' cannot be changed in shardis (its value is '",
                               p->get(), "')"));
    }
  }
  AddConfigUserLines(std::move(user_lines));
  return absl::OkStatus();
}

namespace {

absl::Status LoadEnvironment(Sources* sources) {
  constexpr std::string_view kPrefix = "SHARDIS_";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!entry.starts_with(kPrefix)) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view var = entry.substr(0, eq);
    if (IsToolingVariable(var)) continue;
    const std::string flag = core::ToLower(var.substr(kPrefix.size()));
    if (flag.empty() || !FlagExists(flag)) {
      return absl::InvalidArgumentError(core::Concat(
          "shardis: unknown environment variable ", var, " (SHARDIS_<FLAG> sets --<flag>; see --help)"));
    }
    if (std::string err = SetFlag(flag, std::string(entry.substr(eq + 1))); !err.empty()) {
      return absl::InvalidArgumentError(core::Concat("shardis: ", var, ": ", err));
    }
    (*sources)[flag] = std::string(var);
  }
  return absl::OkStatus();
}

// The flags named on the command line (--name, --name=value, --noname, -name ...).
std::set<std::string> FlagsOnCommandLine(int argc, char** argv) {
  std::set<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--") break;
    if (!arg.starts_with("-")) continue;
    arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
    std::string name(arg.substr(0, arg.find('=')));
    if (!FlagExists(name) && name.starts_with("no") && FlagExists(name.substr(2))) {
      name = name.substr(2);
    }
    names.insert(name);
  }
  return names;
}

std::map<std::string, std::string> AllFlagValues() {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::map<std::string, std::string> values;
  for (const auto& f : flags) values[f.name] = f.current_value;
  return values;
}

}  // namespace

bool IsToolingVariable(std::string_view name) {
  // SHARDIS_DOCKER and SHARDIS_DOCKER_LOCAL: the image test's docker binary and the tool that
  // makes it work (scripts/test.sh), exported around the whole test run.
  return name == "SHARDIS_BIN" || name.starts_with("SHARDIS_TEST_") ||
         name.starts_with("SHARDIS_DIFF_") || name == "SHARDIS_DOCKER" ||
         name == "SHARDIS_DOCKER_LOCAL";
}

absl::Status LoadStartupConfig(int* argc, char*** argv, StartupConfig* out) {
  RegisterConfigParams(Config());
  Config().SnapshotDefaults();
  Sources sources;

  // The config file: the first argument, when it is not a flag (as redis-server takes it).
  std::string file_text;
  if (*argc > 1 && (*argv)[1][0] != '-') {
    std::error_code ec;
    std::filesystem::path path = std::filesystem::absolute((*argv)[1], ec);
    out->config_file = ec ? (*argv)[1] : path.string();
    for (int i = 1; i + 1 < *argc; ++i) (*argv)[i] = (*argv)[i + 1];
    --*argc;
    std::ifstream in(out->config_file);
    if (!in) {
      return absl::NotFoundError(
          core::Concat("shardis: cannot open config file '", out->config_file, "'"));
    }
    std::stringstream text;
    text << in.rdbuf();
    file_text = text.str();
    if (absl::Status s = LoadConfigText(file_text, out->config_file, &sources); !s.ok()) return s;
  }
  // Config from stdin after the file's, as redis-server reads it (numbered on from the file's).
  if (TakeStdinArgument(argc, *argv)) {
    std::stringstream text;
    text << std::cin.rdbuf();
    const int first_line = int(std::count(file_text.begin(), file_text.end(), '\n')) + 1;
    if (absl::Status s = LoadConfigText(text.str(), "stdin", &sources, first_line); !s.ok()) {
      return s;
    }
    file_text += text.str();
  }
  if (absl::Status s = LoadEnvironment(&sources); !s.ok()) return s;
  // The command line's `--name value...` lines, numbered as redis-server numbers them: after the
  // file's text and the newline it adds before them.
  const std::string argument_lines = TakeConfigArguments(argc, *argv);
  const int first_argument_line = int(std::count(file_text.begin(), file_text.end(), '\n')) + 2;
  if (absl::Status s = LoadConfigText(argument_lines, "", &sources, first_argument_line);
      !s.ok()) {
    return s;
  }

  const std::set<std::string> on_command_line = FlagsOnCommandLine(*argc, *argv);
  const std::map<std::string, std::string> before = AllFlagValues();
  gflags::ParseCommandLineFlags(argc, argv, true);
  for (const auto& [name, value] : AllFlagValues()) {
    if (on_command_line.contains(name)) {
      sources[name] = "command line";
    } else if (auto it = before.find(name); it != before.end() && it->second != value) {
      sources[name] = "--flagfile";
    }
  }
  sources.erase("flagfile");

  if (auto it = sources.find("maxmemory"); it != sources.end()) out->maxmemory_source = it->second;
  for (const auto& [name, source] : sources) {
    std::string value;
    if (!gflags::GetCommandLineOption(name.c_str(), &value)) {
      const ConfigParam* p = Config().Find(name);
      value = p != nullptr ? p->get() : "";
    }
    core::Append(&out->summary, out->summary.empty() ? "" : ", ", name, "=", value, " (", source,
                 ")");
  }
  return absl::OkStatus();
}

absl::Status ApplyConfigFlags() {
  for (const ConfigParam& p : Config().params()) {
    if (p.flag.empty() || !p.set || !p.alias_of.empty()) continue;  // an alias: its main does it
    std::string value;
    if (!gflags::GetCommandLineOption(std::string(p.flag).c_str(), &value)) continue;
    absl::StatusOr<ConfigValue> v = ConfigRegistry::Parse(p, ListValue(&p, value));
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          core::Concat("--", p.flag, "=", value, ": ", v.status().message()));
    }
    p.set(*v);
  }
  return absl::OkStatus();
}

}  // namespace shardis::server

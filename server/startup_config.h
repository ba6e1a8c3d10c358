// Start-up configuration, lowest to highest precedence:
//   built-in defaults < config file < SHARDIS_<FLAG> environment variables < command line
// (a --flagfile counts as command line). The config file is the first argument when it does not
// start with '-' (`shardis /etc/shardis.conf --port 7000`), in Redis' format: `name value...` per
// line, '#' comments, values quoted as Redis does, memory sizes with Redis units; names are the
// CONFIG names (maxmemory-policy) or any flag with dashes or underscores (memcached-port).
// The command line takes redis-server's form (`--save 60 1000 --appendonly yes`: more config
// lines, command_line_config.h), then gflags' (`--port=7000`, `--logtostderr`), which wins over
// the Redis form for the same setting. A bad line stops the start with Redis' FATAL CONFIG FILE
// ERROR block; so does an unknown SHARDIS_ variable, with a message naming it.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <absl/status/status.h>

namespace shardis::server {

struct StartupConfig {
  std::string config_file;  // absolute path, empty without one
  std::string summary;      // "name=value (source), ..." of every setting not at its default
  std::string maxmemory_source;  // where --maxmemory came from; empty: derive it
};

// Registers the CONFIG parameters, reads the config file, the environment and the command line's
// Redis-form lines, then parses the rest of the command line (gflags, which removes the flags from
// argv). On error, the text to print on stderr as it is (Redis' FATAL CONFIG FILE ERROR block, or
// a line starting "shardis: ").
absl::Status LoadStartupConfig(int* argc, char*** argv, StartupConfig* out);

// Where each flag got its value from ("path:line", "command line", ...), for the summary.
using ConfigSources = std::map<std::string, std::string>;

// The config file's part of LoadStartupConfig, on the file's text (`path` names it in the start
// log; empty: the command line's lines), whose first line is number `first_line` in an error:
// sets the flags and CONFIG parameters its lines name and records where each came from in
// *sources. On error, Redis' FATAL CONFIG FILE ERROR block. (Apart for
// tests/fuzz/config_file_fuzz.cc.)
absl::Status LoadConfigText(const std::string& text, std::string_view path,
                            ConfigSources* sources, int first_line = 1);

// Applies every CONFIG parameter's flag to the runtime state (after LoadStartupConfig and after
// main settled flags it derives, such as maxmemory). On error, the message to print.
absl::Status ApplyConfigFlags();

// Environment variables with the SHARDIS_ prefix that are not flags but belong to the repository's
// own tooling (tests, benchmarks) and are therefore ignored: SHARDIS_BIN, SHARDIS_TEST_*,
// SHARDIS_DIFF_*, SHARDIS_DOCKER, SHARDIS_DOCKER_LOCAL.
bool IsToolingVariable(std::string_view name);

}  // namespace shardis::server

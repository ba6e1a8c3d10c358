// redis-server's command-line form: `shardis [config-file] --port 6380 --save 60 1000
// --appendonly yes`. As in Redis (server.c main), each `--name` followed by values is one more
// config line, `name "value" ...`, read after the config file with the config file's parser (its
// Redis names, checks and FATAL CONFIG FILE ERROR block). gflags keeps the rest of the command
// line: `--name=value` of a gflag (`--name=value` of a parameter without one is its config line
// too), a `--name` with no value after it (bool flags such as --logtostderr),
// single-dash flags, and gflags' own flags (`--flagfile path`).
#pragma once

#include <string>
#include <string_view>

namespace shardis::server {

// Takes the Redis-style arguments out of argv[1..argc) (the config file, if any, already taken)
// and returns their config lines, one per `--name`, each value quoted as Redis quotes it (so
// `--save ""` is `save ""` and a value with spaces stays one word). Also as Redis: a single
// argument holding a whole line (`"--port 6380"`) is that line, and a `--save` without a value is
// `save ""`. The arguments left in argv keep their order.
std::string TakeConfigArguments(int* argc, char** argv);

// Takes a lone `-` out of argv when it is the first argument (after the config file, if any) or
// the last: redis-server's "read more config lines from stdin". Returns whether there was one.
bool TakeStdinArgument(int* argc, char** argv);

// Whether `name` is one of gflags' own flags (flagfile, fromenv, tryfromenv, undefok, help*,
// version: those defined in gflags' sources). They are not settings: set from a config line they
// would read other files or exit the process, so they stay gflags' on the command line and are
// unknown directives elsewhere.
bool IsGflagsOwnFlag(std::string_view name);

}  // namespace shardis::server

"""redis-server's command-line form (`shardis [config-file] --save 60 1000 --appendonly yes`):
each `--name value...` is one more config line after the config file's, with Redis' names,
checks and FATAL CONFIG FILE ERROR block; gflags' `--name=value` and bool flags keep working.
Differential: the same arguments given to redis-server show the same CONFIG GET values and the
same error block."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest
import redis

from conftest import REDIS_SERVER_BIN, SHARDIS_BIN, answers_ping, free_port, wait_for

pytestmark = pytest.mark.shardis_only


class Started:
    """One process started with exactly our argv (the Redis form: --port N --bind ...)."""

    def __init__(self, kind: str, tmp_path: pathlib.Path, args, config=None, env=None,
                 stdin: bytes | None = None):
        self.port = free_port()
        self.log = tmp_path / f"{kind}-{self.port}.log"
        argv = [SHARDIS_BIN if kind == "shardis" else REDIS_SERVER_BIN]
        if config is not None:
            argv.append(str(config))
        # The same lines for both (shardis takes `daemonize no`), so both number `args` alike.
        argv += ["--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "no",
                 "--dir", str(tmp_path)]
        argv += (["--logtostderr"] if kind == "shardis" else []) + list(args)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SHARDIS_")}
        full_env.update(env or {})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=tmp_path,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE)
        if stdin is not None:
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()

    def ready(self) -> bool:
        return wait_for(lambda: answers_ping(self.proc, self.port), 10) is True

    def config(self, *names) -> dict:
        c = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        try:
            return {n: c.config_get(n).get(n) for n in names}
        finally:
            c.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def exit_code(self) -> int:
        return self.proc.wait(10)


@pytest.fixture
def start(tmp_path):
    started: list[Started] = []

    def run(kind, args, config=None, env=None, stdin=None):
        p = Started(kind, tmp_path / kind, args, config, env, stdin)
        started.append(p)
        return p

    (tmp_path / "shardis").mkdir()
    (tmp_path / "redis").mkdir()
    yield run
    for p in started:
        if p.proc.poll() is None:
            p.proc.terminate()
            p.proc.wait(10)


# (arguments, the parameters whose CONFIG GET both servers must agree on)
SETTINGS = [
    (["--maxmemory-policy", "allkeys-lru", "--maxmemory", "100mb"],
     ["maxmemory-policy", "maxmemory"]),
    (["--save", "60", "1000", "300", "10"], ["save"]),
    (["--save", "60 1000 300 10"], ["save"]),  # one argument: split as Redis splits it
    (["--save", ""], ["save"]),
    (["--save", "--hz", "20"], ["save", "hz"]),  # Redis: a --save without value is save ""
    (["--hz", "20", "--save"], ["save", "hz"]),
    (["--appendonly", "yes", "--appendfsync", "always"], ["appendonly", "appendfsync"]),
    (["--notify-keyspace-events", "KEA"], ["notify-keyspace-events"]),
    (["--slowlog-log-slower-than", "-1", "--slowlog-max-len", "7"],
     ["slowlog-log-slower-than", "slowlog-max-len"]),
    (["--dbfilename", "my dump.rdb"], ["dbfilename"]),  # a value with a space stays one word
    (["--hz 15", "--maxmemory-samples 9"], ["hz", "maxmemory-samples"]),  # one argument, one line
    (["--client-output-buffer-limit", "pubsub", "64mb", "16mb", "90"],
     ["client-output-buffer-limit"]),
    (["--hash-max-ziplist-entries", "300", "--list-max-listpack-size", "-3"],
     ["hash-max-listpack-entries", "list-max-listpack-size"]),
    (["--MAXMEMORY-POLICY", "volatile-ttl"], ["maxmemory-policy"]),  # names in any case
]


@pytest.mark.parametrize("args,names", SETTINGS, ids=lambda v: " ".join(v) if v else "''")
def test_redis_form_sets_what_redis_sets(start, args, names):
    ours, theirs = start("shardis", args), start("redis", args)
    assert ours.ready(), ours.output()
    assert theirs.ready(), theirs.output()
    assert ours.config(*names) == theirs.config(*names)


def test_redis_form_after_config_file_as_redis(tmp_path, start):
    # The arguments are lines after the file's: they win, and save adds to the file's rules.
    conf = tmp_path / "base.conf"
    conf.write_text("maxmemory 1mb\nmaxmemory-policy volatile-ttl\nsave 900 1\nhz 11\n")
    args = ["--maxmemory", "2mb", "--save", "60", "1000", "--hz", "12"]
    ours, theirs = start("shardis", args, config=conf), start("redis", args, config=conf)
    assert ours.ready(), ours.output()
    assert theirs.ready(), theirs.output()
    names = ["maxmemory", "maxmemory-policy", "save", "hz"]
    assert ours.config(*names) == theirs.config(*names)
    assert ours.config(*names) == {"maxmemory": str(2 << 20), "maxmemory-policy": "volatile-ttl",
                                   "save": "900 1 60 1000", "hz": "12"}


def fatal_block(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "*** FATAL CONFIG FILE ERROR" in line)
    block = lines[start:start + 4]
    block[0] = block[0].split(" (Redis ")[0]  # the versions differ: 7.2.4 and the reference's
    return block


BAD = [
    ["--port", "abc"],
    ["--port", "1", "2"],
    ["--maxmemory-policy", "foo"],
    ["--no-such-parameter", "x"],
    ["--maxmemory", "lots"],
    ["--port 6 7"],
    ["--hz", "10", "--appendonly", "maybe"],  # the line number counts the lines before it
    ["--dbfilename", "a/b"],
]


@pytest.mark.parametrize("args", BAD, ids=" ".join)
def test_bad_argument_stops_with_redis_fatal_block(start, args):
    ours, theirs = start("shardis", args), start("redis", args)
    assert ours.exit_code() == 1, ours.output()
    assert theirs.exit_code() == 1, theirs.output()
    assert fatal_block(ours.output()) == fatal_block(theirs.output())


def test_bad_config_file_line_numbers_as_redis(tmp_path, start):
    conf = tmp_path / "bad.conf"
    conf.write_text("port 7000\n\n# a comment\nmaxmemory lots\n")
    ours, theirs = start("shardis", [], config=conf), start("redis", [], config=conf)
    assert ours.exit_code() == 1 and theirs.exit_code() == 1
    assert fatal_block(ours.output()) == fatal_block(theirs.output()) == [
        "*** FATAL CONFIG FILE ERROR", "Reading the configuration file, at line 4",
        ">>> 'maxmemory lots'", "argument must be a memory value"]
    # An argument's line is numbered after the file's lines (and the newline Redis adds).
    conf.write_text("hz 10\nmaxmemory 1mb\n")
    ours, theirs = (start(kind, ["--maxmemory", "lots"], config=conf)
                    for kind in ("shardis", "redis"))
    assert ours.exit_code() == 1 and theirs.exit_code() == 1
    assert fatal_block(ours.output()) == fatal_block(theirs.output())
    # file lines 1-2, the empty line 3, then port (4), bind (5), daemonize (6), dir (7), maxmemory
    assert "Reading the configuration file, at line 8" in fatal_block(ours.output())


def test_config_from_stdin_as_redis(tmp_path, start):
    # File, then stdin, then the arguments; line numbers count on through all three.
    conf = tmp_path / "base.conf"
    conf.write_text("hz 11\nsave 900 1\n")
    text = b"hz 12\nsave 300 10\nmaxmemory 3mb\n"
    args = ["--maxmemory", "4mb", "-"]
    ours, theirs = (start(kind, args, config=conf, stdin=text) for kind in ("shardis", "redis"))
    assert ours.ready(), ours.output()
    assert theirs.ready(), theirs.output()
    names = ["hz", "save", "maxmemory"]
    assert ours.config(*names) == theirs.config(*names) == {
        "hz": "12", "save": "900 1 300 10", "maxmemory": str(4 << 20)}
    ours, theirs = (start(kind, ["--hz", "10", "-"], config=conf, stdin=b"hz 13\nmaxmemory x\n")
                    for kind in ("shardis", "redis"))
    assert ours.exit_code() == 1 and theirs.exit_code() == 1
    assert fatal_block(ours.output()) == fatal_block(theirs.output())
    assert ">>> 'maxmemory x'" in fatal_block(ours.output())


def test_mixing_file_redis_form_gflags_and_environment(tmp_path, start):
    conf = tmp_path / "mix.conf"
    conf.write_text("maxmemory 1mb\nmaxmemory-policy volatile-ttl\ntimeout 3\n"
                    "slowlog-log-slower-than 11\n")
    p = start("shardis", ["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru",
                          "--timeout=7", "--threads", "2",
                          "--slowlog_log_slower_than=13",
                          "--slowlog-max-len", "9"],
              config=conf, env={"SHARDIS_MAXMEMORY": "2mb", "SHARDIS_SLOWLOG_LOG_SLOWER_THAN": "12",
                                "SHARDIS_SLOWLOG_MAX_LEN": "8"})
    assert p.ready(), p.output()
    assert p.config("maxmemory", "maxmemory-policy", "timeout",
                    "slowlog-log-slower-than", "slowlog-max-len") == {
        "maxmemory": str(4 << 20),         # the command line's Redis form beats env and file
        "maxmemory-policy": "allkeys-lru",  # the Redis form beats the file
        "timeout": "7",                    # gflags' form beats the file
        "slowlog-log-slower-than": "13",   # gflags' form beats env and file
        "slowlog-max-len": "9",            # the Redis form beats env
    }
    out = p.output()
    assert "2 thread(s)" in out  # a flag that is not a CONFIG parameter, Redis form
    summary = next(line for line in out.splitlines() if "configuration: " in line)
    assert "maxmemory=4mb (command line)" in summary or \
        f"maxmemory={4 << 20} (command line)" in summary, summary
    assert "timeout=7 (command line)" in summary, summary


def test_gflags_form_wins_over_redis_form(start):
    p = start("shardis", ["--maxmemory", "4mb", "--maxmemory=5mb"])
    assert p.ready(), p.output()
    assert p.config("maxmemory") == {"maxmemory": str(5 << 20)}


def test_assignment_to_a_parameter_without_a_gflag(start):
    # activedefrag and lazyfree-lazy-eviction are config lines only: `--name=value` is read as
    # `--name value`, where gflags would have refused an unknown flag.
    p = start("shardis", ["--activedefrag=yes", "--lazyfree-lazy-eviction=yes"])
    assert p.ready(), p.output()
    assert p.config("activedefrag", "lazyfree-lazy-eviction") == {
        "activedefrag": "yes", "lazyfree-lazy-eviction": "yes"}


def test_save_lines_replace_an_environment_value(start):
    # A SHARDIS_ variable replaced the file's rules; the command line replaces the variable's.
    p = start("shardis", ["--save", "60", "1000"], env={"SHARDIS_SAVE": "900 1"})
    assert p.ready(), p.output()
    assert p.config("save") == {"save": "60 1000"}


def test_flagfile_with_a_space_stays_gflags(tmp_path, start):
    flags = tmp_path / "flags"
    flags.write_text("--maxmemory=5mb\n")
    p = start("shardis", ["--flagfile", str(flags), "-v", "0"])
    assert p.ready(), p.output()
    assert p.config("maxmemory") == {"maxmemory": str(5 << 20)}


def test_stray_argument_is_still_refused(start):
    p = start("shardis", ["--timeout=5", "stray"])
    assert p.exit_code() == 1
    assert "unexpected argument 'stray'" in p.output()

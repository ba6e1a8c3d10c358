"""The snapshot parameters (dir, dbfilename, save, rdbcompression, rdbchecksum,
stop-writes-on-bgsave-error, rdb-*, key-load-delay, enable-protected-configs), differentially
against the Debian redis-server 7.0: CONFIG GET/SET with valid and invalid values and their error
texts, the config-file forms (several `save` lines accumulate, `save ""` clears) and the flag forms.

Each server here is started by this module with its own argv, in a directory of its own with the
same layout (sub/, afile), so that relative `dir` values mean the same to both."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess

import pytest
import redis

from conftest import REDIS_SERVER_BIN, SHARDIS_BIN, answers_ping, free_port, wait_for

pytestmark = pytest.mark.shardis_only

DEFAULT_SAVE = "3600 1 300 100 60 10000"

# Every parameter of this family and its Redis 7.0 default (dir: the working directory).
DEFAULTS = {
    "dbfilename": "dump.rdb", "save": DEFAULT_SAVE, "rdbcompression": "yes",
    "rdbchecksum": "yes", "stop-writes-on-bgsave-error": "yes",
    "rdb-save-incremental-fsync": "yes", "rdb-del-sync-files": "no", "rdb-key-save-delay": "0",
    "key-load-delay": "0", "enable-protected-configs": "no", "appendfilename": "appendonly.aof",
    "appenddirname": "appendonlydir",
}


class Started:
    """shardis or redis-server started with a given argv in `base`; .client() if it came up,
    else .output() says why it stopped."""

    def __init__(self, kind: str, base: pathlib.Path, args=(), config=None, env=None,
                 loading=False):
        base.mkdir(parents=True, exist_ok=True)
        (base / "sub").mkdir(exist_ok=True)
        (base / "afile").touch()
        self.base = base
        self.port = free_port()
        self.log = base / f"{kind}-{self.port}.log"
        if kind == "shardis":
            argv = [SHARDIS_BIN] + ([str(config)] if config else []) + list(args) + [
                f"--port={self.port}", "--bind=127.0.0.1", "--logtostderr", "--maxmemory=0",
                "--threads=1"]
        else:
            argv = [REDIS_SERVER_BIN] + ([str(config)] if config else []) + list(args) + [
                "--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "no"]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SHARDIS_")}
        full_env.update(env or {})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=full_env, cwd=base)
        # A server loading a dump answers -LOADING to PING: with `loading`, an open port will do.
        self.up = wait_for(self._listening if loading else self._ping, 10) is True

    def _ping(self):
        return answers_ping(self.proc, self.port)

    def _listening(self):
        if self.proc.poll() is not None:
            return "exited"
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def client(self) -> redis.Redis:
        assert self.up, self.output()
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)

    def get(self, name: str) -> str:
        return self.client().config_get(name)[name]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None and self.up and self.log.name.startswith("redis"):
            # SIGTERM makes a redis-server with save rules save first (and refuse to exit when
            # it cannot): nothing here needs that file.
            try:
                self.client().shutdown(nosave=True)
            except (redis.ConnectionError, redis.ResponseError):
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(10)


def start_pair(tmp: pathlib.Path, shardis_args=(), redis_args=(), config_text=None):
    """shardis and redis-server, each in its own copy of the layout (and of the config file)."""
    out = []
    for kind, args in (("shardis", shardis_args), ("redis", redis_args)):
        base = tmp / kind
        config = None
        if config_text is not None:
            base.mkdir(parents=True, exist_ok=True)
            config = base / "server.conf"
            config.write_text(config_text)
        out.append(Started(kind, base, args, config))
    return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Both servers with their defaults, but with protected configs (dir, dbfilename) settable."""
    ours, theirs = start_pair(tmp_path_factory.mktemp("pair"),
                              ["--enable_protected_configs=yes"],
                              ["--enable-protected-configs", "yes"])
    yield ours, theirs
    for s in (ours, theirs):
        s.stop()


@pytest.fixture
def both(pair):
    """The pair, put back to the defaults after each test."""
    yield pair
    for s in pair:
        c = s.client()
        c.config_set("dir", str(s.base))
        for name, value in DEFAULTS.items():
            if name not in ("rdbchecksum", "enable-protected-configs", "appendfilename",
                            "appenddirname"):
                c.config_set(name, value)


@pytest.fixture
def started(tmp_path):
    servers: list[Started] = []

    def start(kind, base, args=(), config=None, env=None, loading=False):
        s = Started(kind, tmp_path / base, args, config, env, loading)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def raw_set(srv: Started, *args):
    """CONFIG SET's reply as text: 'OK' or the error."""
    try:
        return str(srv.client().execute_command("CONFIG", "SET", *args))
    except redis.ResponseError as e:
        return "ERR " + str(e)


# ---- CONFIG GET ---------------------------------------------------------------------------------


def test_defaults_match_redis(both):
    for s in both:
        got = s.client().config_get("*")
        for name, value in DEFAULTS.items():
            if name in ("rdb-key-save-delay", "key-load-delay"):
                assert name not in got  # hidden: CONFIG GET * leaves them out
                got[name] = s.get(name)
            if name == "enable-protected-configs":
                value = "yes"  # the pair's one setting
            assert got[name] == value, (s.proc.args[0], name)
        assert got["dir"] == str(s.base.resolve())


@pytest.mark.parametrize("patterns", [
    ["*rdb*"], ["rdb-key-save-delay*"], ["*key*delay*"], ["rdb-key-save-delay"],
    ["RDB-KEY-SAVE-DELAY"], ["key-load-delay"], ["*save*"], ["db*"], ["dbfilename", "save"],
    ["stop-writes-on-bgsave-error"], ["enable-protected-configs"], ["append*name"],
])
def test_config_get_patterns_match_redis(both, patterns):
    ours, theirs = (s.client().execute_command("CONFIG", "GET", *patterns) for s in both)
    assert dict(zip(ours[::2], ours[1::2])) == dict(zip(theirs[::2], theirs[1::2]))


# ---- CONFIG SET ---------------------------------------------------------------------------------

SET_CASES = [
    # save: pairs of seconds (>= 1) and changes (>= 0), split at single spaces, read by strtoll
    ["save", ""], ["save", "100 1"], ["save", "100 1 200 2"], ["save", "+5 1"], ["save", "1 "],
    ["save", "\t1 1"], ["save", "1 -0"], ["save", "99999999999999999999 1"], ["save", "1 0"],
    ["save", "100"], ["save", "0 1"], ["save", "-1 1"], ["save", "1 -1"], ["save", "abc 1"],
    ["save", "1 abc"], ["save", "1  1"], ["save", "1 1 "], ["save", " "], ["save", " 1 1"],
    ["save", "1.5 1"], ["save", "0x10 1"], ["save", "1 1 2"], ["save", "1\t1"],
    # dbfilename: a file name, possibly empty, never a path
    ["dbfilename", "x.rdb"], ["dbfilename", ""], ["dbfilename", "a/b"], ["dbfilename", "a\\b"],
    ["dbfilename", "/abs.rdb"], ["dbfilename", ".."], ["dbfilename", "with space.rdb"],
    # the booleans
    ["rdbcompression", "no"], ["rdbcompression", "NO"], ["rdbcompression", "yes"],
    ["rdbcompression", "maybe"], ["rdbcompression", "1"], ["rdbcompression", ""],
    ["rdbchecksum", "no"], ["rdbchecksum", "yes"],
    ["stop-writes-on-bgsave-error", "no"], ["stop-writes-on-bgsave-error", "x"],
    ["rdb-save-incremental-fsync", "no"], ["rdb-save-incremental-fsync", "x"],
    ["rdb-del-sync-files", "yes"], ["rdb-del-sync-files", "x"],
    # the hidden delays: an int
    ["rdb-key-save-delay", "1000"], ["rdb-key-save-delay", "-10"],
    ["rdb-key-save-delay", "2147483647"], ["rdb-key-save-delay", "-2147483648"],
    ["rdb-key-save-delay", "2147483648"], ["rdb-key-save-delay", "-2147483649"],
    ["rdb-key-save-delay", "abc"], ["rdb-key-save-delay", "1.5"], ["rdb-key-save-delay", ""],
    ["key-load-delay", "5"], ["key-load-delay", "x"],
    # fixed ones
    ["enable-protected-configs", "yes"], ["appendfilename", "x"], ["appenddirname", "x"],
    # several at once: all or nothing
    ["save", "1 1", "save", "2 2"], ["save", "1 1", "dbfilename", "a/b"],
    ["dbfilename", "y.rdb", "save", "7 7", "rdbcompression", "no"],
]


@pytest.mark.parametrize("args", SET_CASES, ids=lambda a: "|".join(a))
def test_config_set_matches_redis(both, args):
    ours, theirs = both
    assert raw_set(ours, *args) == raw_set(theirs, *args)
    for name in set(args[::2]):
        assert ours.get(name) == theirs.get(name), name


@pytest.mark.parametrize("value", [
    "sub", "sub/", "./sub/../sub", "nope", "afile", "", "afile/x", "/", "..",
])
def test_config_set_dir_matches_redis(both, value):
    ours, theirs = both
    reply = raw_set(ours, "dir", value)
    assert reply == raw_set(theirs, "dir", value)
    # Both now in the same place relative to where they started, shown as an absolute path.
    shown = [pathlib.Path(s.get("dir")) for s in both]
    for s, path in zip(both, shown):
        assert path.is_absolute()
    if value in ("/", ".."):
        assert shown[0] == shown[1]
    else:
        assert [p.relative_to(s.base.resolve()) for s, p in zip(both, shown)] == \
            [shown[1].relative_to(theirs.base.resolve())] * 2


def test_config_set_dir_moves_the_process(both):
    ours, _ = both
    c = ours.client()
    assert c.config_set("dir", "sub")
    assert c.config_get("dir")["dir"] == str((ours.base / "sub").resolve())
    # Relative values are from the new directory, as a chdir makes them.
    assert c.config_set("dir", "..")
    assert c.config_get("dir")["dir"] == str(ours.base.resolve())


@pytest.mark.skipif(os.geteuid() == 0, reason="root may enter any directory")
def test_config_set_dir_permission_denied_matches_redis(both):
    for s in both:
        (s.base / "closed").mkdir(exist_ok=True)
        (s.base / "closed").chmod(0o600)
    try:
        replies = [raw_set(s, "dir", "closed") for s in both]
        assert replies[0] == replies[1]
        assert replies[0].endswith("Permission denied")
    finally:
        for s in both:
            (s.base / "closed").chmod(0o700)


def test_protected_configs_refused_by_default(server, redis_server):
    # Neither reference nor shardis of the suite enables protected configs.
    for args in (["dir", "."], ["dbfilename", "x.rdb"]):
        with server.raw() as a, redis_server.raw() as b:
            expected = b.call_raw("CONFIG", "SET", *args)
            assert expected == (b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
                                b"can't set protected config\r\n" % args[0].encode())
            assert a.call_raw("CONFIG", "SET", *args) == expected


def test_protected_configs_local(started):
    # "local": a client on 127.0.0.1 may (a remote one may not: tests/server covers that).
    ours = started("shardis", "s", ["--enable_protected_configs=local"])
    theirs = started("redis", "r", ["--enable-protected-configs", "local"])
    for s in (ours, theirs):
        assert s.get("enable-protected-configs") == "local"
        assert raw_set(s, "dir", "sub") == "OK"
        assert raw_set(s, "dbfilename", "x.rdb") == "OK"


# ---- the config file --------------------------------------------------------------------------

CONFIG_FILES = [
    "",
    "save 100 1\n",
    "save 100 1\nsave 200 2\n",
    "save \"\"\n",
    "save 100 1\nsave \"\"\nsave 300 3\n",
    "save \"\"\nsave 300 3\n",
    "save \"100 1 200 2\"\n",
    "save \"100   1\"\n",
    "save 100 1 200 2\nsave 300 3\n",
    "save 100\n",
    "save 0 1\n",
    "save 100 1\nsave abc 1\n",
    "dbfilename a/b\n",
    "dbfilename x.rdb\nrdbcompression no\nrdbchecksum no\nstop-writes-on-bgsave-error no\n"
    "rdb-save-incremental-fsync no\nrdb-del-sync-files yes\nrdb-key-save-delay 100\n"
    "key-load-delay -3\n",
    "rdb-key-save-delay 2147483648\n",
    "rdbchecksum maybe\n",
    "dir sub\n",
    "dir nope\n",
    "dir afile\n",
    "enable-protected-configs local\n",
    "enable-protected-configs maybe\n",
]


@pytest.mark.parametrize("text", CONFIG_FILES, ids=lambda t: t.replace("\n", ";") or "empty")
def test_config_file_matches_redis(tmp_path, text):
    ours, theirs = start_pair(tmp_path, config_text=text)
    try:
        assert ours.up == theirs.up, (ours.output(), theirs.output())
        if not ours.up:
            return
        for name in list(DEFAULTS) + ["dir"]:
            if name == "dir":
                assert pathlib.Path(ours.get("dir")).relative_to(ours.base.resolve()) == \
                    pathlib.Path(theirs.get("dir")).relative_to(theirs.base.resolve())
            else:
                assert ours.get(name) == theirs.get(name), name
    finally:
        ours.stop()
        theirs.stop()


@pytest.mark.parametrize("text,why", [
    ("save 100\n", "Invalid save parameters"),
    ("dbfilename a/b\n", "dbfilename can't be a path, just a filename"),
    ("dir nope\n", "No such file or directory"),
])
def test_config_file_errors_name_the_line(started, tmp_path, text, why):
    conf = tmp_path / "bad.conf"
    conf.write_text("# bad\n" + text)
    s = started("shardis", "s", config=conf)
    assert not s.up
    assert s.proc.wait(10) != 0
    assert "Reading the configuration file, at line 2" in s.output(), s.output()
    assert why in s.output()


def test_config_rewrite_keeps_save_and_dir(started, tmp_path):
    conf = tmp_path / "s.conf"
    conf.write_text("save 100 1\nsave 200 2\ndbfilename a.rdb\n")
    s = started("shardis", "s", ["--enable_protected_configs=yes"], config=conf)
    c = s.client()
    assert c.config_get("save")["save"] == "100 1 200 2"
    assert c.config_set("save", "300 3 400 4", "dbfilename", "b.rdb", "dir", "sub")
    assert c.config_rewrite()
    text = conf.read_text()
    assert "save 300 3 400 4\n" in text and "save 100 1" not in text and "save 200 2" not in text
    s.stop()
    again = started("shardis", "t", config=conf)
    got = again.client().config_get("*")
    assert (got["save"], got["dbfilename"], got["dir"]) == \
        ("300 3 400 4", "b.rdb", str((s.base / "sub").resolve()))
    # save "" is written as such: without a line the default would come back.
    assert again.client().config_set("save", "")
    assert again.client().config_rewrite()
    again.stop()
    third = started("shardis", "u", config=conf)
    assert third.get("save") == ""


# ---- flags and SHARDIS_ variables ---------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["--save", "100 1 200 2"], ["--save", ""], ["--save", "100   1"], ["--save", "100"],
    ["--save", "0 1"], ["--dbfilename", "x.rdb"], ["--dbfilename", "a/b"], ["--dir", "sub"],
    ["--dir", "nope"], ["--rdbchecksum", "no"], ["--rdbcompression", "no"],
    ["--rdb-key-save-delay", "100"],
], ids=lambda a: "=".join(a))
def test_flags_match_redis(tmp_path, args):
    # The same arguments: shardis takes redis-server's command line (test_command_line.py).
    ours, theirs = start_pair(tmp_path, args, args)
    try:
        assert ours.up == theirs.up, (ours.output(), theirs.output())
        if ours.up:
            for name in ("save", "dbfilename", "rdbchecksum", "rdbcompression",
                         "rdb-key-save-delay"):
                assert ours.get(name) == theirs.get(name), name
            assert pathlib.Path(ours.get("dir")).relative_to(ours.base.resolve()) == \
                pathlib.Path(theirs.get("dir")).relative_to(theirs.base.resolve())
    finally:
        ours.stop()
        theirs.stop()


def test_env_and_command_line_replace_the_files_save(started, tmp_path):
    # shardis' precedence (file < SHARDIS_ variable < command line) holds for save too: a later
    # source replaces the rules, it does not add to them.
    conf = tmp_path / "s.conf"
    conf.write_text("save 100 1\nsave 200 2\n")
    s = started("shardis", "a", config=conf, env={"SHARDIS_SAVE": "300  3"})
    assert s.get("save") == "300 3"
    t = started("shardis", "b", ["--save=400 4"], config=conf, env={"SHARDIS_SAVE": "300 3"})
    assert t.get("save") == "400 4"
    u = started("shardis", "c", env={"SHARDIS_SAVE": "1"})
    assert not u.up and "Invalid save parameters" in u.output()


# ---- the snapshot code reads them ---------------------------------------------------------------


def test_saves_go_where_dir_and_dbfilename_say(started):
    s = started("shardis", "s", ["--enable_protected_configs=yes", "--save="])
    c = s.client()
    c.mset({f"k{i}": "v" for i in range(20)})
    assert c.config_set("dir", "sub", "dbfilename", "x.rdb")
    assert c.save()
    assert (s.base / "sub" / "x.rdb").stat().st_size > 0
    assert not (s.base / "dump.rdb").exists()
    # rdb-key-save-delay makes a BGSAVE last (20 keys x 25 ms).
    assert c.config_set("rdb-key-save-delay", "25000")
    c.bgsave()
    assert c.info("persistence")["rdb_bgsave_in_progress"] == 1
    assert wait_for(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0, 10)
    assert c.info("persistence")["rdb_last_bgsave_status"] == "ok"


def test_dir_refused_while_loading(tmp_path, started):
    # A dump of 40 keys, loaded at 50 ms a key (key-load-delay): 2 s of -LOADING, during which
    # CONFIG SET dir answers -LOADING (Redis 7.0's DENY_LOADING_CONFIG, config.c) and other
    # parameters still set. (Not differential: the Debian redis-server's load of a small dump
    # ends before a client can be sure to catch it.)
    maker = started("redis", "maker", ["--dbfilename", "seed.rdb"])
    c = maker.client()
    c.mset({f"k{i}": "v" * 2000 for i in range(40)})
    assert c.save()
    seed = (maker.base / "seed.rdb").read_bytes()
    maker.stop()
    base = tmp_path / "load"
    base.mkdir()
    (base / "dump.rdb").write_bytes(seed)
    s = started("shardis", "load", ["--enable_protected_configs=yes", "--save=",
                                    "--key_load_delay=50000"], loading=True)
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
        def call(*args):
            sock.sendall(b"".join([b"*%d\r\n" % len(args)] +
                                  [b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args]))
            return sock.recv(4096)
        assert wait_for(lambda: call("GET", "k1").startswith(b"-LOADING"), 5)
        assert call("CONFIG", "SET", "dir", "sub") == \
            b"-LOADING Redis is loading the dataset in memory\r\n"
        assert call("CONFIG", "SET", "rdb-key-save-delay", "7") == b"+OK\r\n"
    assert wait_for(lambda: _loaded(s), 15)
    assert s.client().dbsize() == 40
    assert s.get("dir") == str(s.base.resolve())
    assert s.client().config_set("dir", "sub")


def _loaded(s) -> bool:
    try:
        return s.client().ping()
    except redis.BusyLoadingError:
        return False

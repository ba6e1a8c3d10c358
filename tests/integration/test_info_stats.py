"""INFO: every section's field names against the Debian redis-server's, value types, section
selection (default/all/everything), and the statistics that move: commandstats, errorstats,
latencystats, total_error_replies, the per-shard `shards` section, CONFIG RESETSTAT."""

import re
import time

import pytest

from conftest import TARGET, Error, RespConn, wait_for

pytestmark = pytest.mark.shardis_only

# Sections whose field names are compared with redis-server's.
SECTIONS = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "cluster"]
# Fields redis-server 7.0 lacks: ours, and Redis 7.2's event-loop figures, blocking keys and client
# buffer limit counters.
REDIS_7_2 = {"eventloop_cycles", "eventloop_duration_sum", "eventloop_duration_cmd_sum",
             "instantaneous_eventloop_cycles_per_sec", "instantaneous_eventloop_duration_usec",
             "total_blocking_keys", "total_blocking_keys_on_nokey"}
OURS = REDIS_7_2 | {"shardis_version",
        "client_query_buffer_limit_disconnections", "client_output_buffer_limit_disconnections",
        "acl_access_denied_auth", "acl_access_denied_cmd", "acl_access_denied_key",
        "acl_access_denied_channel"}
# Fields whose format varies between builds (a hex id that may be all digits).
FREE_FORM = {"redis_build_id"}
# Fields dashboards and redis_exporter read: shardis must have them.
REQUIRED = {
    "server": {"redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id",
               "tcp_port", "uptime_in_seconds", "uptime_in_days", "executable", "config_file"},
    "clients": {"connected_clients", "blocked_clients", "maxclients"},
    "memory": {"used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak",
               "maxmemory", "maxmemory_policy", "mem_fragmentation_ratio", "total_system_memory"},
    "persistence": {"loading", "rdb_changes_since_last_save", "rdb_last_save_time",
                    "aof_enabled"},
    "stats": {"total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes",
              "rejected_connections", "expired_keys", "evicted_keys", "keyspace_hits",
              "keyspace_misses", "pubsub_channels", "pubsub_patterns", "total_error_replies",
              "unexpected_error_replies", "expired_stale_perc", "evicted_clients"},
    "replication": {"role", "connected_slaves", "master_repl_offset"},
    "cpu": {"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"},
    "cluster": {"cluster_enabled"},
}


def parse_info(text: bytes) -> dict:
    """{section title (lower case): {field: value}} in order."""
    sections = {}
    current = None
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            current = sections.setdefault(line[2:].lower(), {})
        elif line:
            name, _, value = line.partition(":")
            current[name] = value
    return sections


def kind(value: str) -> str:
    if re.fullmatch(r"-?\d+", value):
        return "int"
    if re.fullmatch(r"-?\d+\.\d+", value):
        return "float"
    return "str"


def info(client, *sections) -> dict:
    """INFO's raw text parsed (redis-py's own INFO parsing drops the section titles)."""
    with RespConn(client.connection_pool.connection_kwargs["port"]) as c:
        return parse_info(c.call("INFO", *sections))


def test_field_names_and_types_match_redis(r, redis_server):
    ours = info(r, "everything")
    ref = info(redis_server.client(), "everything")
    for section in SECTIONS:
        assert section in ours, section
        extra = set(ours[section]) - set(ref[section]) - OURS
        assert not extra, f"{section}: fields Redis does not have: {sorted(extra)}"
        lacking = set(ref[section]) - set(ours[section])
        assert not lacking, f"{section}: Redis' fields we lack: {sorted(lacking)}"
        missing = REQUIRED[section] - set(ours[section])
        assert not missing, f"{section}: missing {sorted(missing)}"
        for name, value in ours[section].items():
            if name in ref[section] and name not in FREE_FORM:
                assert kind(value) == kind(ref[section][name]), (section, name, value,
                                                                 ref[section][name])


def test_section_selection(r, redis_server):
    ref = redis_server.client()
    for arg in ([], ["default"], ["all"], ["everything"], ["stats", "cpu"], ["commandstats"]):
        ours = list(info(r, *arg))
        theirs = list(info(ref, *arg))
        # The shards section is ours, in all/everything after the Redis ones.
        assert [s for s in ours if s != "shards"] == theirs, arg
        assert ("shards" in ours) == (arg in (["all"], ["everything"])), arg
    assert list(info(r, "shards")) == ["shards"]
    assert list(info(r, "SHARDIS")) == ["shards"]  # the section's earlier name


def cmdstat(r, name):
    line = info(r, "commandstats").get("commandstats", {}).get(f"cmdstat_{name}")
    if line is None:
        return None
    return {k: (float(v) if "." in v else int(v)) for k, v in
            (item.split("=") for item in line.split(","))}


def test_commandstats_move(r, server):
    r.config_resetstat()
    assert cmdstat(r, "get") is None
    r.set("k", "v")
    for _ in range(5):
        r.get("k")
    with r.pipeline(transaction=False) as p:
        for i in range(20):
            p.get(f"key{i}")  # keys on every shard: some hop
        p.execute()
    with pytest.raises(Exception):
        r.execute_command("GET")  # wrong arity: rejected
    r.lpush("list", "a")
    with pytest.raises(Exception):
        r.execute_command("GET", "list")  # WRONGTYPE: ran and failed
    with pytest.raises(Exception):
        r.execute_command("CONFIG", "GET")  # the subcommand's arity
    s = cmdstat(r, "get")
    assert s["calls"] == 26 and s["rejected_calls"] == 1 and s["failed_calls"] == 1, s
    assert s["usec"] >= 0 and s["usec_per_call"] == pytest.approx(s["usec"] / 26, abs=1)
    assert cmdstat(r, "set")["calls"] == 1
    assert cmdstat(r, "config|get")["rejected_calls"] == 1
    assert cmdstat(r, "config|resetstat")["calls"] == 1


def test_errorstats_and_total_error_replies(r):
    r.config_resetstat()
    r.lpush("list", "a")
    for _ in range(3):
        with pytest.raises(Exception):
            r.get("list")
    with pytest.raises(Exception):
        r.execute_command("NOSUCHCOMMAND")
    e = info(r, "errorstats")["errorstats"]
    assert e == {"errorstat_WRONGTYPE": "count=3", "errorstat_ERR": "count=1"}, e
    assert info(r, "stats")["stats"]["total_error_replies"] == "4"


def test_latencystats_layout(r):
    r.config_resetstat()
    for i in range(50):
        r.set(f"k{i}", i)
    lat = info(r, "latencystats")["latencystats"]
    m = re.fullmatch(r"p50=(\d+\.\d{3}),p99=(\d+\.\d{3}),p99\.9=(\d+\.\d{3})",
                     lat["latency_percentiles_usec_set"])
    assert m, lat
    p50, p99, p999 = map(float, m.groups())
    assert 0 < p50 <= p99 <= p999
    assert "latency_percentiles_usec_get" not in lat  # only commands that ran


def test_resetstat_clears_everything(r):
    r.lpush("list", "a")
    with pytest.raises(Exception):
        r.get("list")
    r.config_resetstat()
    sections = info(r, "commandstats", "errorstats", "latencystats", "stats")
    assert list(sections["commandstats"]) == ["cmdstat_config|resetstat"]
    assert sections["errorstats"] == {}
    assert list(sections["latencystats"]) == ["latency_percentiles_usec_config|resetstat"]
    assert sections["stats"]["total_error_replies"] == "0"


def test_shards_section(r, server):
    for i in range(100):
        r.set(f"k{i}", i)
    sh = info(r, "shards")["shards"]
    assert int(sh["threads"]) == server.threads
    keys = 0
    for i in range(server.threads):
        fields = dict(item.split("=") for item in sh[f"shard{i}"].split(","))
        assert set(fields) >= {"keys", "used_memory", "commands", "queue_length", "hops_run",
                               "loop_iterations", "uring_enters", "parks", "wakeups_sent"}
        assert all(v.isdigit() for v in fields.values()), fields
        keys += int(fields["keys"])
    assert keys == 100
    assert f"shard{server.threads}" not in sh


SCRIPT = [
    ("SET", "a", "1"), ("GET", "a"), ("GET",), ("LPUSH", "a", "x"), ("CONFIG", "GET"),
    ("CONFIG", "NOSUCH"), ("MULTI",), ("SET", "b", "1"), ("GET",), ("EXEC",),
    ("MULTI",), ("INCR", "a"), ("SET", "c", "2"), ("EXEC",), ("EXEC",), ("DISCARD",),
    ("NOSUCHCOMMAND", "x"), ("INCR", "a"), ("MSET", "x", "1", "y", "2"), ("DEL", "x", "y", "z"),
]


def run_script(port):
    out = []
    with RespConn(port) as c:
        c.call("FLUSHALL")
        c.call("CONFIG", "RESETSTAT")
        for cmd in SCRIPT:
            out.append(c.call(*cmd))
        stats = parse_info(c.call("INFO", "commandstats"))["commandstats"]
        errors = parse_info(c.call("INFO", "errorstats"))["errorstats"]
    counters = {}
    for name, line in stats.items():
        fields = dict(item.split("=") for item in line.split(","))
        counters[name] = (fields["calls"], fields["rejected_calls"], fields["failed_calls"])
    counters.pop("cmdstat_config|resetstat", None)
    counters.pop("cmdstat_flushall", None)
    counters.pop("cmdstat_info", None)
    return out, counters, errors


def test_counters_match_redis(server, redis_server):
    """The same commands move the same calls/rejected_calls/failed_calls and errorstats."""
    ours = run_script(server.port)
    theirs = run_script(redis_server.port)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2]


def test_instantaneous_rates_follow_traffic(r, server):
    """instantaneous_ops_per_sec and the kbps figures: Redis' 16 samples of 100 ms, so they rise
    while clients send and fall back to 0 about 1.6 s after they stop."""
    def stats():
        return r.info("stats")

    stop = time.monotonic() + 2.0
    with RespConn(server.port) as c:
        while time.monotonic() < stop:
            c.send_command("PING")  # pipelined bursts keep the rate well above zero
            for _ in range(99):
                c.send_command("SET", "k", "v")
            for _ in range(100):
                c.read_reply()
        busy = stats()
    assert busy["instantaneous_ops_per_sec"] > 100
    assert float(busy["instantaneous_input_kbps"]) > 0
    assert float(busy["instantaneous_output_kbps"]) > 0
    deadline = time.monotonic() + 5
    # Polling INFO every 0.2 s is the only traffic left: ~5 ops/s.
    while stats()["instantaneous_ops_per_sec"] > 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stats()["instantaneous_ops_per_sec"] <= 20


def test_redis_7_2_fields(r, server):
    """Redis 7.2's fields, each where 7.2 puts it (clients and stats), with values that move."""
    fields = info(r, "everything")
    for name in REDIS_7_2:
        section = "clients" if "blocking_keys" in name else "stats"
        assert kind(fields[section][name]) == "int", (name, fields[section].get(name))
    assert kind(fields["memory"]["number_of_libraries"]) == "int"


def test_total_blocking_keys(r, server):
    """total_blocking_keys counts keys with a blocked client (once however many wait on one),
    total_blocking_keys_on_nokey those an XREADGROUP waits on (its key's deletion ends it)."""
    def counts():
        clients = info(r, "clients")["clients"]
        return int(clients["total_blocking_keys"]), int(clients["total_blocking_keys_on_nokey"])

    r.xgroup_create("bk:stream", "g", id="$", mkstream=True)
    waiters = [RespConn(server.port) for _ in range(3)]
    try:
        waiters[0].send_command("BLPOP", "bk:list1", "bk:list2", "0")
        waiters[1].send_command("BLPOP", "bk:list1", "0")
        waiters[2].send_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
                                "bk:stream", ">")
        deadline = time.monotonic() + 5
        while counts() != (3, 1) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert counts() == (3, 1)
        r.rpush("bk:list2", "x")  # serves the first BLPOP: bk:list1 keeps one waiter
        assert waiters[0].read_reply()[1] == [b"bk:list2", b"x"]
        r.delete("bk:stream")  # ends the XREADGROUP (Redis 7.2: the command runs again, fails)
        assert isinstance(waiters[2].read_reply()[1], Error)
        deadline = time.monotonic() + 5
        while counts() != (1, 0) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert counts() == (1, 0)
    finally:
        for c in waiters:
            c.close()
    deadline = time.monotonic() + 5
    while counts() != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert counts() == (0, 0)


def test_eventloop_figures_move(r, server):
    """The loop's cycles, their time and the commands' time grow with traffic; the instantaneous
    cycle rate follows the last 1.6 s."""
    before = info(r, "stats")["stats"]
    with RespConn(server.port) as c:
        stop = time.monotonic() + 1.0
        while time.monotonic() < stop:
            for _ in range(50):
                c.send_command("SET", "el", "v")
            for _ in range(50):
                c.read_reply()
        busy = info(r, "stats")["stats"]
    for name in ("eventloop_cycles", "eventloop_duration_sum", "eventloop_duration_cmd_sum"):
        assert int(busy[name]) > int(before[name]), name
    assert int(busy["instantaneous_eventloop_cycles_per_sec"]) > 0


def test_replication_of_a_master_without_replicas(r, redis_server):
    """The replication section of a master with no replica, field by field as Redis shows it (the
    replication id is random)."""
    ours = info(r, "replication")["replication"]
    theirs = info(redis_server.client(), "replication")["replication"]
    assert list(ours) == list(theirs)
    assert re.fullmatch(r"[0-9a-f]{40}", ours.pop("master_replid"))
    theirs.pop("master_replid")
    assert ours == theirs


def test_memory_breakdown_follows_the_data(r, server):
    """used_memory_overhead/startup/dataset: the dataset is what the keys and values hold, the
    overhead the shards' own structures and tables plus the buffers outside used_memory (clients,
    AOF, script caches); the dataset grows with data and goes with it; MEMORY STATS agrees."""
    def memory():
        return {k: v for k, v in info(r, "memory")["memory"].items()}

    def check(m):
        used, overhead, dataset = (int(m[f]) for f in ("used_memory", "used_memory_overhead",
                                                       "used_memory_dataset"))
        outside = sum(int(m[f]) for f in ("mem_clients_normal", "mem_aof_buffer",
                                          "used_memory_scripts"))
        assert used == dataset + overhead - outside, m
        assert 0 < int(m["used_memory_startup"]) <= used
        assert re.fullmatch(r"\d+\.\d\d%", m["used_memory_dataset_perc"])
        assert 0 <= float(m["used_memory_dataset_perc"][:-1]) <= 100
        for f in ("allocator_allocated", "allocator_active", "allocator_resident",
                  "mem_fragmentation_bytes"):
            assert kind(m[f]) == "int", f
        return dataset

    r.flushall()
    empty = memory()
    before = check(empty)
    value = b"v" * 200
    with r.pipeline(transaction=False) as p:
        for i in range(2000):
            p.set(f"dataset:{i}", value)
        p.execute()
    full = memory()
    grown = check(full)
    assert grown - before >= 2000 * len(value), (before, grown)
    assert float(full["used_memory_dataset_perc"][:-1]) > 50
    # The start-up figure is fixed.
    assert full["used_memory_startup"] == empty["used_memory_startup"]
    stats = r.memory_stats()
    assert stats["startup.allocated"] == int(full["used_memory_startup"])
    assert stats["dataset.bytes"] >= 2000 * len(value)
    r.flushall()
    assert check(memory()) <= before + 1024


def stats_field(r, name):
    return int(info(r, "stats")["stats"][name])


def test_reads_and_writes_processed_follow_requests(r, server):
    """total_reads_processed/total_writes_processed: a read per receive of a client's socket, a
    write per send: a request per round trip moves both by one each, a pipeline of many requests
    in one send moves them by few."""
    with RespConn(server.port) as c:
        c.call("PING")
        reads, writes = (stats_field(r, "total_reads_processed"),
                         stats_field(r, "total_writes_processed"))
        for _ in range(20):
            c.call("PING")
        # This INFO's own connection reads once for it before it is made.
        assert stats_field(r, "total_reads_processed") - reads >= 20
        assert stats_field(r, "total_writes_processed") - writes >= 20
        reads = stats_field(r, "total_reads_processed")
        c.send(b"".join(c.encode("PING") for _ in range(200)))
        for _ in range(200):
            c.read_reply()
        assert 1 <= stats_field(r, "total_reads_processed") - reads < 100


def test_reply_buffer_expands_and_shrinks(r, server):
    """A reply larger than the reply buffer grows it (reply_buffer_expands); a buffer a large reply
    grew is given back after its send (reply_buffer_shrinks). Small replies move neither."""
    r.set("big", b"x" * (1 << 20))
    with RespConn(server.port) as c:
        c.call("PING")
        expands, shrinks = (stats_field(r, "reply_buffer_expands"),
                            stats_field(r, "reply_buffer_shrinks"))
        for _ in range(10):
            c.call("GET", "small")
        assert stats_field(r, "reply_buffer_expands") == expands
        assert stats_field(r, "reply_buffer_shrinks") == shrinks
        assert len(c.call("GET", "big")) == 1 << 20
        assert stats_field(r, "reply_buffer_expands") == expands + 1
        # The send completes in the server's loop once the kernel took the last bytes.
        assert wait_for(lambda: stats_field(r, "reply_buffer_shrinks") == shrinks + 1, 5)

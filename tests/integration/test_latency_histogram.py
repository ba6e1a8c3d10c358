"""LATENCY HISTOGRAM [command ...] (Redis 7): per command, its calls and the cumulative counts of
its latencies at Redis' power-of-two microsecond steps, compared with redis-server in shape (the
durations themselves differ between two servers), from every thread's histograms."""

from conftest import RespConn

# Redis' step labels: the highest value, in us, of the HdrHistogram bucket that holds 1024 * 2^k ns.
LABELS = [1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
          135266, 270532, 541065, 1082130]


def as_dict(flat):
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def histograms(r, *names):
    return {name: as_dict(entry)
            for name, entry in as_dict(r.execute_command("LATENCY", "HISTOGRAM", *names)).items()}


def check_cdf(entry):
    """A command's entry: calls, and steps where the cumulative count grows up to calls."""
    assert list(entry) == [b"calls", b"histogram_usec"]
    steps = entry[b"histogram_usec"]
    assert steps, entry
    labels = steps[::2]
    counts = steps[1::2]
    assert all(label in LABELS for label in labels), labels
    assert labels == sorted(labels)
    assert all(a < b for a, b in zip(counts, counts[1:])), counts
    assert counts[-1] == entry[b"calls"]


def workload(r):
    r.config_resetstat()
    for i in range(50):
        r.set(f"k{i}", i)  # keys on every thread
    for i in range(20):
        r.get(f"k{i}")
    r.config_get("port")
    r.rpush("l", "a")
    r.blpop(["l"], 0)


def shape(r):
    workload(r)
    named = histograms(r, "set", "GET", "config", "blpop", "no-such-command", "client|list")
    everything = histograms(r)
    for entry in named.values():
        check_cdf(entry)
    for entry in everything.values():
        check_cdf(entry)
    calls = {name: entry[b"calls"] for name, entry in named.items()}
    return calls, set(everything) >= set(named)


def test_latency_histogram_matches_redis(r, server, redis_server):
    ours = shape(r)
    theirs = shape(redis_server.client())
    assert ours == theirs
    assert ours[0] == {b"set": 50, b"get": 20, b"config|get": 1, b"config|resetstat": 1,
                       b"blpop": 1}


def test_one_subcommand_and_unknown_names(r, server, redis_server):
    for client in (r, redis_server.client()):
        workload(client)
        assert list(histograms(client, "config|get")) == [b"config|get"]
        assert histograms(client, "nosuch", "config|nosuch") == {}


def test_resp3_reply_is_a_map_of_maps(r, server, redis_server):
    for srv in (server, redis_server):
        conn = RespConn(srv.port)
        conn.call("HELLO", "3")
        conn.call("CONFIG", "RESETSTAT")
        conn.call("SET", "k", "v")
        raw = conn.call_raw("LATENCY", "HISTOGRAM", "set")
        conn.close()
        assert raw.startswith(b"%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:1\r\n"
                              b"$14\r\nhistogram_usec\r\n%1\r\n:"), (srv.name, raw)
        assert raw.endswith(b"\r\n:1\r\n"), raw


def test_no_data_after_resetstat_and_while_tracking_is_off(r, server):
    r.config_set("latency-tracking", "no")
    try:
        r.config_resetstat()
        r.set("k", "v")
        assert histograms(r) == {}
    finally:
        r.config_set("latency-tracking", "yes")
    r.set("k", "v")
    assert histograms(r, "set")[b"set"][b"calls"] == 1

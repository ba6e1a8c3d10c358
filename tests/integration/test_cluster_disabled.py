"""CLUSTER, ASKING, READONLY, READWRITE and MIGRATE's key positions, as a Redis 7.2 without
cluster mode (cluster-enabled no) answers them: differential against the reference redis-server,
which runs without cluster mode too."""

import pytest

from conftest import flushed_pair


@pytest.mark.parametrize("args", [
    ["CLUSTER", "INFO"], ["CLUSTER", "HELP"], ["CLUSTER", "KEYSLOT", "k"], ["CLUSTER", "SLOTS"],
    ["CLUSTER", "NODES"], ["CLUSTER", "MYID"], ["CLUSTER", "ADDSLOTS", "1", "2"],
    ["CLUSTER", "RESET", "HARD"], ["cluster", "countkeysinslot", "5"],
    # Unknown subcommands and wrong arity are found before the cluster check, as for any
    # container.
    ["CLUSTER", "NOPE"], ["CLUSTER", "KEYSLOT"], ["CLUSTER", "INFO", "extra"], ["CLUSTER"],
    ["ASKING"], ["READONLY"], ["READWRITE"], ["READONLY", "extra"],
], ids=lambda a: "_".join(a))
def test_cluster_commands_as_a_redis_without_cluster_mode(server, redis_server, args):
    with flushed_pair(server, redis_server) as (ours, theirs):
        expected = theirs.call_raw(*args)
        assert expected.startswith(b"-")
        assert ours.call_raw(*args) == expected


@pytest.mark.shardis_only  # Redis 7.2's list (MYSHARDID) against 7.0's
def test_cluster_subcommands_are_listed(server, redis_server):
    with flushed_pair(server, redis_server) as (ours, theirs):
        for c in (ours, theirs):
            listed = c.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help")
            assert b"cluster|help" in listed and b"client|help" in listed
        # Redis 7.2's subcommands: 7.0's and MYSHARDID.
        ours_subs = set(ours.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "cluster|*"))
        theirs_subs = set(theirs.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "cluster|*"))
        assert ours_subs - theirs_subs == {b"cluster|myshardid"}
        assert theirs_subs <= ours_subs


@pytest.mark.parametrize("args", [
    ["MIGRATE", "h", "6379", "k", "0", "1000"],
    ["MIGRATE", "h", "6379", "k", "0", "1000", "COPY", "REPLACE"],
    ["MIGRATE", "h", "6379", "", "0", "1000", "KEYS", "a", "b", "c"],
    ["MIGRATE", "h", "6379", "", "0", "1000", "COPY", "AUTH", "keys", "KEYS", "a"],
    ["MIGRATE", "h", "6379", "", "0", "1000", "AUTH2", "u", "keys", "REPLACE", "KEYS", "x", "y"],
], ids=lambda a: "_".join(x or '""' for x in a[3:]))
def test_migrate_keys_as_redis(server, redis_server, args):
    with flushed_pair(server, redis_server) as (ours, theirs):
        expected = theirs.call_raw("COMMAND", "GETKEYS", *args)
        assert ours.call_raw("COMMAND", "GETKEYS", *args) == expected


def test_migrate_is_a_movablekeys_command(server, redis_server):
    with flushed_pair(server, redis_server) as (ours, theirs):
        info = [c.call("COMMAND", "INFO", "migrate")[0] for c in (ours, theirs)]
        assert info[0][:8] == info[1][:8]
        assert b"movablekeys" in info[0][2]

"""The command table against the Debian redis-server 7.0: for every command and container
subcommand both servers know, COMMAND INFO's arity, flags, first/last key and step, ACL categories
and tips, and COMMAND DOCS' group, since and complexity must be the same. Summaries are ours (in our
own words), so they are not compared, only required.

Deliberate exceptions:
  - CLIENT NO-TOUCH, CLIENT SETINFO and CLUSTER MYSHARDID are Redis 7.2 subcommands (clients
    send SETINFO on connect); Redis 7.0 does not know them, so they are only checked to be
    documented.
  - ZRANK and ZREVRANK take Redis 7.2's WITHSCORE, so their arity is 7.2's -3 (7.0: 3).
"""

import pytest

from conftest import RespConn

NEWER_THAN_REDIS_7_0 = {"client|no-touch", "client|setinfo", "cluster|myshardid"}
# (command, field): our value, as Redis 7.2 has it.
CHANGED_SINCE_REDIS_7_0 = {
    ("zrank", "arity"): -3, ("zrevrank", "arity"): -3,
    # Redis 7.2 lets scripts call the blocking commands (they do not block there) and WAIT.
    ("blpop", "flags"): ["write", "blocking"], ("brpop", "flags"): ["write", "blocking"],
    ("blmove", "flags"): ["write", "denyoom", "blocking"],
    ("brpoplpush", "flags"): ["write", "denyoom", "blocking"],
    ("bzpopmin", "flags"): ["write", "blocking", "fast"],
    ("bzpopmax", "flags"): ["write", "blocking", "fast"],
    ("wait", "flags"): [],
    # Redis 7.2 serves CLUSTER SHARDS and SLOTS while loading, and corrected three complexities.
    ("cluster|shards", "flags"): ["loading", "stale"],
    ("cluster|slots", "flags"): ["loading", "stale"],
    ("cluster|getkeysinslot", "complexity"): "O(N) where N is the number of requested keys",
    ("cluster|replicas", "complexity"): "O(N) where N is the number of replicas.",
    ("cluster|slaves", "complexity"): "O(N) where N is the number of replicas.",
}


def _text(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [_text(i) for i in x]
    if isinstance(x, dict):
        return {_text(k): _text(v) for k, v in x.items()}
    return x


def _as_map(x):
    """A RESP2 flat key/value array (or a RESP3 map) as a dict."""
    if isinstance(x, dict):
        return x
    return {x[i]: x[i + 1] for i in range(0, len(x), 2)}


def command_facts(port: int):
    """{name: facts} for every command and subcommand, from COMMAND INFO and COMMAND DOCS."""
    conn = RespConn(port)
    try:
        info = _text(conn.call("COMMAND", "INFO"))
        docs = _as_map(_text(conn.call("COMMAND", "DOCS")))
    finally:
        conn.close()
    facts = {}

    def add_info(entry):
        name, arity, flags, first, last, step, acl, tips = entry[:8]
        facts[name] = {"arity": arity, "flags": flags, "first": first, "last": last,
                       "step": step, "acl": acl, "tips": tips}
        for sub in entry[9]:
            add_info(sub)

    for entry in info:
        add_info(entry)

    def add_docs(name, doc):
        doc = _as_map(doc)
        facts[name].update(group=doc["group"], since=doc["since"], summary=doc["summary"],
                           complexity=doc.get("complexity"))
        for sub_name, sub_doc in _as_map(doc.get("subcommands", [])).items():
            add_docs(sub_name, sub_doc)

    for name, doc in docs.items():
        add_docs(name, doc)
    return facts


FIELDS = ["group", "since", "complexity", "arity", "flags", "first", "last", "step", "acl",
          "tips"]


@pytest.mark.shardis_only
def test_command_table_matches_redis(server, redis_server):
    ours, theirs = command_facts(server.port), command_facts(redis_server.port)
    unknown = sorted(set(ours) - set(theirs) - NEWER_THAN_REDIS_7_0)
    assert not unknown, f"commands Redis 7.0 does not know: {unknown}"
    mismatches = []
    for name in sorted(set(ours) & set(theirs)):
        for field in FIELDS:
            want = CHANGED_SINCE_REDIS_7_0.get((name, field), theirs[name][field])
            if ours[name][field] != want:
                mismatches.append(f"  {name} {field}: ours {ours[name][field]!r}, "
                                  f"redis {theirs[name][field]!r}")
    assert not mismatches, "command table differs from redis-server:\n" + "\n".join(mismatches)


def test_every_command_is_documented(server):
    facts = command_facts(server.port)
    undocumented = sorted(n for n, f in facts.items()
                          if not f.get("summary") or not f.get("group") or not f.get("since"))
    assert not undocumented, f"commands without docs: {undocumented}"


def _docs_args(port: int, resp3: bool):
    """{name: (arguments, doc_flags, deprecated_since)} for every command and subcommand."""
    conn = RespConn(port)
    try:
        if resp3:
            conn.call("HELLO", "3")
        docs = _as_map(_text(conn.call("COMMAND", "DOCS")))
    finally:
        conn.close()
    out = {}

    def norm(x):
        # RESP3 maps and RESP2 flat arrays alike: argument maps become sorted item tuples.
        if isinstance(x, dict):
            return tuple(sorted((k, norm(v)) for k, v in x.items()))
        if isinstance(x, list):
            return [norm(i) for i in x]
        return x

    def add(name, doc):
        doc = _as_map(doc)
        args = doc.get("arguments")
        if args is not None and not resp3:
            args = [_as_map(a) for a in args]

            def fix(a):  # nested blocks are flat arrays too in RESP2
                if "arguments" in a:
                    a["arguments"] = [fix(_as_map(b)) for b in a["arguments"]]
                return a
            args = [fix(a) for a in args]
        out[name] = (norm(args), doc.get("doc_flags"), doc.get("deprecated_since"))
        for sub_name, sub_doc in _as_map(doc.get("subcommands", [])).items():
            add(sub_name, sub_doc)

    for name, doc in docs.items():
        add(name, doc)
    return out


# Where shardis documents Redis 7.2's (or 7.4's) arguments (scripts/gen_command_docs.py ADJUST).
ARGUMENTS_NEWER_THAN_REDIS_7_0 = {"zrank", "zrevrank", "hscan"}


@pytest.mark.shardis_only
@pytest.mark.parametrize("resp3", [False, True])
def test_command_docs_arguments_match_redis(server, redis_server, resp3):
    ours, theirs = _docs_args(server.port, resp3), _docs_args(redis_server.port, resp3)
    mismatches = [name for name in sorted(set(ours) & set(theirs) - ARGUMENTS_NEWER_THAN_REDIS_7_0)
                  if ours[name] != theirs[name]]
    assert not mismatches, f"COMMAND DOCS arguments differ: {mismatches}"
    args = dict(ours["zrank"][0][-1])
    assert args["token"] == "WITHSCORE" and args["since"] == "7.2.0"

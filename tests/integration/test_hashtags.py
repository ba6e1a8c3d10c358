"""Keys with {hashtags} (co-located on one shard in shardis) and multi-key commands whose keys
land on many shards. The results must be the same as without hashtags."""

import random


def test_hashtag_keys_basic(r):
    keys = [b"{user1}:name", b"{user1}:email", b"{user1}", b"x{user1}y", b"{user2}:name"]
    for i, k in enumerate(keys):
        r.set(k, b"v%d" % i)
    for i, k in enumerate(keys):
        assert r.get(k) == b"v%d" % i
    assert r.exists(*keys) == len(keys)
    assert sorted(r.keys(b"{user1}*")) == [b"{user1}", b"{user1}:email", b"{user1}:name"]
    assert r.delete(b"{user1}:name", b"{user2}:name") == 2
    assert r.dbsize() == 3


def test_hashtag_edge_cases(r):
    """Empty tags, unclosed braces and several tags: all plain, distinct keys."""
    keys = [b"{}", b"{}a", b"a{}", b"{", b"}", b"}{", b"{a", b"a}", b"{a}{b}", b"{a}{c}",
            b"{{a}}", b"{a}", b"a", b"{b}{a}", b"x{}{a}", b"{ }", b"{\x00}", b"{\xff}k"]
    mapping = {k: b"val:" + k for k in keys}
    assert r.mset(mapping) is True
    assert r.mget(keys) == [mapping[k] for k in keys]
    assert r.dbsize() == len(keys)
    for k in keys:
        assert r.incr(b"n" + k) == 1
    assert r.delete(*keys) == len(keys)


def test_mset_mget_many_tags(r):
    rng = random.Random(7)
    mapping = {}
    for i in range(2000):
        tag = rng.randrange(300)
        mapping[f"{{tag{tag}}}:item{i}".encode()] = f"value-{i}".encode()
    for i in range(1000):
        mapping[f"plain:{i}".encode()] = f"plain-{i}".encode()
    assert r.mset(mapping) is True
    keys = list(mapping)
    rng.shuffle(keys)
    assert r.mget(keys) == [mapping[k] for k in keys]
    # Duplicates and missing keys keep their positions.
    probe = keys[:50] + [b"{tag1}:missing", keys[0], b"missing"] + keys[50:100]
    assert r.mget(probe) == [mapping.get(k) for k in probe]
    assert r.exists(*probe) == sum(1 for k in probe if k in mapping)
    assert r.touch(*keys[:100]) == 100
    assert r.delete(*keys[:1500]) == 1500
    assert r.dbsize() == len(mapping) - 1500
    assert r.unlink(*keys) == len(mapping) - 1500


def test_same_tag_many_keys(r):
    mapping = {f"{{hot}}:{i}".encode(): str(i).encode() for i in range(1000)}
    r.mset(mapping)
    assert r.mget(list(mapping)) == list(mapping.values())
    with r.pipeline(transaction=False) as p:
        for k in mapping:
            p.incr(k)
        assert p.execute() == [int(v) + 1 for v in mapping.values()]
    assert len(r.keys(b"{hot}:*")) == 1000


def test_mset_overwrites_and_clears_ttl_across_shards(r):
    keys = [f"{{t{i % 10}}}:k{i}".encode() for i in range(100)]
    for k in keys:
        r.set(k, b"old", ex=100)
    r.mset({k: b"new" for k in keys})
    assert r.mget(keys) == [b"new"] * 100
    assert all(r.ttl(k) == -1 for k in keys[::7])


def test_multikey_in_other_db(server, r):
    c = server.client(db=4)
    mapping = {f"{{g{i % 5}}}x{i}".encode(): b"%d" % i for i in range(200)}
    c.mset(mapping)
    assert c.mget(list(mapping)) == list(mapping.values())
    assert r.mget(list(mapping)) == [None] * 200
    assert c.delete(*mapping) == 200
    c.close()

"""Job-queue scripts in the style of BullMQ, Bull and Sidekiq, run under concurrency: key names
passed in ARGV and built from data (undeclared keys), cmsgpack-packed arguments, EXISTS on a
parent key the script was not given, a loop over a sorted set that pushes to lists named by the
data. Producers, workers and a promoter run at once (with --threads 1, 2, 4); afterwards every
job is in exactly one place and its hash agrees. Also run with SHARDIS_TEST_TARGET=redis."""

import random
import threading
import time

import pytest

PREFIX = "bq:"

# KEYS: the id counter, the delayed set. ARGV: cmsgpack {name, queue, delay, parent}, the prefix,
# now (ms). The job's hash and its queue's wait list are named by the data.
ADD_JOB = """
local opts = cmsgpack.unpack(ARGV[1])
local id = redis.call('INCR', KEYS[1])
local job = ARGV[2] .. 'job:' .. id
redis.call('HSET', job, 'name', opts.name, 'queue', opts.queue, 'state', 'waiting')
if opts.parent and opts.parent ~= '' then
  if redis.call('EXISTS', opts.parent) == 1 then
    redis.call('SADD', opts.parent .. ':dependencies', job)
    redis.call('HSET', job, 'parent', opts.parent)
  end
end
if opts.delay > 0 then
  redis.call('HSET', job, 'state', 'delayed')
  redis.call('ZADD', KEYS[2], tonumber(ARGV[3]) + opts.delay, id)
else
  redis.call('LPUSH', ARGV[2] .. opts.queue .. ':wait', id)
end
return id
"""

# KEYS: the delayed set. ARGV: the prefix, now. Moves due jobs to their queue's wait list.
PROMOTE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], 0, ARGV[2], 'LIMIT', 0, 50)
for _, id in ipairs(due) do
  local job = ARGV[1] .. 'job:' .. id
  local queue = redis.call('HGET', job, 'queue')
  redis.call('ZREM', KEYS[1], id)
  redis.call('HSET', job, 'state', 'waiting')
  redis.call('LPUSH', ARGV[1] .. queue .. ':wait', id)
end
return #due
"""

# KEYS: the queue's wait and active lists. ARGV: the prefix. Takes a job, or returns false.
TAKE = """
local id = redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
if not id then return false end
redis.call('HSET', ARGV[1] .. 'job:' .. id, 'state', 'active')
return id
"""

# KEYS: the queue's active list, the completed counter. ARGV: the prefix, the id.
COMPLETE = """
if redis.call('LREM', KEYS[1], 1, ARGV[2]) == 0 then return redis.error_reply('not active') end
local job = ARGV[1] .. 'job:' .. ARGV[2]
redis.call('HSET', job, 'state', 'completed')
return redis.call('INCR', KEYS[2])
"""

QUEUES = ["emails", "images", "reports"]


def pack(fields):
    """cmsgpack-compatible MessagePack of a small map of strings and non-negative ints."""
    out = bytearray([0x80 | len(fields)])
    for k, v in fields.items():
        for item in (k, v):
            if isinstance(item, int):
                assert 0 <= item < 2**32
                out += bytes([0xce]) + item.to_bytes(4, "big") if item > 127 else bytes([item])
            else:
                b = item.encode()
                assert len(b) < 32
                out += bytes([0xa0 | len(b)]) + b
    return bytes(out)


def now_ms():
    return int(time.time() * 1000)


def test_job_queue_scripts_under_concurrency(server, r):
    shas = {name: r.script_load(body) for name, body in
            [("add", ADD_JOB), ("promote", PROMOTE), ("take", TAKE), ("complete", COMPLETE)]}
    r.hset(PREFIX + "parent:1", "name", "batch")
    stop = threading.Event()
    added, completed = [], []
    errors = []

    def producer(seed):
        rng = random.Random(seed)
        c = server.client()
        while not stop.is_set():
            opts = {"name": f"j{rng.randrange(1000)}", "queue": rng.choice(QUEUES),
                    "delay": rng.choice([0, 0, 0, 30]),
                    "parent": rng.choice(["", PREFIX + "parent:1", PREFIX + "parent:missing"])}
            added.append(c.evalsha(shas["add"], 2, PREFIX + "id", PREFIX + "delayed",
                                   pack(opts), PREFIX, now_ms()))
        c.close()

    def worker(seed):
        rng = random.Random(seed)
        c = server.client()
        while not stop.is_set():
            q = rng.choice(QUEUES)
            wait, active = f"{PREFIX}{q}:wait", f"{PREFIX}{q}:active"
            job = c.evalsha(shas["take"], 2, wait, active, PREFIX)
            if job is None:
                continue
            try:
                c.evalsha(shas["complete"], 2, active, PREFIX + "completed", PREFIX, job)
                completed.append(int(job))
            except Exception as e:  # noqa: BLE001: reported below
                errors.append(e)
        c.close()

    def promoter():
        c = server.client()
        while not stop.is_set():
            c.evalsha(shas["promote"], 1, PREFIX + "delayed", PREFIX, now_ms())
        c.close()

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=worker, args=(10 + i,)) for i in range(3)]
    threads.append(threading.Thread(target=promoter))
    for t in threads:
        t.start()
    stop.wait(1.5)
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert len(added) > 50 and len(completed) > 10

    # Every job is in exactly one place, and its hash says which.
    ids = {int(i) for i in added}
    assert ids == set(range(1, int(r.get(PREFIX + "id")) + 1))
    assert int(r.get(PREFIX + "completed")) == len(completed)
    places = {}
    for q in QUEUES:
        for state, key in (("waiting", f"{PREFIX}{q}:wait"), ("active", f"{PREFIX}{q}:active")):
            for j in r.lrange(key, 0, -1):
                assert int(j) not in places, j
                places[int(j)] = state
    for j in r.zrange(PREFIX + "delayed", 0, -1):
        assert int(j) not in places
        places[int(j)] = "delayed"
    for j in completed:
        assert j not in places
        places[j] = "completed"
    assert set(places) == ids
    for j, state in places.items():
        h = r.hgetall(f"{PREFIX}job:{j}")
        assert h[b"state"].decode() == state, (j, h)
    # Children of the existing parent are recorded; the missing parent got nothing.
    deps = r.smembers(PREFIX + "parent:1:dependencies")
    for d in deps:
        assert r.hget(d, "parent") == (PREFIX + "parent:1").encode()
    assert not r.exists(PREFIX + "parent:missing:dependencies")

"""Damaged dump.rdb files stop shardis' start with a clear error, never a crash.

Each case writes a file into a fresh directory and starts shardis on it: it exits with status 1,
its log has a "Fatal error loading the DB" line naming the byte offset (or the version), and
nothing in the log looks like a crash (sanitizer reports, signals, CHECK failures). Then a
fuzz-style loop over variants of a small valid file with every type (fixed seed): each either
loads, or exits with status 1 and that line; none crashes.
"""

from __future__ import annotations

import random

import pytest
import redis

from conftest import Server
from persistence_util import error_offset, shutdown, start_on_file
from test_rdb_format import fill

pytestmark = pytest.mark.shardis_only  # shardis' messages and exit statuses


@pytest.fixture(scope="module")
def valid_file(tmp_path_factory) -> bytes:
    """A small dump.rdb saved by shardis, with every type and encoding (test_rdb_format.fill)."""
    d = tmp_path_factory.mktemp("valid")
    srv = Server("shardis", d, threads=2).start()
    try:
        c = srv.client()
        fill(c)
        c.delete("l:big", "s:random", "l:bigelem", "set:big")  # keep it small
        for db in (5, 15):
            c.execute_command("SELECT", db)
            c.set(f"in-db-{db}", db, ex=5000)
        c.execute_command("SELECT", 0)
        assert c.save() is True
        assert shutdown(srv, "NOSAVE") == 0
    finally:
        if srv.alive():
            srv.stop()
    data = (d / "dump.rdb").read_bytes()
    assert data.startswith(b"REDIS0010") and len(data) < 200_000
    return data


def assert_refused(tmp_path, data: bytes, *phrases: str) -> str:
    """Starts shardis on data: it must exit 1 with a fatal error line holding every phrase."""
    srv, log = start_on_file(tmp_path / "d", data)
    if srv.alive():
        srv.stop()
        pytest.fail(f"shardis started on a damaged file; log:\n{log[-3000:]}")
    assert srv.proc.returncode == 1, (srv.proc.returncode, log[-3000:])
    lines = [line for line in log.splitlines() if "Fatal error loading" in line]
    assert len(lines) == 1, log[-3000:]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    return log


def test_truncated_file(tmp_path, valid_file):
    cut = len(valid_file) // 2
    log = assert_refused(tmp_path, valid_file[:cut], "dump.rdb", "at byte ", "end of file")
    assert 9 <= error_offset(log) <= cut


def test_truncated_before_the_checksum(tmp_path, valid_file):
    log = assert_refused(tmp_path, valid_file[:-3], "at byte ", "checksum", "end of file")
    assert error_offset(log) == len(valid_file) - 8


def test_truncated_signature(tmp_path, valid_file):
    assert_refused(tmp_path, valid_file[:5], "at byte ", "signature")


def test_empty_file(tmp_path):
    assert_refused(tmp_path, b"", "at byte 0", "end of file")


@pytest.mark.parametrize("version", ["0012", "0008", "0099"])
def test_unsupported_version(tmp_path, valid_file, version):
    assert_refused(tmp_path, b"REDIS" + version.encode() + valid_file[9:],
                   f"RDB version {int(version)} is not supported")


def test_version_not_a_number(tmp_path, valid_file):
    assert_refused(tmp_path, b"REDIS00x0" + valid_file[9:], "at byte 5", "version")


def test_bad_checksum(tmp_path, valid_file):
    bad = valid_file[:-1] + bytes([valid_file[-1] ^ 0x40])
    log = assert_refused(tmp_path, bad, "wrong checksum")
    assert error_offset(log) == len(valid_file) - 8


def test_bit_flip_in_the_middle_is_caught_by_the_checksum(tmp_path, valid_file):
    bad = bytearray(valid_file)
    bad[len(bad) // 3] ^= 0x01
    assert_refused(tmp_path, bytes(bad), "at byte ")


@pytest.mark.parametrize("data", [b"garbage" * 100, b"\x00" * 4096, b"REDIS",
                                  b"redis0010" + b"\xff" + b"\x00" * 8],
                         ids=["text", "zeros", "signature-only", "lowercase"])
def test_garbage(tmp_path, data):
    assert_refused(tmp_path, data, "at byte ")


def test_trailing_bytes_after_eof_are_ignored_or_refused_cleanly(tmp_path, valid_file):
    srv, log = start_on_file(tmp_path / "d", valid_file + b"extra bytes after the file")
    if srv.alive():  # Redis ignores what follows the checksum
        assert srv.client().exists("s:int") == 1
        srv.stop_and_check()
    else:
        assert srv.proc.returncode == 1, log[-3000:]


def test_missing_file_starts_empty(tmp_path):
    srv, _ = start_on_file(tmp_path / "d", None)
    assert srv.alive()
    assert srv.client().dbsize() == 0
    srv.stop_and_check()


def _variants(data: bytes, count: int, seed: int):
    """(name, bytes) damaged variants of data: truncations, bit flips, overwritten runs; with
    the checksum kept, or zeroed (a zero checksum is not checked, so the damage reaches the
    value decoders)."""
    rnd = random.Random(seed)
    body_end = len(data) - 8
    for i in range(count):
        bad = bytearray(data)
        kind = i % 4
        if kind == 0:
            cut = rnd.randrange(9, len(data) - 1)
            yield f"{i}-truncate-{cut}", bytes(bad[:cut])
            continue
        if kind == 1:
            for _ in range(rnd.randint(1, 3)):
                pos = rnd.randrange(9, body_end)
                bad[pos] ^= 1 << rnd.randrange(8)
            what = "flip"
        elif kind == 2:
            pos = rnd.randrange(9, body_end - 16)
            for j in range(rnd.randint(1, 16)):
                bad[pos + j] = rnd.randrange(256)
            what = "overwrite"
        else:
            pos = rnd.randrange(9, body_end)
            bad[pos] = rnd.choice([0x00, 0xff, 0x7f, 0x80, 0xc0, 0xfe])
            what = "special-byte"
        if rnd.random() < 0.7:
            bad[body_end:] = b"\x00" * 8
            what += "-nocrc"
        yield f"{i}-{what}-{pos}", bytes(bad)


def test_damaged_files_never_crash(tmp_path, valid_file):
    outcomes = {"loaded": 0, "refused": 0}
    for name, data in _variants(valid_file, 100, seed=1414):
        srv, log = start_on_file(tmp_path / name, data)
        if srv.alive():
            outcomes["loaded"] += 1
            # What loaded is served and saves again.
            c = srv.client()
            try:
                c.ping()
            except redis.ConnectionError:
                srv.proc.wait(10)
                pytest.fail(f"{name}: shardis answered PING, then exited with status "
                            f"{srv.proc.returncode}: it served clients after its load failed; "
                            f"log:\n{srv.tail(5)}", pytrace=False)
            assert c.save() is True, name
            assert shutdown(srv, "NOSAVE") == 0, name
            continue
        outcomes["refused"] += 1
        assert srv.proc.returncode == 1, (name, srv.proc.returncode, log[-3000:])
        fatal = [line for line in log.splitlines() if "Fatal error loading" in line]
        assert len(fatal) == 1, (name, log[-3000:])
        assert "at byte " in fatal[0] or "version" in fatal[0], (name, fatal[0])
    assert outcomes["refused"] >= 50, outcomes

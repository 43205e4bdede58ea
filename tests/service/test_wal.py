"""The write-ahead log (``--wal``): its record format read back with damage, the log's life on real files
(append, settle, segment deletion, the size bound, replay), its config, and the service built with it.

The crash tests (kill -9 under load, then a restart on the same log) and the fault tests on a running
server are in tests/reliability/test_wal.py.
"""

from __future__ import annotations

import time

import random
from dataclasses import replace
from pathlib import Path

import pytest

from luckrate.service.assemble import wal_format as fmt
from luckrate.service.config import InvalidConfig, build_config
from luckrate.service.assemble.wal import LogRefused, LogUnusable, WalOptions, WriteAheadLog
from luckrate.service.export.telemetry import no_count


def _record(kind: int, payload: bytes, signal: int = fmt.TRACES) -> bytes:
    return fmt.encode_header(kind, signal, payload) + payload


A, B, C = _record(fmt.REQUEST, b"a" * 40), _record(fmt.REQUEST, b"b" * 50), _record(fmt.SETTLED, b"c" * 16)
H = fmt.HEADER.size


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


# (name, segment bytes, what scan yields: payload's first byte for a record, reason for damage)
SCANS = [
    ("whole", A + B + C, ["a", "b", "c"]),
    ("empty", b"", []),
    ("header cut short", A + B[: H - 3], ["a", "torn_tail"]),
    ("payload cut short", A + B[:-1], ["a", "torn_tail"]),
    ("last payload flipped", A + _flip(B, H + 3), ["a", "torn_tail"]),
    ("middle payload flipped", A + _flip(B, H + 3) + C, ["a", "checksum", "c"]),
    ("middle length flipped", A + _flip(B, 4) + C, ["a", "checksum", "c"]),
    ("middle magic flipped", A + _flip(B, 0) + C, ["a", "checksum", "c"]),
    ("zeros after the last record (a power loss)", A + bytes(300), ["a", "torn_tail"]),
    ("garbage only", b"\x00garbage" * 10, ["torn_tail"]),
]


@pytest.mark.parametrize("name, data, expected", SCANS, ids=[s[0] for s in SCANS])
def test_scan_reads_every_record_and_names_the_damage(name, data, expected):
    got = [chr(item.payload[0]) if isinstance(item, fmt.Record) else item.reason for item in fmt.scan(data)]
    assert got == expected


def test_a_torn_tail_is_cut_back_to_the_last_whole_record():
    damage = [d for d in fmt.scan(A + B[:-5]) if isinstance(d, fmt.Damage)]
    assert [(d.start, d.end) for d in damage] == [(len(A), len(A + B) - 5)]


def test_settled_payload_round_trips_trace_ids():
    ids = [bytes([i]) * 16 for i in range(5)]
    assert fmt.trace_ids(fmt.settled_payload(ids)) == ids


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counts(dict):
    def __call__(self, name, value=1, **attributes):
        key = (name, tuple(sorted(attributes.items())))
        self[key] = self.get(key, 0) + value


def _log(directory: Path, **kw) -> WriteAheadLog:
    kw.setdefault("max_bytes", 1 << 30)
    count, clock = kw.pop("count", no_count), kw.pop("clock", time.monotonic)
    wal = WriteAheadLog(directory, WalOptions(**kw), count, clock)
    wal.open()
    return wal


def _replay(wal: WriteAheadLog) -> list[tuple[bytes, set]]:
    fed = []

    def feed(signal, body, keep):
        fed.append((body, keep))
        return ({body[:16]}, 1) if keep(body[:16]) else (set(), 0)

    wal.replay(feed)
    return fed


def _tid(n: int) -> bytes:
    return n.to_bytes(16, "big")


def _segments(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.wal"))


def test_lifecycle_append_settle_close_leaves_an_empty_directory(tmp_path):
    wal = _log(tmp_path / "wal")
    assert _replay(wal) == []
    wal.start()
    for n in range(3):
        wal.append(fmt.TRACES, _tid(n) + b"body", [_tid(n)])
    assert wal.bytes == 3 * (H + 20)
    wal.settle([_tid(0), _tid(1), _tid(2)])
    wal.close()
    assert _segments(tmp_path / "wal") == []
    wal.close()  # twice is safe


def test_close_without_replay_or_start_is_safe(tmp_path):
    wal = _log(tmp_path)
    wal.close()
    WriteAheadLog(tmp_path / "never-opened", WalOptions(max_bytes=1)).close()


def test_a_restart_replays_what_was_not_settled_and_skips_what_was(tmp_path):
    wal = _log(tmp_path)
    _replay(wal)
    for n in range(4):
        wal.append(fmt.TRACES, _tid(n) + b"x", [_tid(n)])
    wal.settle([_tid(1), _tid(3)])
    wal.close()  # with traces still open, their segments stay (a kill -9 is in tests/reliability/test_wal.py)
    again = _log(tmp_path)
    fed = _replay(again)
    assert [body[:16] for body, _ in fed] == [_tid(n) for n in range(4)]
    # The marks are read before any request is handed back: the first request already skips them.
    assert [n for n in range(4) if fed[0][1](_tid(n))] == [0, 2]
    again.settle([_tid(0), _tid(2)])
    again.close()
    assert _segments(tmp_path) == []


def test_segments_are_deleted_oldest_first_once_their_traces_are_settled(tmp_path):
    wal = _log(tmp_path, segment_bytes=64 * 1024, max_bytes=1 << 30)
    _replay(wal)
    body = b"y" * 40_000
    for n in range(4):  # one segment each (40 KB + 40 KB > 64 KiB)
        wal.append(fmt.TRACES, _tid(n) + body, [_tid(n)])
    first = _segments(tmp_path)
    assert len(first) == 4
    wal.settle([_tid(1), _tid(2)])  # segments 2 and 3 wait for segment 1: its trace is open
    assert _segments(tmp_path) == first
    wal.settle([_tid(0)])
    assert _segments(tmp_path) == first[3:]  # the current one stays until close
    wal.close()


def test_a_full_log_refuses_then_takes_requests_again_once_traces_are_settled(tmp_path):
    counts = Counts()
    wal = _log(tmp_path, max_bytes=100_000, count=counts)
    _replay(wal)
    body = b"z" * 20_000
    n = 0
    with pytest.raises(LogRefused) as refused:
        while n < 10:
            wal.append(fmt.TRACES, _tid(n) + body, [_tid(n)])
            n += 1
    assert refused.value.reason == "wal_full"
    assert str(refused.value) == "write-ahead log full (100000 bytes): retry later"
    assert n == 4 and wal.bytes <= 100_000
    wal.settle([_tid(i) for i in range(n)])
    wal.append(fmt.TRACES, _tid(99) + body, [_tid(99)])
    assert wal.bytes < 2 * len(body) + 4 * H + 64 * 4 + 100
    wal.close()
    assert sum(v for (name, _), v in counts.items() if name == "luckrate.wal.bytes") == wal.bytes > 0


def test_a_late_span_is_settled_with_its_record(tmp_path):
    """A span for a trace already settled is dropped as late by the grader and never settled again: its
    record is marked at once, or its segment would be kept for ever."""
    wal = _log(tmp_path, segment_bytes=64 * 1024)
    _replay(wal)
    wal.append(fmt.TRACES, _tid(1) + b"a" * 40_000, [_tid(1)])
    wal.settle([_tid(1)])
    wal.append(fmt.TRACES, _tid(1) + b"b" * 40_000, [_tid(1)])  # late
    wal.append(fmt.TRACES, _tid(2) + b"c" * 40_000, [_tid(2)])
    assert len(_segments(tmp_path)) == 1  # both earlier segments deleted: nothing open in them


def test_a_stale_segment_does_not_pin_the_log(tmp_path):
    clock = Clock()
    wal = _log(tmp_path, segment_bytes=64 * 1024, stale_after=600, clock=clock)
    _replay(wal)
    wal.append(fmt.TRACES, _tid(1) + b"a" * 40_000, [_tid(1)])  # never settled
    wal.append(fmt.TRACES, _tid(2) + b"b" * 40_000, [_tid(2)])
    clock.now += 601
    wal.settle([_tid(2)])
    assert len(_segments(tmp_path)) == 1


def test_replay_where_hands_back_the_open_traces_a_dead_grading_process_held(tmp_path):
    wal = _log(tmp_path, segment_bytes=64 * 1024)
    _replay(wal)
    for n in range(6):
        wal.append(fmt.TRACES, _tid(n) + b"s" * 30_000, [_tid(n)])
    wal.settle([_tid(0)])
    fed = []

    def feed(signal, body, keep):
        fed.append(body[:16])
        return ({body[:16]}, 1) if keep(body[:16]) else (set(), 0)

    assert wal.replay_where(feed, lambda tid: tid[-1] % 2 == 0) == 2  # traces 2 and 4; 0 is settled
    assert fed == [_tid(n) for n in range(2, 6)]  # only the segments holding them are read
    wal.settle([_tid(n) for n in range(1, 6)])
    wal.close()
    assert _segments(tmp_path) == []


def test_a_directory_in_use_by_another_process_is_refused(tmp_path):
    first = _log(tmp_path)
    with pytest.raises(LogUnusable, match=f"^{tmp_path} is in use by another luckrate process$"):
        _log(tmp_path)
    first.close()
    _log(tmp_path).close()


def test_a_directory_that_cannot_be_created_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogUnusable, match=r"^cannot use .*/file/wal: Not a directory$"):
        _log(tmp_path / "file" / "wal")


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("wal_sync", "always", "expected one of interval, request, got 'always'"),
        ("wal_sync_interval", 0, "expected a positive number of seconds, got 0"),
        ("wal_max_bytes", -1, "expected a positive integer, got -1"),
        ("wal_dir", "", "expected a non-empty string, got ''"),
    ],
)
def test_bad_wal_settings_are_refused_naming_the_key(key, value, problem):
    with pytest.raises(InvalidConfig) as e:
        build_config({key: value}, "t")
    assert str(e.value) == f"1 problem in config t\n  {key}: {problem}"


def test_wal_settings_without_a_log_directory_are_refused(tmp_path):
    from luckrate.service.config import ServiceConfig, finalize
    from tests.service.harness import SPEC

    cfg = ServiceConfig(spec=str(SPEC), wal_sync="request", wal_max_bytes=10)
    with pytest.raises(InvalidConfig) as e:
        finalize(cfg, "t", env={})
    assert str(e.value) == (
        "2 problems in config t\n  wal_sync: needs wal_dir, the log's directory (--wal DIR)\n"
        "  wal_max_bytes: needs wal_dir, the log's directory (--wal DIR)"
    )
    assert finalize(replace(cfg, wal_dir=str(tmp_path)), "t", env={}).wal_sync == "request"


def test_wal_settings_have_their_defaults():
    cfg = build_config({"wal_dir": "/var/lib/luckrate/wal"}, "t")
    assert (cfg.wal_dir, cfg.wal_sync, cfg.wal_sync_interval, cfg.wal_max_bytes) == (
        "/var/lib/luckrate/wal",
        "interval",
        1.0,
        1 << 30,
    )
    assert build_config({}, "t").wal_dir is None


@pytest.mark.e2e  # the whole service: receivers on loopback ports, grading processes
@pytest.mark.parametrize("workers", [1, 2])
def test_service_lifecycle_with_the_log(tmp_path, workers):
    """Built with ``--wal``: stop without start is safe; spans sent are graded and the log empties at a
    clean stop; an unusable directory stops the build with the key named."""
    from luckrate.core.spec_loader import load_specs
    from luckrate.service.app import build
    from tests.reliability.harness import fresh_request
    from tests.service.harness import SPEC, parse_metrics, post, total, wait_until
    from tests.builders import config

    cfg = replace(config(workers=workers), wal_dir=str(tmp_path / "wal"), root_grace=0.2)
    assert build(cfg, load_specs(SPEC)).stop(5)
    svc = build(cfg, load_specs(SPEC))
    svc.start()
    try:
        url = f"http://127.0.0.1:{svc.receivers[1].port}/v1/traces"
        body = fresh_request(random.Random(1), traces=6).SerializeToString()
        assert post(url, body, "application/x-protobuf")[0] == 200
        assert _segments(tmp_path / "wal")
        wait_until(lambda: total(parse_metrics(svc.metrics.reader.render()), "luckrate_runs_total") == 6, "6 runs")
    finally:
        assert svc.stop(20)
    assert _segments(tmp_path / "wal") == []
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidConfig, match="wal_dir: cannot use .*Not a directory"):
        build(replace(cfg, wal_dir=str(tmp_path / "file" / "wal")), load_specs(SPEC))


def test_settle_never_waits_for_a_writer_and_its_marks_are_written_by_the_lock_holder(tmp_path):
    """The grading thread's marks while a receiver thread holds the lock (writing a large request) are
    queued, and written right after that request, before the holder returns."""
    import threading

    wal = _log(tmp_path)
    _replay(wal)
    wal.append(fmt.TRACES, _tid(1) + b"x", [_tid(1)])
    wal._lock.acquire()  # a receiver thread mid-write (a stand-in: the real write is too quick to catch)
    try:
        done = threading.Event()
        threading.Thread(target=lambda: (wal.settle([_tid(1)]), done.set())).start()
        assert done.wait(5)  # returned without the lock
        assert not list(fmt.scan((tmp_path / "00000001.wal").read_bytes()))[1:]  # nothing marked yet
    finally:
        wal._lock.release()
    wal.append(fmt.TRACES, _tid(2) + b"y", [_tid(2)])
    kinds = [r.kind for r in fmt.scan((tmp_path / "00000001.wal").read_bytes())]
    assert kinds == [fmt.REQUEST, fmt.REQUEST, fmt.SETTLED]
    wal.settle([_tid(2)])
    wal.close()
    assert _segments(tmp_path) == []

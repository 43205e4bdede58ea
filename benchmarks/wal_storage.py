"""The write-ahead log's storage, chosen by measurement: append-only segment files with a checksum per record
(``luckrate.service.assemble.wal``, the Prometheus/Tempo design) against sqlite in WAL mode (the standard library's
``sqlite3``), each doing what the service asks of it per request.

    .venv/bin/python benchmarks/wal_storage.py [--requests N]

Per request: append the request's encoding (the benchmark traffic's 513-span request, ~200 KB) and, once
its 57 traces are graded, mark them settled and drop what is no longer needed (segments: unlink a segment
whose traces are all settled; sqlite: delete the rows). Both without a sync per request, which is the
service's default (``wal_sync = "interval"``): segments sync from a thread, sqlite with
``synchronous = NORMAL`` syncs at its checkpoints. Figures: µs of this process's CPU per request and per
span, and wall µs per append (what a receiver thread waits before it answers OK).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import traffic

from luckrate.service.assemble.wal import WalOptions, WriteAheadLog


def _segments(directory: Path, bodies: list[bytes], tids: list[list[bytes]]) -> float:
    wal = WriteAheadLog(directory, WalOptions(max_bytes=1 << 40))
    wal.open()
    wal.replay(lambda *a: (set(), 0))
    append = 0.0
    for i, (body, ids) in enumerate(zip(bodies, tids)):
        t = time.perf_counter()
        wal.append(1, body, ids)
        append += time.perf_counter() - t
        if i >= 4:  # graded a few requests later, as traces wait root_grace
            for tid in tids[i - 4]:
                wal.settle((tid,))  # one mark per trace, as the grader sends them
    wal.close()
    return append


def _sqlite(directory: Path, bodies: list[bytes], tids: list[list[bytes]]) -> float:
    db = sqlite3.connect(directory / "wal.db", isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE req (id INTEGER PRIMARY KEY, body BLOB)")
    db.execute("CREATE TABLE open (trace BLOB, req INTEGER)")
    db.execute("CREATE INDEX open_trace ON open (trace)")
    append = 0.0
    for i, (body, ids) in enumerate(zip(bodies, tids)):
        t = time.perf_counter()
        with db:
            rid = db.execute("INSERT INTO req (body) VALUES (?)", (body,)).lastrowid
            db.executemany("INSERT INTO open VALUES (?, ?)", [(tid, rid) for tid in ids])
        append += time.perf_counter() - t
        if i >= 4:
            for tid in tids[i - 4]:
                with db:
                    db.execute("DELETE FROM open WHERE trace = ?", (tid,))
            with db:
                db.execute("DELETE FROM req WHERE id NOT IN (SELECT req FROM open)")
    db.close()
    return append


def measure(requests: int) -> dict[str, dict[str, float]]:
    template = traffic.build()
    bodies = [template.render(i, 1) for i in range(requests)]
    tids = [
        [traffic.marker_for(i, 1) + j.to_bytes(8, "big") for j in range(traffic.TRACES_PER_REQUEST)]
        for i in range(requests)
    ]
    spans = traffic.TRACES_PER_REQUEST * traffic.SPANS_PER_TRACE
    out = {}
    for name, run in (("segments", _segments), ("sqlite", _sqlite)):
        with tempfile.TemporaryDirectory() as d:
            cpu = time.process_time()
            append = run(Path(d), bodies, tids)
            cpu = time.process_time() - cpu
        out[name] = {
            "cpu_us_per_request": cpu / requests * 1e6,
            "cpu_us_per_span": cpu / requests / spans * 1e6,
            "append_us": append / requests * 1e6,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args(argv)
    figures = measure(args.requests)
    print(f"{'storage':10} {'CPU µs/request':>15} {'CPU µs/span':>12} {'append µs':>10}")
    for name, f in figures.items():
        print(f"{name:10} {f['cpu_us_per_request']:15.0f} {f['cpu_us_per_span']:12.2f} {f['append_us']:10.0f}")
    seg, sql = figures["segments"], figures["sqlite"]
    print(f"sqlite / segments, CPU: {sql['cpu_us_per_request'] / seg['cpu_us_per_request']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    raise SystemExit(main())

"""What the write-ahead log (``--wal``) costs, and how fast a restart replays it, against the same server
without it in the same run.

    .venv/bin/python benchmarks/wal.py            # under 2 minutes on 2 cores
    .venv/bin/python benchmarks/wal.py --quick    # checks that everything runs

Rounds interleave, so background load on the shared machine hits each alike; each figure is the median,
and each "vs off" the median of the ratios to the round without the log just before it:

1. ``luckrate serve --workers 1`` saturated by the load generator (gRPC, 513-span requests, its own
   process and core): spans per second graded and CPU µs per graded span (server process), without the
   log, with it at the default sync policy (``wal_sync = "interval"``, 1 s), and with ``request`` (an
   ``fdatasync`` before every OK) for comparison;
2. replay: a server with grading held off (long timeouts) takes ``replay_requests`` requests, is killed
   with SIGKILL, and restarts on its log: spans per second read back and handed to grading (the server's
   own timing, logged at start), and spans per second from the restart to the last verdict.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass

import harness
import traffic
from run import _check_load, _cpu_us, _window_figures, cpu


@dataclass(frozen=True)
class Settings:
    repeats: int = 5
    """Pairs of rounds without and with the log (default sync); the ``request`` policy runs in the first
    two only (it is a comparison, not the promise)."""
    warm: float = 2.0
    window: float = 3.5
    root_grace: float = 0.5
    buffer: int = 50_000
    replay_requests: int = 200
    pin: bool = True


QUICK = Settings(repeats=1, warm=0.5, window=1.0, replay_requests=10)
MODES = {"off": (), "interval": ("--wal-sync", "interval"), "request": ("--wal-sync", "request")}


def throughput_round(s: Settings, mode: str) -> dict:
    directory = tempfile.mkdtemp(prefix="luckrate-wal-")
    wal = ("--wal", directory, *MODES[mode]) if mode != "off" else ()
    flags = ("--root-grace", str(s.root_grace), "--max-buffered-spans", str(s.buffer), "--workers", "1", *wal)
    server = harness.Serve(flags, cpu(s, 0))
    try:
        load = harness.Load("grpc", [server.target("grpc")], duration=s.warm + s.window + 1.0, cpus=cpu(s, 1))
        time.sleep(s.warm)
        a, ta, ca = server.scrape(), time.monotonic(), server.cpu_seconds()
        time.sleep(s.window)
        b, tb, cb = server.scrape(), time.monotonic(), server.cpu_seconds()
        result = load.stop()
    finally:
        server.proc.kill()
        shutil.rmtree(directory, ignore_errors=True)
    _check_load(result, f"serve --wal {mode}")
    figures = _window_figures(a, b, tb - ta)
    refused = harness.total(b, "luckrate_requests_refused_total", reason="wal_full")
    return figures | {"cpu_us": _cpu_us(cb - ca, figures, tb - ta), "wal_full": refused}


_REPLAYED = re.compile(r"replayed (\d+) span\(s\) of (\d+) trace\(s\) from (\d+) request\(s\) in ([\d.]+) s")


def replay_round(s: Settings) -> dict:
    directory = tempfile.mkdtemp(prefix="luckrate-wal-")
    hold = (
        "--root-grace",
        "3600",
        "--idle-timeout",
        "3600",
        "--max-trace-age",
        "7200",
        "--max-buffered-spans",
        "10000000",
        "--workers",
        "1",
        "--wal",
        directory,
    )
    try:
        first = harness.Serve(hold, cpu(s, 0))
        try:
            load = harness.Load(
                "grpc", [first.target("grpc")], duration=600, requests=s.replay_requests, cpus=cpu(s, 1)
            )
            result = load.result()
        finally:
            first.proc.kill()
        _check_load(result, "fill the log")
        started = time.monotonic()
        second = harness.Serve(
            (
                "--root-grace",
                str(s.root_grace),
                "--max-buffered-spans",
                "10000000",
                "--workers",
                "1",
                "--wal",
                directory,
                "--log-level",
                "INFO",
            ),
            cpu(s, 0),
        )
        try:
            listening = time.monotonic() - started
            traces = s.replay_requests * traffic.TRACES_PER_REQUEST
            harness.wait_for(
                lambda: harness.total(second.scrape(), "luckrate_runs_total") >= traces,
                "every replayed trace to be graded",
            )
            graded = time.monotonic() - started
            scraped = second.scrape()
        finally:
            second.proc.kill()
        m = _REPLAYED.search(second.proc.errors())
        if m is None:
            raise RuntimeError(f"no replay line in the server's log: {second.proc.errors()}")
        spans, seconds = int(m.group(1)), float(m.group(4))
        if spans != harness.total(scraped, "luckrate_spans_replayed_total") or spans != result["spans"]:
            raise RuntimeError(f"replayed {spans} spans, acknowledged {result['spans']}")
        return {
            "spans": spans,
            "replay_spans_per_s": spans / seconds,
            "listening_s": listening,
            "to_graded_spans_per_s": spans / graded,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _median(rounds: list[dict], key: str) -> float | None:
    values = [r[key] for r in rounds if r.get(key) is not None]
    return statistics.median(values) if values else None


def run(s: Settings, log) -> dict[str, list[dict]]:
    r: dict[str, list[dict]] = {k: [] for k in (*MODES, "replay")}
    for i in range(s.repeats):
        for mode in MODES if i < 2 else ("off", "interval"):
            started = time.monotonic()
            r[mode].append(throughput_round(s, mode))
            log(f"round {i + 1}/{s.repeats} {mode}: {time.monotonic() - started:.1f} s")
    for _ in range(max(1, s.repeats // 2)):
        r["replay"].append(replay_round(s))
    return r


def _paired(r: dict[str, list[dict]], mode: str, key: str) -> float | None:
    """The median over repeats of (this mode / off) in the same repeat: neighbours in time share the
    machine's background load, which on a shared 2-core machine moves single figures by ±15%."""
    ratios = [m[key] / o[key] for m, o in zip(r[mode], r["off"]) if m.get(key) and o.get(key)]
    return statistics.median(ratios) if ratios else None


def table(r: dict[str, list[dict]]) -> str:
    lines = [
        "| `--wal` | graded spans/s | vs off | CPU µs per graded span | vs off | p50 verdict delay | rounds |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        rate, cpu_us, p50 = (_median(r[mode], k) for k in ("graded_per_s", "cpu_us", "p50"))
        if None in (rate, cpu_us, p50):
            lines.append(f"| {mode} | — | | | | | {len(r[mode])} |")
            continue
        lines.append(
            f"| {mode} | {rate:,.0f} | {_paired(r, mode, 'graded_per_s'):.2f} | {cpu_us:.1f} | "
            f"{_paired(r, mode, 'cpu_us'):.2f} | {p50:.2f} s | {len(r[mode])} |"
        )
    replay = r["replay"]
    lines += [
        "",
        f"Replay of {replay[0]['spans']:,} spans after kill -9: "
        f"{_median(replay, 'replay_spans_per_s'):,.0f} spans/s read back and handed to grading, "
        f"listening after {_median(replay, 'listening_s'):.1f} s, "
        f"{_median(replay, 'to_graded_spans_per_s'):,.0f} spans/s from restart to last verdict",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int)
    args = p.parse_args(argv)
    s = QUICK if args.quick else Settings()
    if args.repeats:
        s = Settings(**{**s.__dict__, "repeats": args.repeats})
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    started = time.monotonic()
    log(f"luckrate wal benchmark: {s}; load average before: {harness.load_average()}")
    r = run(s, log)
    print(table(r))
    print(
        f"\n{s.repeats} round(s) in {time.monotonic() - started:.0f} s; load average after: "
        f"{harness.load_average()} (1/5/15 min, 2 cores)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

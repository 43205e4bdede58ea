"""luckrate's cost on this machine, against a ceiling measured in the same run.

    .venv/bin/python benchmarks/run.py            # full run, about 5 minutes on 2 cores
    .venv/bin/python benchmarks/run.py --quick    # tiny settings: checks that everything runs

What runs, each a real subprocess, every figure the median of ``--repeats`` rounds (rounds interleave
the scenarios so that background load hits them alike):

1. the null OTLP receiver (decode, count, walk attributes into a dict) over gRPC and over HTTP: the
   ceiling for a Python receiver;
2. ``luckrate serve`` end to end, fed by the load generator in its own process with realistic GenAI
   traces (513 spans a request) over gRPC and HTTP: spans per second *graded* (from
   ``luckrate_runs_total`` on its /metrics, times 9 spans a run), first-span-to-verdict p50/p99 (from
   ``luckrate_verdict_delay_seconds``) at saturation and at one agent process's rate, peak RSS;
   two luckrate processes, one per core, with the load split by trace id; resident bytes per buffered
   span from RSS before and after filling the buffer (grading held off by long timeouts);
3. grading cost per step at 10 / 100 / 1,000 / 10,000 steps (``grade_scaling.py``).

Servers are pinned to the first core and the load generator to the second (``--no-pin`` to let the
scheduler place them); the two-process figure pins one server per core and leaves the generator unpinned.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass

import grade_scaling
import harness
import traffic

DELAY = "luckrate_verdict_delay_seconds"


@dataclass(frozen=True)
class Settings:
    repeats: int = 3
    warm: float = 3.0
    """Seconds of load before the measured window: the span buffer fills, so the window sees steady state."""
    window: float = 5.0
    """Seconds measured."""
    paced_rate: float = 5_000.0
    """Spans/s offered for the unsaturated latency figure: one instrumented agent process at half its peak
    (~10k spans/s), below one luckrate process's capacity here."""
    fill_requests: int = 300
    """Requests per memory fill (x513 spans mixed, x342 tool spans)."""
    grade_sizes: tuple[int, ...] = grade_scaling.SIZES
    grade_steps_per_round: int = grade_scaling.STEPS_PER_ROUND
    root_grace: float = 0.5
    """Seconds a trace waits after its root span: the floor of every verdict delay below."""
    buffer: int = 50_000
    """``--max-buffered-spans`` for throughput runs: small enough to fill during ``warm``."""
    pin: bool = True


QUICK = Settings(
    repeats=1,
    warm=0.5,
    window=1.0,
    paced_rate=2_000.0,
    fill_requests=8,
    grade_sizes=(10, 100, 1_000),
    grade_steps_per_round=2_000,
)


def cpu(settings: Settings, n: int) -> set[int] | None:
    """The ``n``-th core we may use, for a pinned process; None without pinning or with a single core."""
    available = sorted(os.sched_getaffinity(0))
    return {available[n]} if settings.pin and len(available) > n and len(available) >= 2 else None


# ---- scenarios: each returns a dict of figures for one round ---------------------------------------


def null_round(s: Settings, transport: str) -> dict:
    proc, addr = harness.null_receiver(transport, cpu(s, 0))
    try:
        load = harness.Load(transport, [addr], duration=s.warm + s.window + 0.5, cpus=cpu(s, 1))
        start = time.monotonic()
        result = load.result()
        peak = harness.proc_status(proc.pid, "VmHWM")
    finally:
        proc.stop()
    _check_load(result, f"null {transport}")
    return {
        "spans_per_s": harness.rate_between(result["timeline"], start + s.warm, start + s.warm + s.window),
        "peak_rss": peak,
    }


def _serve_flags(s: Settings, workers: int = 1) -> tuple[str, ...]:
    return ("--root-grace", str(s.root_grace), "--max-buffered-spans", str(s.buffer), "--workers", str(workers))


def serve_round(s: Settings, transport: str, rate: float = 0.0) -> dict:
    server = harness.Serve(_serve_flags(s), cpu(s, 0))
    try:
        load = harness.Load(
            transport, [server.target(transport)], duration=s.warm + s.window + 1.0, rate=rate, cpus=cpu(s, 1)
        )
        time.sleep(s.warm)
        a, ta, ca = server.scrape(), time.monotonic(), server.cpu_seconds()
        time.sleep(s.window)
        b, tb, cb = server.scrape(), time.monotonic(), server.cpu_seconds()
        peak = server.peak_rss()
        result = load.stop()
    finally:
        server.proc.kill()  # a SIGTERM would grade the whole buffer first: not what is measured here
    _check_load(result, f"serve {transport}")
    figures = _window_figures(a, b, tb - ta)
    return figures | {"peak_rss": peak, "throttled": result["throttled"], "cpu_us": _cpu_us(cb - ca, figures, tb - ta)}


def _cpu_us(cpu: float, figures: dict, seconds: float) -> float | None:
    """CPU µs (every process of the server) per graded span: the cost, whatever share of the cores the
    shared machine gave the server in this window."""
    graded = figures["graded_per_s"] * seconds
    return cpu / graded * 1e6 if graded else None


def _window_figures(a: dict, b: dict, seconds: float) -> dict:
    def rate(name: str) -> float:
        return (harness.total(b, name) - harness.total(a, name)) / seconds

    errors = harness.total(b, "luckrate_grade_errors_total") + harness.total(b, "luckrate_traces_ungraded_total")
    if errors:
        raise RuntimeError(f"luckrate failed to grade {errors:.0f} trace(s) of the benchmark traffic")
    before, after = harness.buckets(a, DELAY), harness.buckets(b, DELAY)
    return {
        "graded_per_s": rate("luckrate_runs_total") * traffic.SPANS_PER_TRACE,
        "accepted_per_s": rate("luckrate_spans_accepted_total"),
        "p50": harness.quantile(0.5, before, after),
        "p99": harness.quantile(0.99, before, after),
    }


def two_process_round(s: Settings) -> dict:
    servers = [harness.Serve(_serve_flags(s), cpu(s, i)) for i in range(2)]
    try:
        load = harness.Load(
            "grpc", [sv.target("grpc") for sv in servers], duration=s.warm + s.window + 1.0, concurrency=8
        )
        time.sleep(s.warm)
        a, ta = [sv.scrape() for sv in servers], time.monotonic()
        time.sleep(s.window)
        b, tb = [sv.scrape() for sv in servers], time.monotonic()
        result = load.stop()
    finally:
        for sv in servers:
            sv.proc.kill()
    _check_load(result, "serve x2 grpc")
    per = [_window_figures(x, y, tb - ta)["graded_per_s"] for x, y in zip(a, b)]
    return {"graded_per_s": sum(per), "split": per}


def workers_round(s: Settings, workers: int = 2, rate: float = 0.0) -> dict:
    """One ``luckrate serve --workers N``, it and the load generator unpinned: what a user gets from the
    default ``workers = auto`` on this machine."""
    server = harness.Serve(_serve_flags(s, workers), None)
    try:
        load = harness.Load("grpc", [server.target("grpc")], duration=s.warm + s.window + 1.0, concurrency=8, rate=rate)
        time.sleep(s.warm)
        a, ta, ca = server.scrape(), time.monotonic(), server.cpu_seconds()
        time.sleep(s.window)
        b, tb, cb = server.scrape(), time.monotonic(), server.cpu_seconds()
        result = load.stop()
    finally:
        server.proc.kill()
    _check_load(result, f"serve --workers {workers} grpc")
    figures = _window_figures(a, b, tb - ta)
    return figures | {"cpu_us": _cpu_us(cb - ca, figures, tb - ta)}


def memory_round(s: Settings) -> dict:
    """RSS growth per buffered span while nothing completes (timeouts far beyond the run)."""
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
    )
    server = harness.Serve(hold, cpu(s, 0))
    try:
        accepted = 0

        def fill(requests: int, tools_only: bool) -> int:
            nonlocal accepted
            result = harness.Load(
                "grpc",
                [server.target("grpc")],
                duration=600,
                requests=requests,
                concurrency=2,
                tools_only=tools_only,
                cpus=cpu(s, 1),
            ).result()
            _check_load(result, "memory fill")
            accepted += result["spans"]
            harness.wait_for(
                lambda: harness.total(server.scrape(), "luckrate_spans_accepted_total") == accepted,
                "the fill to be accepted",
            )
            return result["spans"]

        fill(max(2, s.fill_requests // 10), False)  # warm-up: allocator arenas, interned names, code paths
        rss0 = server.rss()
        mixed = fill(s.fill_requests, False)
        rss1 = server.rss()
        tools = fill(s.fill_requests * traffic.SPANS_PER_TRACE // traffic.TOOL_SPANS_PER_TRACE, True)
        rss2 = server.rss()
        active = harness.total(server.scrape(), "luckrate_traces_active")
    finally:
        server.proc.kill()
    return {
        "per_span": (rss1 - rss0) / mixed,
        "per_tool_span": (rss2 - rss1) / tools,
        "buffered": accepted,
        "traces_active": active,
    }


def grade_round(s: Settings) -> dict:
    grade_scaling.STEPS_PER_ROUND = s.grade_steps_per_round
    return {n: grade_scaling.per_step_us(grade_scaling.trajectory(n)) for n in s.grade_sizes}


def _check_load(result: dict, what: str) -> None:
    if result["errors"]:
        raise RuntimeError(f"{what}: {result['errors']} request(s) failed: {result['first_error']}")
    if not result["spans"]:
        raise RuntimeError(f"{what}: no request was acknowledged")


# ---- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    figure: str
    values: list
    unit: str
    ratio: float | None = None
    """The median as a multiple of the null receiver's figure measured in the same run."""
    ratio_of: str = ""
    target: str = ""
    met: bool | None = None

    @property
    def median(self) -> float | None:
        vals = [v for v in self.values if v is not None]
        return statistics.median(vals) if vals else None


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit in ("spans/s", "B"):
        return f"{v:,.0f}"
    if unit == "MiB":
        return f"{v / 2**20:,.0f}"
    if unit == "s":
        return f"{v:.3f}"
    return f"{v:.2f}"


def rows(r: dict, s: Settings) -> list[Row]:
    med = statistics.median
    null = {t: med(x["spans_per_s"] for x in r[f"null_{t}"]) for t in ("grpc", "http")}
    null_rss = med(x["peak_rss"] for x in r["null_grpc"])
    null_us = 1e6 / null["grpc"]
    out = [
        Row("null receiver gRPC: spans/s", [x["spans_per_s"] for x in r["null_grpc"]], "spans/s", 1.0, "null gRPC"),
        Row("null receiver HTTP: spans/s", [x["spans_per_s"] for x in r["null_http"]], "spans/s", 1.0, "null HTTP"),
    ]
    for t, name in (("grpc", "gRPC"), ("http", "HTTP")):
        g = [x["graded_per_s"] for x in r[f"serve_{t}"]]
        target = "≥ 0.25x" if t == "grpc" else ""
        ratio = med(g) / null[t]
        out += [
            Row(
                f"serve {name}: spans/s graded",
                g,
                "spans/s",
                ratio,
                f"null {name}",
                target,
                ratio >= 0.25 if target else None,
            ),
            Row(
                f"serve {name}: spans/s accepted",
                [x["accepted_per_s"] for x in r[f"serve_{t}"]],
                "spans/s",
                med(x["accepted_per_s"] for x in r[f"serve_{t}"]) / null[t],
                f"null {name}",
            ),
            Row(f"serve {name}: verdict delay p50, saturated", [x["p50"] for x in r[f"serve_{t}"]], "s"),
            Row(f"serve {name}: verdict delay p99, saturated", [x["p99"] for x in r[f"serve_{t}"]], "s"),
            Row(
                f"serve {name}: peak RSS",
                [x["peak_rss"] for x in r[f"serve_{t}"]],
                "MiB",
                med(x["peak_rss"] for x in r[f"serve_{t}"]) / null_rss,
                "null gRPC peak RSS",
            ),
        ]
    paced = r["serve_paced"]
    out += [
        Row(
            f"serve gRPC at {s.paced_rate:,.0f} spans/s offered: spans/s graded",
            [x["graded_per_s"] for x in paced],
            "spans/s",
        ),
        Row(f"serve gRPC at {s.paced_rate:,.0f} spans/s offered: verdict delay p50", [x["p50"] for x in paced], "s"),
        Row(
            f"serve gRPC at {s.paced_rate:,.0f} spans/s offered: verdict delay p99",
            [x["p99"] for x in paced],
            "s",
            target=f"≤ root_grace + 0.3 = {s.root_grace + 0.3:.1f}",
            met=_le(med_or_none([x["p99"] for x in paced]), s.root_grace + 0.3),
        ),
    ]
    one = med(x["graded_per_s"] for x in r["serve_grpc"])
    w2 = [x["graded_per_s"] for x in r["serve_w2"]]
    out.append(
        Row(
            "serve --workers 2 (unpinned), gRPC: spans/s graded",
            w2,
            "spans/s",
            med(w2) / one,
            "serve gRPC (1 worker)",
            "≥ 1.7x",
            med(w2) / one >= 1.7,
        )
    )
    out.append(
        Row("serve --workers 2 (unpinned), gRPC: verdict delay p99, saturated", [x["p99"] for x in r["serve_w2"]], "s")
    )
    w2_paced = r["serve_w2_paced"]
    out.append(
        Row(
            f"serve --workers 2 at {s.paced_rate:,.0f} spans/s offered: verdict delay p99",
            [x["p99"] for x in w2_paced],
            "s",
            target=f"≤ root_grace + 0.3 = {s.root_grace + 0.3:.1f}",
            met=_le(med_or_none([x["p99"] for x in w2_paced]), s.root_grace + 0.3),
        )
    )
    cpu1 = [x["cpu_us"] for x in r["serve_grpc"]]
    cpu2 = [x["cpu_us"] for x in r["serve_w2"]]
    out.append(Row("serve gRPC (1 worker): CPU µs per graded span", cpu1, "µs"))
    out.append(
        Row(
            "serve --workers 2: CPU µs per graded span, all 3 processes",
            cpu2,
            "µs",
            _div(med_or_none(cpu2), med_or_none(cpu1)),
            "serve gRPC (1 worker)",
        )
    )
    two = [x["graded_per_s"] for x in r["serve_x2"]]
    out.append(
        Row(
            "2 serve processes (1 per core), gRPC: spans/s graded",
            two,
            "spans/s",
            med(two) / null["grpc"],
            "null gRPC (1 process)",
        )
    )
    mem = r["memory"]
    per_tool = [x["per_tool_span"] for x in mem]
    out += [
        Row("resident bytes per buffered span (9-span runs)", [x["per_span"] for x in mem], "B"),
        Row("resident bytes per buffered tool span", per_tool, "B", target="≤ 1,024", met=med(per_tool) <= 1024),
    ]
    base = med(x[100] for x in r["grade"]) if 100 in s.grade_sizes else None
    for n in s.grade_sizes:
        vals = [x[n] for x in r["grade"]]
        flat = med(vals) / base if base else None
        target = "≤ 2x the 100-step cost" if n >= 100 and base else ""
        out.append(
            Row(
                f"grade {n:,} steps: µs per step ({flat:.2f}x the 100-step cost)"
                if flat
                else f"grade {n:,} steps: µs per step",
                vals,
                "µs",
                med(vals) / null_us,
                "null gRPC µs/span",
                target,
                (flat <= 2.0) if target else None,
            )
        )
    return out


def med_or_none(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _le(value: float | None, bound: float) -> bool:
    return value is not None and value <= bound


def table(rows_: list[Row], repeats: int) -> str:
    head = ("figure", f"median of {repeats}", "unit", "rounds", "vs null", "target")
    lines = [head]
    for row in rows_:
        rounds = " ".join(_fmt(v, row.unit) for v in row.values)
        ratio = f"{row.ratio:.2f}x {row.ratio_of}" if row.ratio is not None else ""
        target = f"{row.target} {'met' if row.met else 'MISSED'}" if row.target else ""
        lines.append((row.figure, _fmt(row.median, row.unit), row.unit, rounds, ratio, target))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]

    def fmt(line: tuple[str, ...]) -> str:
        return "  ".join(
            c.ljust(w) if i in (0, 3, 4, 5) else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))
        ).rstrip()

    return "\n".join([fmt(lines[0]), fmt(tuple("-" * w for w in widths))] + [fmt(x) for x in lines[1:]])


def run(s: Settings, log) -> dict:
    r: dict[str, list] = {
        k: []
        for k in (
            "null_grpc",
            "null_http",
            "serve_grpc",
            "serve_http",
            "serve_paced",
            "serve_w2",
            "serve_w2_paced",
            "serve_x2",
            "memory",
            "grade",
        )
    }
    for i in range(s.repeats):
        steps = (
            ("null_grpc", lambda: null_round(s, "grpc")),
            ("null_http", lambda: null_round(s, "http")),
            ("serve_grpc", lambda: serve_round(s, "grpc")),
            ("serve_http", lambda: serve_round(s, "http")),
            ("serve_paced", lambda: serve_round(s, "grpc", s.paced_rate)),
            ("serve_w2", lambda: workers_round(s)),
            ("serve_w2_paced", lambda: workers_round(s, rate=s.paced_rate)),
            ("serve_x2", lambda: two_process_round(s)),
            ("memory", lambda: memory_round(s)),
            ("grade", lambda: grade_round(s)),
        )
        for key, step in steps:
            started = time.monotonic()
            r[key].append(step())
            log(f"round {i + 1}/{s.repeats} {key}: {time.monotonic() - started:.1f} s, load {harness.load_average()}")
    return r


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny settings (seconds, not minutes); figures are rough")
    p.add_argument("--repeats", type=int, help="rounds per figure (default 3; the median is reported)")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers and load generator to cores")
    p.add_argument("--json", metavar="FILE", help="also write every round's raw figures here")
    args = p.parse_args(argv)
    s = QUICK if args.quick else Settings()
    if args.repeats or args.no_pin:
        s = Settings(**{**s.__dict__, "repeats": args.repeats or s.repeats, "pin": not args.no_pin})
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    started = time.monotonic()
    log(f"luckrate benchmarks: {s}; load average before: {harness.load_average()}")
    r = run(s, log)
    print(table(rows(r, s), s.repeats))
    print(
        f"\n{s.repeats} round(s) in {time.monotonic() - started:.0f} s; load average after: "
        f"{harness.load_average()} (1/5/15 min, 2 cores)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": s.__dict__, "rounds": r}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())

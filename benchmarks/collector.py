"""What the OpenTelemetry Collector in front costs: the same traffic straight to luckrate and through the
collector (collector-config/otelcol.yaml as shipped: memory_limiter, batch, the otlp/luckrate exporter with
gzip, retry and queue), measured in the same run.

    .venv/bin/python benchmarks/collector.py            # 3 rounds, about 2.5 minutes on 2 cores
    .venv/bin/python benchmarks/collector.py --quick    # 1 short round: checks that everything runs

Each round runs four scenarios back to back, each with real subprocesses: ``luckrate serve`` pinned to the
first core, and the load generator (benchmarks/loadgen.py, OTLP/gRPC, 513-span requests) plus, through the
collector, the collector (collector-config/otelcol-luckrate/otelcol-luckrate) left to the scheduler.

- saturated (load as fast as accepted), straight and through the collector: spans/s graded by luckrate
  over the measured window (``luckrate_runs_total`` x 9 spans a run), and spans/s the collector passed on
  (``otelcol_exporter_sent_spans``);
- paced at ``paced_rate`` spans/s, under both paths' capacity, straight and through the collector: CPU
  seconds per million spans from ``/proc/PID/stat`` over the window, luckrate's per span graded and the
  collector's per span it passed on.

Saturated, the collector takes in more than luckrate grades and queues the rest, so CPU per span is only
compared at the paced rate. The figure reported is the median of the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass

import harness
import traffic

BINARY = harness.ROOT / "collector-config" / "otelcol-luckrate" / "otelcol-luckrate"
CONFIG = harness.ROOT / "collector-config" / "otelcol.yaml"
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Settings:
    repeats: int = 3
    warm: float = 5.0
    """Seconds of load before the window: luckrate's span buffer fills, so the window sees steady state."""
    window: float = 5.0
    root_grace: float = 0.5
    buffer: int = 50_000
    paced_rate: float = 4_000.0
    """Spans/s offered for the CPU figures: under both paths' capacity, so CPU per span compares like with
    like. Saturated, the collector also spends CPU on spans it only queues, and luckrate's share counts
    spans it only buffers."""
    pin: bool = True
    retry_after: int | None = None
    """luckrate's ``retry_after`` (seconds a throttled client is told to wait; luckrate's default is 5)."""


QUICK = Settings(repeats=1, warm=1.0, window=2.0, paced_rate=2_000.0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (all its threads), from /proc/PID/stat."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """The collector on the shipped otelcol.yaml, ports moved to free loopback ones, luckrate's exporter
    aimed at ``luckrate`` and alone in the traces pipeline (no tracing backend here)."""

    def __init__(self, luckrate: str):
        if not BINARY.is_file():
            raise SystemExit(f"no collector at {BINARY}: run collector-config/otelcol-luckrate/build.sh")
        self.ports = {k: _port() for k in ("grpc", "http", "health", "telemetry", "prometheus")}
        override = {
            "extensions": {"health_check": {"endpoint": f"127.0.0.1:{self.ports['health']}"}},
            "receivers": {
                "otlp": {
                    "protocols": {
                        "grpc": {"endpoint": f"127.0.0.1:{self.ports['grpc']}"},
                        "http": {"endpoint": f"127.0.0.1:{self.ports['http']}"},
                    }
                }
            },
            "exporters": {
                "prometheus": {"endpoint": f"127.0.0.1:{self.ports['prometheus']}"},
                "otlp/luckrate": {"endpoint": luckrate},
            },
            "service": {
                "pipelines": {"traces": {"exporters": ["otlp/luckrate"]}},
                "telemetry": {
                    "logs": {"level": "warn"},
                    "metrics": {
                        "readers": [
                            {
                                "pull": {
                                    "exporter": {"prometheus": {"host": "127.0.0.1", "port": self.ports["telemetry"]}}
                                }
                            }
                        ]
                    },
                },
            },
        }
        self._override = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        json.dump(override, self._override)
        self._override.close()
        self._log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [str(BINARY), "--config", str(CONFIG), "--config", self._override.name],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "TRACING_BACKEND_ENDPOINT": "127.0.0.1:1"},
        )
        harness.wait_for(self._healthy, "the collector's health check", timeout=60)

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            self._log.seek(0)
            raise RuntimeError(f"collector exited: {self._log.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['health']}/", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def sent_spans(self) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['telemetry']}/metrics", timeout=30) as r:
            samples = harness.parse_metrics(r.read().decode())
        return sum(
            harness.total(samples, name, exporter="otlp/luckrate")
            for name in ("otelcol_exporter_sent_spans", "otelcol_exporter_sent_spans_total")
        )

    def kill(self) -> None:
        # SIGKILL: a SIGTERM would drain the queue into luckrate first, which is not what is measured.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        os.unlink(self._override.name)


def _cpu(s: Settings, n: int) -> set[int] | None:
    available = sorted(os.sched_getaffinity(0))
    return {available[n]} if s.pin and len(available) >= 2 else None


def one_path(s: Settings, via_collector: bool, rate: float = 0.0) -> dict:
    flags = ("--root-grace", str(s.root_grace), "--max-buffered-spans", str(s.buffer))
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as toml:
        if s.retry_after is not None:
            toml.write(f"retry_after = {s.retry_after}\n")
            toml.flush()
            flags += ("--config", toml.name)
        return _measure(s, flags, via_collector, rate)


def _measure(s: Settings, flags: tuple[str, ...], via_collector: bool, rate: float) -> dict:
    server = harness.Serve(flags, _cpu(s, 0))
    collector = Collector(server.target("grpc")) if via_collector else None
    try:
        target = f"127.0.0.1:{collector.ports['grpc']}" if collector else server.target("grpc")
        load = harness.Load(
            "grpc", [target], duration=s.warm + s.window + 1.0, rate=rate, cpus=None if collector else _cpu(s, 1)
        )
        time.sleep(s.warm)
        a, cpu_a = server.scrape(), cpu_seconds(server.proc.pid)
        col_a = (collector.sent_spans(), cpu_seconds(collector.proc.pid)) if collector else None
        t0 = time.monotonic()
        time.sleep(s.window)
        b, cpu_b = server.scrape(), cpu_seconds(server.proc.pid)
        col_b = (collector.sent_spans(), cpu_seconds(collector.proc.pid)) if collector else None
        seconds = time.monotonic() - t0
        result = load.stop()
    finally:
        server.proc.kill()
        if collector:
            collector.kill()
    if result["errors"]:
        raise RuntimeError(f"{result['errors']} request(s) failed: {result['first_error']}")
    graded = (
        harness.total(b, "luckrate_runs_total") - harness.total(a, "luckrate_runs_total")
    ) * traffic.SPANS_PER_TRACE
    if not graded:
        raise RuntimeError("luckrate graded nothing in the window")
    out = {"graded_per_s": graded / seconds, "luckrate_cpu_per_m": (cpu_b - cpu_a) / graded * 1e6}
    if col_a and col_b:
        passed = col_b[0] - col_a[0]
        out["collector_cpu_per_m"] = (col_b[1] - col_a[1]) / passed * 1e6 if passed else None
        out["collector_passed_per_s"] = passed / seconds
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one short round: checks that everything runs")
    p.add_argument("--repeats", type=int, help="rounds (default 3; the median is reported)")
    p.add_argument("--no-pin", action="store_true", help="do not pin luckrate to the first core")
    p.add_argument("--retry-after", type=int, help="luckrate's retry_after, seconds (its default: 5)")
    args = p.parse_args(argv)
    s = QUICK if args.quick else Settings()
    s = Settings(
        **{**s.__dict__, "repeats": args.repeats or s.repeats, "pin": not args.no_pin, "retry_after": args.retry_after}
    )
    started = time.monotonic()
    print(f"collector benchmark: {s}; load average before: {harness.load_average()}", file=sys.stderr)
    direct, via, paced_direct, paced_via = [], [], [], []
    for i in range(s.repeats):  # interleaved, so that background load hits every path alike
        direct.append(one_path(s, via_collector=False))
        via.append(one_path(s, via_collector=True))
        paced_direct.append(one_path(s, via_collector=False, rate=s.paced_rate))
        paced_via.append(one_path(s, via_collector=True, rate=s.paced_rate))
        print(
            f"round {i + 1}/{s.repeats}: saturated {direct[-1]} / {via[-1]}; paced {paced_direct[-1]} / "
            f"{paced_via[-1]}",
            file=sys.stderr,
        )

    def med(rounds: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rounds if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def row(label: str, rounds: list[dict], key: str, fmt: str) -> tuple[str, str, str]:
        vals = [r[key] for r in rounds if r.get(key) is not None]
        return (label, format(statistics.median(vals), fmt) if vals else "—", " ".join(format(v, fmt) for v in vals))

    g_direct, g_via = med(direct, "graded_per_s"), med(via, "graded_per_s")
    at = f"at {s.paced_rate:,.0f} spans/s offered"
    lines = [
        ("figure", f"median of {s.repeats}", "rounds"),
        row("saturated, straight to luckrate: spans/s graded", direct, "graded_per_s", ",.0f"),
        row("saturated, through the collector: spans/s graded", via, "graded_per_s", ",.0f"),
        ("saturated, through / straight", f"{g_via / g_direct:.2f}x", ""),
        row("saturated, collector: spans/s passed on", via, "collector_passed_per_s", ",.0f"),
        row(f"{at}, straight: spans/s graded", paced_direct, "graded_per_s", ",.0f"),
        row(f"{at}, through the collector: spans/s graded", paced_via, "graded_per_s", ",.0f"),
        row(f"{at}: luckrate CPU s per million spans, straight", paced_direct, "luckrate_cpu_per_m", ".1f"),
        row(f"{at}: luckrate CPU s per million spans, through the collector", paced_via, "luckrate_cpu_per_m", ".1f"),
        row(f"{at}: collector CPU s per million spans", paced_via, "collector_cpu_per_m", ".1f"),
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for n, line in enumerate(lines):
        print(f"{line[0].ljust(widths[0])}  {line[1].rjust(widths[1])}  {line[2]}".rstrip())
        if n == 0:
            print(f"{'-' * widths[0]}  {'-' * widths[1]}  {'-' * widths[2]}")
    print(
        f"\n{s.repeats} round(s) in {time.monotonic() - started:.0f} s; load average after: "
        f"{harness.load_average()} (1/5/15 min, 2 cores, shared)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the OpenTelemetry Collector in front costs: the same traffic straight to luckrate and through the
collector (collector-config/otelcol.yaml as shipped: memory_limiter, batch, the otlp/luckrate exporter with
gzip, retry and queue), measured in the same run.

    .venv/bin/python benchmarks/collector.py            # 3 rounds, about 1 minute on 2 cores
    .venv/bin/python benchmarks/collector.py --quick    # 1 short round: checks that everything runs

Each round runs both paths back to back, each a real subprocess: ``luckrate serve`` pinned to the first
core, and the load generator (benchmarks/loadgen.py, OTLP/gRPC, 513-span requests, as fast as accepted)
plus, on the second path, the collector (collector-config/otelcol-luckrate/otelcol-luckrate) left to the
scheduler. Reported, the median of the rounds:

- spans/s graded by luckrate over the measured window (``luckrate_runs_total`` x 9 spans a run);
- CPU seconds per million spans, from ``/proc/PID/stat`` over the same window: luckrate's per span graded,
  the collector's per span it exported (``otelcol_exporter_sent_spans``).

Saturated, luckrate is the bottleneck on both paths, so the collector queues what luckrate has not yet
taken; its figure is CPU per span actually passed on, not per span queued.
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
    warm: float = 3.0
    window: float = 5.0
    root_grace: float = 0.5
    buffer: int = 50_000
    pin: bool = True


QUICK = Settings(repeats=1, warm=1.0, window=2.0)


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
            "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{self.ports['grpc']}"},
                                                 "http": {"endpoint": f"127.0.0.1:{self.ports['http']}"}}}},
            "exporters": {"prometheus": {"endpoint": f"127.0.0.1:{self.ports['prometheus']}"},
                          "otlp/luckrate": {"endpoint": luckrate}},
            "service": {"pipelines": {"traces": {"exporters": ["otlp/luckrate"]}},
                        "telemetry": {"logs": {"level": "warn"}, "metrics": {"readers": [{"pull": {"exporter": {
                            "prometheus": {"host": "127.0.0.1", "port": self.ports["telemetry"]}}}}]}}},
        }
        self._override = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        json.dump(override, self._override)
        self._override.close()
        self._log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([str(BINARY), "--config", str(CONFIG), "--config", self._override.name],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "TRACING_BACKEND_ENDPOINT": "127.0.0.1:1"})
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
        return sum(harness.total(samples, name, exporter="otlp/luckrate")
                   for name in ("otelcol_exporter_sent_spans", "otelcol_exporter_sent_spans_total"))

    def kill(self) -> None:
        # SIGKILL: a SIGTERM would drain the queue into luckrate first, which is not what is measured.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        os.unlink(self._override.name)


def _cpu(s: Settings, n: int) -> set[int] | None:
    available = sorted(os.sched_getaffinity(0))
    return {available[n]} if s.pin and len(available) >= 2 else None


def one_path(s: Settings, via_collector: bool) -> dict:
    server = harness.Serve(("--root-grace", str(s.root_grace), "--max-buffered-spans", str(s.buffer)), _cpu(s, 0))
    collector = Collector(server.target("grpc")) if via_collector else None
    try:
        target = f"127.0.0.1:{collector.ports['grpc']}" if collector else server.target("grpc")
        load = harness.Load("grpc", [target], duration=s.warm + s.window + 1.0, cpus=None if collector else _cpu(s, 1))
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
    graded = (harness.total(b, "luckrate_runs_total") - harness.total(a, "luckrate_runs_total")) * traffic.SPANS_PER_TRACE
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
    args = p.parse_args(argv)
    s = QUICK if args.quick else Settings()
    s = Settings(**{**s.__dict__, "repeats": args.repeats or s.repeats, "pin": not args.no_pin})
    started = time.monotonic()
    print(f"collector benchmark: {s}; load average before: {harness.load_average()}", file=sys.stderr)
    direct, via = [], []
    for i in range(s.repeats):  # interleaved, so that background load hits both paths alike
        direct.append(one_path(s, via_collector=False))
        via.append(one_path(s, via_collector=True))
        print(f"round {i + 1}/{s.repeats}: direct {direct[-1]} / via collector {via[-1]}", file=sys.stderr)

    def med(rounds: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rounds if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    g_direct, g_via = med(direct, "graded_per_s"), med(via, "graded_per_s")
    lines = [("figure", f"median of {s.repeats}", "rounds"),
             ("straight to luckrate: spans/s graded", f"{g_direct:,.0f}",
              " ".join(f"{r['graded_per_s']:,.0f}" for r in direct)),
             ("through the collector: spans/s graded", f"{g_via:,.0f}",
              " ".join(f"{r['graded_per_s']:,.0f}" for r in via)),
             ("through / straight", f"{g_via / g_direct:.2f}x", ""),
             ("luckrate CPU s per million spans, straight", f"{med(direct, 'luckrate_cpu_per_m'):.1f}",
              " ".join(f"{r['luckrate_cpu_per_m']:.1f}" for r in direct)),
             ("luckrate CPU s per million spans, through the collector", f"{med(via, 'luckrate_cpu_per_m'):.1f}",
              " ".join(f"{r['luckrate_cpu_per_m']:.1f}" for r in via)),
             ("collector CPU s per million spans passed on", f"{med(via, 'collector_cpu_per_m'):.1f}",
              " ".join(f"{r['collector_cpu_per_m']:.1f}" for r in via if r.get("collector_cpu_per_m"))),
             ("collector: spans/s passed on", f"{med(via, 'collector_passed_per_s'):,.0f}",
              " ".join(f"{r['collector_passed_per_s']:,.0f}" for r in via))]
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for n, line in enumerate(lines):
        print(f"{line[0].ljust(widths[0])}  {line[1].rjust(widths[1])}  {line[2]}".rstrip())
        if n == 0:
            print(f"{'-' * widths[0]}  {'-' * widths[1]}  {'-' * widths[2]}")
    print(f"\n{s.repeats} round(s) in {time.monotonic() - started:.0f} s; load average after: "
          f"{harness.load_average()} (1/5/15 min, 2 cores, shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

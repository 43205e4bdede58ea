"""The real OpenTelemetry Collector in front of the real ``luckrate serve``: the collector binary that
collector-config/otelcol-luckrate/build.sh builds, run as a subprocess on free loopback ports with the
shipped configs plus a small override file (ports, and what the test varies), and the real SDK exporters
sending to it.

Nothing here stands in for anything: the collector is the Go binary built from the collector's own
modules, luckrate is ``python -m luckrate.service`` (tests/service/harness.Server).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from tests import external
from tests.service.harness import DEADLINE, ROOT, SPEC, parse_metrics, request_of, total, wait_until

COLLECTOR_CONFIGS = ROOT / "collector-config"
BUILD = COLLECTOR_CONFIGS / "otelcol-luckrate"
BINARY = BUILD / "otelcol-luckrate"
BASE = COLLECTOR_CONFIGS / "otelcol.yaml"
LOADBALANCING = COLLECTOR_CONFIGS / "otelcol-loadbalancing.yaml"
OVERLAYS = COLLECTOR_CONFIGS / "overlays"
GRACE = "2"
"""luckrate's --root-grace in these tests: the collector's exporters send batches on several consumers at
once, so a trace's root can arrive a moment before some of its children; 2 s keeps those children in."""


def binary() -> Path:
    """The collector binary, or a skip that says how to build it (a failure in CI, which builds it first)."""
    if not BINARY.is_file():
        external.missing(
            f"the collector binary {BINARY.relative_to(ROOT)}",
            f"{BUILD.relative_to(ROOT) / 'build.sh'} (needs Go 1.26 or later and the Go module proxy)",
        )
    return BINARY


def free_port() -> int:
    """A loopback port nothing listens on now (the collector cannot report ports it picked itself)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def validate(*configs: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``otelcol-luckrate validate`` on these config files (merged in order, as ``--config`` does); an ``env``
    value of None unsets that variable."""
    args = [str(binary()), "validate"]
    for c in configs:
        args += ["--config", str(c)]
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            k: v
            for k, v in {**os.environ, "TRACING_BACKEND_ENDPOINT": "127.0.0.1:4317", **(env or {})}.items()
            if v is not None
        },
    )


class Collector:
    """The collector on ``configs`` plus an override that moves every listener to a free loopback port and
    turns on its own telemetry (Prometheus pull) so tests can read ``otelcol_exporter_*``."""

    def __init__(self, tmp: Path, *configs: Path, override: dict | None = None, env: dict | None = None):
        self.ports = {k: free_port() for k in ("grpc", "http", "health", "telemetry", "prometheus")}
        ports = {
            "extensions": {"health_check": {"endpoint": f"127.0.0.1:{self.ports['health']}"}},
            "receivers": {
                "otlp": {
                    "protocols": {
                        "grpc": {"endpoint": f"127.0.0.1:{self.ports['grpc']}"},
                        "http": {"endpoint": f"127.0.0.1:{self.ports['http']}"},
                    }
                }
            },
            "exporters": {"prometheus": {"endpoint": f"127.0.0.1:{self.ports['prometheus']}"}},
            "service": {
                "telemetry": {
                    "metrics": {
                        "level": "detailed",
                        "readers": [
                            {
                                "pull": {
                                    "exporter": {"prometheus": {"host": "127.0.0.1", "port": self.ports["telemetry"]}}
                                }
                            }
                        ],
                    }
                }
            },
        }
        files = [*configs, _write(tmp / "ports.yaml", ports)]
        if override:
            files.append(_write(tmp / "override.yaml", override))
        args = [str(binary())]
        for f in files:
            args += ["--config", str(f)]
        self.log = tmp / "collector.log"
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "TRACING_BACKEND_ENDPOINT": "127.0.0.1:1", **(env or {})},
        )
        try:
            wait_until(self._healthy, "the collector's health_check to answer 200")
        except BaseException:
            self.stop()
            raise

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"collector exited {self.proc.returncode}:\n{self.log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['health']}/", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.ports['http']}/v1/traces"

    def telemetry(self) -> dict:
        """The collector's own metrics (otelcol_*), parsed with Prometheus' own parser."""
        url = f"http://127.0.0.1:{self.ports['telemetry']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            return parse_metrics(r.read().decode())

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> "Collector":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc, indent=1))  # JSON is YAML: the collector reads it as such
    return path


def exporter_spans(telemetry: dict, kind: str, exporter: str | None = None) -> float:
    """``otelcol_exporter_<kind>_spans`` summed (all exporters, or one), whatever suffix this release adds."""
    labels = {"exporter": exporter} if exporter else {}
    return sum(
        total(telemetry, name, **labels)
        for name in (f"otelcol_exporter_{kind}_spans", f"otelcol_exporter_{kind}_spans_total")
    )


def offline_verdicts(spans: Sequence[ReadableSpan], tmp: Path, spec: Path = SPEC) -> dict[str, dict]:
    """``luckrate grade --format otlp --json`` on the same spans written to an OTLP file: trace id → run."""
    path = tmp / "traces.otlp"
    path.write_bytes(request_of(spans).SerializeToString())
    proc = subprocess.run(
        [sys.executable, "-m", "luckrate.cli", "grade", "--spec", str(spec), "--json", "--format", "otlp", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {run["id"]: run for run in json.loads(proc.stdout)["runs"]}


def run_counts(verdicts: dict[str, dict]) -> tuple[Counter, int]:
    """(output, path) → runs, and taint findings, as luckrate_runs_total and luckrate_taint_total count them."""
    runs: Counter = Counter()
    taint = 0
    for run in verdicts.values():
        output = {True: "pass", False: "fail", None: "unknown"}[run["output_ok"]]
        runs[(output, "ok" if run["path_ok"] else "bad")] += 1
        taint += sum(v["check"] == "taint" for v in run["violations"])
    return runs, taint


def served_counts(samples: dict) -> tuple[Counter, int]:
    """The same two figures read from luckrate's /metrics."""
    runs: Counter = Counter()
    for output in ("pass", "fail", "unknown"):
        for path in ("ok", "bad"):
            n = total(samples, "luckrate_runs_total", output=output, path=path)
            if n:
                runs[(output, path)] = int(n)
    return runs, int(total(samples, "luckrate_taint_total"))


def graded(server, runs: int) -> dict:
    """Poll luckrate's /metrics until ``runs`` traces are graded and nothing is buffered."""

    def done():
        s = server.scrape()
        quiet = total(s, "luckrate_traces_active") == 0
        return s if quiet and total(s, "luckrate_runs_total") >= runs else None

    return wait_until(done, f"{runs} graded runs", timeout=120)


def sdk_exporter(collector: Collector, protocol: str):
    """The SDK's real OTLP span exporter aimed at the collector's receiver, gzip on."""
    if protocol == "grpc":
        import grpc
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=collector.grpc, insecure=True, compression=grpc.Compression.Gzip, timeout=30)
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=collector.http, compression=Compression.Gzip, timeout=30)


def send(spans: Sequence[ReadableSpan], exporter, per_request: int = 50) -> None:
    """Export spans in requests of ``per_request`` (as a BatchSpanProcessor would: traces cut anywhere)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    try:
        for i in range(0, len(spans), per_request):
            assert exporter.export(spans[i : i + per_request]) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def delivered(collector: Collector, spans: int, exporter: str) -> dict:
    """Poll the collector's telemetry until ``exporter`` has sent ``spans`` spans; returns that scrape."""

    def done():
        t = collector.telemetry()
        return t if exporter_spans(t, "sent", exporter) >= spans else None

    return wait_until(done, f"{exporter} to send {spans} spans", timeout=120)

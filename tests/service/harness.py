"""Test harness for the service: runs recorded with the real OTel SDK, the core's verdicts on them, the real
server as a subprocess on free loopback ports, and a stand-in collector for OTLP metric pushes.

The stand-in collector is a stdlib HTTP server that decodes ExportMetricsServiceRequest with
opentelemetry-proto: a real Collector binary cannot run here.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from luckrate import demo
from luckrate.adapters.otlp import OutputRule, records_from_request, trajectory_from_spans
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.builders import ROOT, SPEC

DEADLINE = 30.0
"""Seconds any wait in these tests may take before it fails (polls, never fixed sleeps)."""


def record_runs(runs: Sequence[demo.Run]) -> list[ReadableSpan]:
    """Record runs as the demo agent emits them, into memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("luckrate.tests")
    for run in runs:
        demo.emit(tracer, run)
    provider.shutdown()
    return list(memory.get_finished_spans())


def request_of(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """The OTLP request the SDK's exporters would send for these spans."""
    return encode_spans(list(spans))


def core_verdicts(spans: Sequence[ReadableSpan]) -> tuple[Counter, int]:
    """What the core says about these runs, graded in-process: ((output, path) counts, taint findings)."""
    specs = load_specs(SPEC)
    records, rejected = records_from_request(request_of(spans))
    assert not rejected
    by_trace: dict[bytes, list] = {}
    for r in records:
        by_trace.setdefault(r.trace_id, []).append(r)
    runs: Counter = Counter()
    taint = 0
    for recs in by_trace.values():
        traj = trajectory_from_spans(recs, OutputRule())
        g = grade(traj, spec_for(specs, traj.agent))
        runs[({True: "pass", False: "fail", None: "unknown"}[g.output_ok], "ok" if g.path_ok else "bad")] += 1
        taint += sum(v.check == "taint" for v in g.violations)
    return runs, taint


def wait_until(predicate: Callable[[], object], what: str, timeout: float = DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def closed_by_server(sock) -> bool:
    """True once the server has hung up on ``sock`` (EOF or reset); whatever it sent first is ignored."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def parse_metrics(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


class Server:
    """``python -m luckrate.service`` on free loopback ports (port 0, read back from its start line)."""

    def __init__(self, *flags: str, spec: Path = SPEC):
        cmd = [
            sys.executable,
            "-m",
            "luckrate.service",
            "--spec",
            str(spec),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--prometheus",
            "127.0.0.1:0",
            "--viewer",
            "127.0.0.1:0",
            *flags,
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        line = self._line("listening")
        self.start_line = line.rstrip("\n")
        """What the server printed when it started listening."""
        words = line.split()
        self.ports = {words[i]: int(words[i + 1].rsplit(":", 1)[1]) for i in range(3, len(words) - 1, 2)}

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _line(self, word: str) -> str:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                line = self._lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"server exited: {self.proc.wait()} {''.join(self.stderr)[-3000:]}")
            if word in line:
                return line
        raise AssertionError(f"server printed no {word!r} line in {DEADLINE} s")

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.ports['http']}"

    def scrape(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['prometheus']}/metrics", timeout=10) as r:
            return parse_metrics(r.read().decode())

    def wait_metric(self, name: str, value: float, **labels: str) -> dict:
        """Poll /metrics until ``total(name, labels) == value``; returns that scrape."""

        def reached():
            s = self.scrape()
            return s if total(s, name, **labels) == value else None

        return wait_until(reached, f"{name}{labels} == {value}")

    def wait_metric_at_least(self, name: str, value: float, **labels: str) -> dict:
        """Poll /metrics until ``total(name, labels) >= value``; returns that scrape."""

        def reached():
            s = self.scrape()
            return s if total(s, name, **labels) >= value else None

        return wait_until(reached, f"{name}{labels} >= {value}")

    def terminate(self, timeout: float = DEADLINE) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class MetricsSink:
    """Stand-in collector: accepts OTLP/HTTP metric pushes and keeps the decoded requests."""

    def __init__(self):
        self.requests: list[ExportMetricsServiceRequest] = []
        self.paths: list[str] = []
        """The path of each push, in order."""
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                sink.paths.append(self.path)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                sink.requests.append(ExportMetricsServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1/metrics"

    def last(self) -> dict[tuple[str, tuple], float]:
        """The latest value of every counter/gauge point in the last push (cumulative)."""
        out: dict = {}
        for req in self.requests[-1:]:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        points = m.sum.data_points if m.HasField("sum") else ()
                        for p in points:
                            labels = tuple(sorted((a.key, a.value.string_value) for a in p.attributes))
                            out[(m.name, labels)] = p.as_int if p.HasField("as_int") else p.as_double
        return out

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def post(url: str, body: bytes, content_type: str, headers: dict | None = None):
    """POST and return (status, headers, body) without raising on HTTP errors."""
    import urllib.error

    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# ---- the demo's runs, and what every served run must add up to -----------------------------------------

KINDS = [
    "tainted",
    "clean",
    "tainted",
    "forbidden",
    "ungrounded",
    "tainted",
    "user_supplied",
    "failing",
    "unjudged",
    "clean",
]
"""Ten demo runs of every kind: three tainted."""


def runs(kinds, agent="support-agent", offset=0):
    return [demo.make_run(k, offset + i, agent) for i, k in enumerate(kinds)]


def by_trace(spans):
    out: dict = {}
    for s in spans:
        out.setdefault(s.context.trace_id, []).append(s)
    return list(out.values())


def identity(s: dict) -> None:
    """Every received span is accepted or rejected; every accepted one ends in a completed trace or a
    counted drop; every completed trace joined a run across traces (``--runs-by links``), or its run was
    graded, ungraded or a grade error."""
    received = total(s, "luckrate_spans_received_total")
    accepted = total(s, "luckrate_spans_accepted_total")
    assert received == accepted + total(s, "luckrate_spans_rejected_total")
    assert accepted == (
        total(s, "luckrate_spans_assembled_total")
        + total(s, "luckrate_spans_duplicate_total")
        + total(s, "luckrate_spans_late_total")
        + total(s, "luckrate_spans_lost_total")
    )
    assert total(s, "luckrate_traces_completed_total") == (
        total(s, "luckrate_runs_assembly_total", outcome="traces_joined")
        + total(s, "luckrate_runs_total")
        + total(s, "luckrate_traces_ungraded_total")
        + total(s, "luckrate_grade_errors_total")
    )


SPECS = load_specs(SPEC)
"""The example specs, loaded once."""


# ---- the in-process service (app.build on port 0) ----------------------------------------------------------

PROTO = "application/x-protobuf"
TOKEN = "t0ken"
"""The bearer token tests give the service."""


def urls(svc):
    """The in-process service's gRPC target and HTTP base URL."""
    grpc_r, http_r = svc.receivers
    return f"127.0.0.1:{grpc_r.port}", f"http://127.0.0.1:{http_r.port}"


def metrics(svc) -> dict:
    return parse_metrics(svc.metrics.reader.render())


def refused(svc, transport, reason) -> float:
    return total(metrics(svc), "luckrate_requests_refused_total", transport=transport, reason=reason)


class Clock:
    """A fake clock the assemblers read; tests advance it, never sleep."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


# ---- grading processes, and the SDK pointed at a server ---------------------------------------------------


def worker_pids(server: Server) -> set[int]:
    """The server's grading processes: its children started by multiprocessing's spawn."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == server.proc.pid and b"spawn_main" in cmdline:
            pids.add(int(entry.name))
    return pids


def two_workers(server: Server, without: int = 0) -> set[int] | None:
    pids = worker_pids(server)
    return pids if len(pids) == 2 and without not in pids else None


def sdk_env(endpoint: str) -> dict[str, str]:
    """The environment with the OTLP exporter pointed at ``endpoint`` by the standard variable alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}


def snippet(page: str) -> str:
    """The ```python block under "Instrument your agent" (README) or "Send a trace" (quick start)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "OTLPSpanExporter" in b]
    assert len(blocks) == 1, f"{page}: expected one instrumentation snippet, found {len(blocks)}"
    return blocks[0]

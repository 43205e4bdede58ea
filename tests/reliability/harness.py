"""Shared pieces of the reliability tests: the real server (tests/service/harness.Server) plus what these
tests measure on it — resident memory from /proc, health probes after each batch, the accounting
identities read from /metrics — and fast builders of OTLP requests with arbitrary ids.

Nothing here is a stand-in: requests go over real sockets to the real server subprocess.
"""

from __future__ import annotations

import os
import random
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from luckrate import demo
from tests.service.harness import Server, record_runs, request_of, total, wait_until

COUNTS = (
    Path(os.environ.get("LUCKRATE_RELIABILITY_COUNTS", "")) if os.environ.get("LUCKRATE_RELIABILITY_COUNTS") else None
)
"""When set, tests append ``name count`` lines here: the numbers docs/reliability.md reports."""


def report(name: str, count: int | float) -> None:
    if COUNTS is not None:
        with COUNTS.open("a") as f:
            f.write(f"{name} {count}\n")


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def healthy(server: Server) -> None:
    """The server answers on every listener: HTTP /healthz, gRPC health, Prometheus /metrics."""
    assert server.proc.poll() is None, f"server died: {''.join(server.stderr)[-2000:]}"
    with urllib.request.urlopen(server.http + "/healthz", timeout=10) as r:
        assert r.status == 200
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(server.grpc) as ch:
        resp = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING
    server.scrape()


def settled(server: Server) -> dict:
    """Poll /metrics until nothing is buffered and every accepted span is assembled or dropped (counted)."""

    def done():
        s = server.scrape()
        accepted = total(s, "luckrate_spans_accepted_total") + total(s, "luckrate_spans_replayed_total")
        handled = sum(total(s, f"luckrate_spans_{k}_total") for k in ("assembled", "duplicate", "late", "lost"))
        traces = total(s, "luckrate_traces_completed_total")
        outcomes = sum(
            total(s, n)
            for n in ("luckrate_runs_total", "luckrate_traces_ungraded_total", "luckrate_grade_errors_total")
        )
        quiet = total(s, "luckrate_traces_active") == 0 and accepted == handled and traces == outcomes
        return s if quiet else None

    return wait_until(done, "every accepted span to be graded or dropped", timeout=120)


def identity(s: dict) -> dict[str, float]:
    """Assert the accounting identities exactly; return the terms (for the report)."""
    terms = {
        k: total(s, f"luckrate_{k}_total")
        for k in (
            "spans_received",
            "spans_accepted",
            "spans_rejected",
            "spans_assembled",
            "spans_duplicate",
            "spans_late",
            "spans_lost",
            "spans_replayed",
            "traces_completed",
            "runs",
            "traces_ungraded",
            "grade_errors",
        )
    }
    assert terms["spans_received"] == terms["spans_accepted"] + terms["spans_rejected"], terms
    # spans_replayed: accepted before a restart, read back from the write-ahead log (0 without --wal).
    assert terms["spans_accepted"] + terms["spans_replayed"] == (
        terms["spans_assembled"] + terms["spans_duplicate"] + terms["spans_late"] + terms["spans_lost"]
    ), terms
    assert terms["traces_completed"] == terms["runs"] + terms["traces_ungraded"] + terms["grade_errors"], terms
    return terms


_TEMPLATE: list = []


def template_spans() -> list:
    """One pass of the demo mix, recorded once with the real SDK (10 traces)."""
    if not _TEMPLATE:
        _TEMPLATE.extend(record_runs([demo.nth_run(i) for i in range(len(demo.CYCLE))]))
    return _TEMPLATE


def fresh_request(rng: random.Random, traces: int = 1) -> ExportTraceServiceRequest:
    """``traces`` demo traces under new random trace ids (so they are new traces to the server)."""
    spans = template_spans()
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    groups = list(by_trace.values())
    req = ExportTraceServiceRequest()
    for _ in range(traces):
        one = request_of(rng.choice(groups))
        tid = rng.randbytes(16)
        for rs in one.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = tid
        req.resource_spans.extend(one.resource_spans)
    return req


def span_count(req: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)


def raw_span(
    trace_id: bytes,
    span_id: bytes,
    parent: bytes = b"",
    name: str = "execute_tool t",
    attrs: Sequence[tuple[str, str]] = (
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "lookup_order"),
    ),
    start: int = 1_000_000_000,
    end: int = 2_000_000_000,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs],
    )


def request_with(spans: Sequence[Span]) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])])


def status_counts(codes: Sequence[object]) -> Counter:
    return Counter(str(c) for c in codes)


def http_get(url: str, timeout: float = 10) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code

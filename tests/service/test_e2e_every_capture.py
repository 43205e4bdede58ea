"""End to end: every committed capture of every instrumentation (tests/testdata/*/), sent to one `luckrate
serve --runs-by links` as a Collector forwards it, gets the verdicts `luckrate grade` gives the same file.

Each trace is cut in two and the halves sent on different connections (gRPC and HTTP), the second half
first; a file's traces go out last trace first, its log records (the OpenAI and Anthropic instrumentations'
messages) before its spans. The server's verdict log (``--verdict-log-all``: a line per graded run) is
compared run by run with the file reader's grades under the same spec: the same runs, output verdicts and
(check, tool) pairs. A source read right from files but not through the service, or the reverse, fails here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import read_otlp_files
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.service.harness import SPEC, Server, post, total, wait_until

TESTDATA = Path(__file__).resolve().parents[1] / "testdata"


def captures() -> list[tuple[Path, Path | None]]:
    """Every binary OTLP trace capture, with its logs capture when it has one."""
    out = []
    for path in sorted(TESTDATA.rglob("*.otlp")):
        if "node_modules" in path.parts or ".logs." in path.name:
            continue
        logs = path.with_name(path.name.replace(".traces.otlp", ".logs.otlp"))
        out.append((path, logs if logs != path and logs.exists() else None))
    return out


def pieces(req: ExportTraceServiceRequest) -> Iterator[ExportTraceServiceRequest]:
    """The request's traces, last first, each as two requests (second half of its spans first), keeping
    each span's resource and scope."""
    by_trace: dict[bytes, list[tuple[int, int, object]]] = {}
    for r, rs in enumerate(req.resource_spans):
        for s, ss in enumerate(rs.scope_spans):
            for span in ss.spans:
                by_trace.setdefault(span.trace_id, []).append((r, s, span))
    for spans in list(by_trace.values())[::-1]:
        half = (len(spans) + 1) // 2
        for part in (spans[half:], spans[:half]):
            if part:
                yield _request(req, part)


def _request(req: ExportTraceServiceRequest, part: list) -> ExportTraceServiceRequest:
    out = ExportTraceServiceRequest()
    slots: dict[tuple[int, int], object] = {}
    for r, s, span in part:
        if (r, s) not in slots:
            rs = out.resource_spans.add()
            rs.resource.CopyFrom(req.resource_spans[r].resource)
            ss = rs.scope_spans.add()
            ss.scope.CopyFrom(req.resource_spans[r].scope_spans[s].scope)
            slots[(r, s)] = ss
        slots[(r, s)].spans.add().CopyFrom(span)
    return out


def expected(specs, path: Path, logs: Path | None) -> dict[str, tuple]:
    """The file reader's verdicts: run id -> (output, sorted (check, tool) pairs)."""
    try:
        runs = read_otlp_files([(path.read_bytes(), str(path))], [(logs.read_bytes(), str(logs))] if logs else ())
    except InvalidInput:  # no agent trace at all: the service counts it ungraded
        return {}
    out = {}
    for traj in runs:
        spec = spec_for(specs, traj.agent)
        if spec is not None:
            g = grade(traj, spec)
            out[g.id] = (g.output, sorted((v.check, v.tool or "") for v in g.violations))
    return out


def graded(verdicts: Path) -> int:
    """Lines the verdict log holds so far."""
    if not verdicts.exists():
        return 0
    with verdicts.open() as f:
        return sum(1 for _ in f)


def test_every_capture_gets_the_same_verdicts_through_serve_as_from_its_file(tmp_path):
    specs = load_specs(SPEC)
    want: dict[str, tuple] = {}
    files = captures()
    assert len(files) > 300
    for path, logs in files:
        found = expected(specs, path, logs)
        assert not found.keys() & want.keys(), f"{path}: a run id seen in another capture"
        want.update(found)
    verdicts = tmp_path / "verdicts.jsonl"
    flags = ("--runs-by", "links", "--run-wait", "0.5", "--root-grace", "0.2", "--workers", "1")
    with Server(*flags, "--verdict-log", str(verdicts), "--verdict-log-all") as server:
        with grpc.insecure_channel(server.grpc) as channel:
            stub = TraceServiceStub(channel)
            for path, logs in files:
                if logs is not None:
                    status = post(server.http + "/v1/logs", logs.read_bytes(), "application/x-protobuf")[0]
                    assert status == 200, path
                for i, piece in enumerate(pieces(ExportTraceServiceRequest.FromString(path.read_bytes()))):
                    if i % 2:
                        stub.Export(piece, timeout=10)
                    else:
                        assert (
                            post(server.http + "/v1/traces", piece.SerializeToString(), "application/x-protobuf")[0]
                            == 200
                        )
        wait_until(lambda: graded(verdicts) >= len(want), f"{len(want)} verdict lines")
        s = server.scrape()
        assert server.terminate() == 0
    got = {}
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        got[v["trace_id"]] = (v["output"], sorted((x["check"], x["tool"] or "") for x in v["violations"]))
    assert len(got) == len(want)
    differ = {k: (want.get(k), got.get(k)) for k in want.keys() | got.keys() if want.get(k) != got.get(k)}
    assert not differ, f"{len(differ)} runs differ (file, serve): {dict(list(differ.items())[:5])}"
    assert total(s, "luckrate_spans_late_total") == 0
    assert total(s, "luckrate_log_records_dropped_total") == 0
    assert total(s, "luckrate_runs_assembly_total", outcome="late_traces") == 0

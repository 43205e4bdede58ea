"""End to end: `luckrate serve --otlp-logs` sends one `gen_ai.evaluation.result` log record per graded trace
with violations through the SDK's real OTLP/HTTP log exporter, on the graded trace's root span; with the
logs endpoint down, every verdict and metric is still there and the lost records are counted.

The logs endpoint is a small OTLP/HTTP receiver on loopback that decodes ExportLogsServiceRequest with
opentelemetry-proto: a real Collector binary cannot run here. Traces go in through the SDK's real
OTLP/gRPC span exporter; what to expect is computed from the recorded spans with the core's grader."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from luckrate.adapters.otlp import OutputRule, records_from_request, trajectory_from_spans
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.service.harness import (
    SPEC,
    Server,
    by_trace,
    core_verdicts,
    identity,
    record_runs,
    request_of,
    runs,
    total,
    wait_until,
)

KINDS = ["clean", "tainted", "forbidden", "user_supplied", "ungrounded", "failing", "unjudged", "tainted"]


class LogsSink:
    """OTLP/HTTP logs receiver on loopback: keeps every decoded log record with its scope's resource."""

    def __init__(self):
        self.records: list = []
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                ok = self.path == "/v1/logs" and self.headers["Content-Type"] == "application/x-protobuf"
                if ok:
                    request = ExportLogsServiceRequest.FromString(body)
                    with sink._lock:
                        sink.records += [
                            r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records
                        ]
                reply = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1/logs"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def expected_records(spans) -> dict[str, dict]:
    """trace id -> what its record must say, for every trace the core grades with violations."""
    specs = load_specs(SPEC)
    out = {}
    for trace in by_trace(spans):
        root = next(s for s in trace if s.parent is None)
        records, _ = records_from_request(request_of(trace))
        traj = trajectory_from_spans(records, OutputRule())
        g = grade(traj, spec_for(specs, traj.agent))
        if g.violations:
            out[f"{root.context.trace_id:032x}"] = {
                "span_id": f"{root.context.span_id:016x}",
                "luckrate.agent": traj.agent,
                "luckrate.lucky": g.lucky,
                "luckrate.output": g.output,
                "luckrate.checks": sorted({v.check for v in g.violations}),
                "lines": len(g.violations),
            }
    return out


def attributes(record) -> dict:
    out = {}
    for kv in record.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        out[kv.key] = [x.string_value for x in v.array_value.values] if kind == "array_value" else getattr(v, kind)
    return out


def send(server: Server, spans) -> None:
    exporter = OTLPSpanExporter(endpoint=server.grpc, insecure=True)
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()


def test_one_record_per_trace_with_violations_on_its_root_span(tmp_path):
    spans = record_runs(runs(KINDS))
    expected = expected_records(spans)
    assert len(expected) >= 3  # the mix has runs with violations (tainted twice, forbidden, ungrounded)
    sink = LogsSink()
    try:
        with Server("--otlp-logs", sink.url, "--root-grace", "0.5") as server:
            send(server, spans)
            server.wait_metric("luckrate_runs_total", len(KINDS))
            assert server.terminate() == 0  # a clean shutdown flushes the queued records
        got = {r.trace_id.hex(): r for r in sink.records}
        assert len(sink.records) == len(got) == len(expected)
        for tid, want in expected.items():
            rec = got[tid]
            attrs = attributes(rec)
            assert rec.event_name == "gen_ai.evaluation.result"
            assert rec.span_id.hex() == want["span_id"]
            assert (attrs["gen_ai.evaluation.name"], attrs["gen_ai.evaluation.score.label"]) == ("luckrate.path", "bad")
            assert {k: attrs[k] for k in ("luckrate.agent", "luckrate.lucky", "luckrate.output", "luckrate.spec")} == {
                "luckrate.agent": want["luckrate.agent"],
                "luckrate.lucky": want["luckrate.lucky"],
                "luckrate.output": want["luckrate.output"],
                "luckrate.spec": "spec",
            }
            assert sorted(attrs["luckrate.checks"]) == want["luckrate.checks"]
            assert len(attrs["gen_ai.evaluation.explanation"].splitlines()) == want["lines"]
    finally:
        sink.close()


def test_logs_endpoint_down_costs_no_verdict_and_no_metric(tmp_path):
    spans = record_runs(runs(KINDS))
    expected = expected_records(spans)
    expected_runs, expected_taint = core_verdicts(spans)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/v1/logs"
    log = tmp_path / "verdicts.jsonl"
    with Server("--otlp-logs", down, "--root-grace", "0.5", "--verdict-log", str(log)) as server:
        send(server, spans)
        s = server.wait_metric("luckrate_runs_total", len(KINDS))
        for (output, path), n in expected_runs.items():
            assert total(s, "luckrate_runs_total", output=output, path=path) == n
        assert total(s, "luckrate_taint_total") == expected_taint
        identity(s)
        assert len(log.read_text().splitlines()) == len(expected)  # every verdict with violations is logged

        # The SDK exporter retries a refused connection with backoff for up to its 10 s timeout, then gives
        # up on the batch: every record is counted as dropped, none silently lost.
        def all_counted():
            s = server.scrape()
            return s if total(s, "luckrate_verdict_events_dropped_total") == len(expected) else None

        s = wait_until(all_counted, "every verdict event counted as dropped", timeout=60)
        assert total(s, "luckrate_verdict_events_dropped_total", reason="export_failed") == len(expected)
        assert server.terminate() == 0

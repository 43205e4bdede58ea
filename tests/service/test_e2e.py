"""End to end: the real server as a subprocess, traces sent by the OTel SDK's real OTLP exporters (gRPC and
HTTP/protobuf) and as raw OTLP/JSON, verdicts read back from /metrics and compared with the core's."""

from __future__ import annotations

import json
import signal

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.builders import otlp_json
from tests.service.harness import (
    KINDS,
    MetricsSink,
    Server,
    by_trace,
    core_verdicts,
    identity,
    post,
    record_runs,
    request_of,
    runs,
    total,
    wait_until,
)


def test_verdicts_over_grpc_http_and_json_match_the_core(tmp_path):
    spans = record_runs(runs(KINDS))
    expected_runs, expected_taint = core_verdicts(spans)
    assert expected_taint == 3
    traces = by_trace(spans)
    log = tmp_path / "verdicts.jsonl"
    # The JSON traces arrive root first, one span per request: a grace shorter than a stall of a loaded
    # CI machine between two requests grades them early (seen flaking at 1 s with load average 4 on 2 cores).
    with Server("--root-grace", "4", "--verdict-log", str(log)) as server:
        grpc_exporter = GrpcSpanExporter(endpoint=server.grpc, insecure=True)
        for trace in traces[:4]:  # one span per request, children first: a trace split over many requests
            for span in trace:
                assert grpc_exporter.export([span]) is SpanExportResult.SUCCESS
        http_exporter = HttpSpanExporter(endpoint=server.http + "/v1/traces")
        assert http_exporter.export([s for t in traces[4:7] for s in t]) is SpanExportResult.SUCCESS
        for trace in traces[7:]:  # raw OTLP/JSON, spans in reverse order, one request each
            for span in reversed(trace):
                status, _, body = post(server.http + "/v1/traces", otlp_json(request_of([span])), "application/json")
                assert (status, json.loads(body)) == (200, {})
        s = server.wait_metric("luckrate_traces_completed_total", 10)
        assert total(s, "luckrate_traces_completed_total", reason="root_ended") == 10
        assert total(s, "luckrate_taint_total") == 3
        assert total(s, "luckrate_taint_total", privileged_tool="send_email", source_tool="fetch_webpage") == 3
        for (output, path), n in expected_runs.items():
            assert total(s, "luckrate_runs_total", output=output, path=path, spec="spec", agent="support-agent") == n, (
                output,
                path,
            )
        assert total(s, "luckrate_runs_total") == 10
        assert total(s, "luckrate_spans_received_total") == len(spans)
        assert total(s, "luckrate_spans_assembled_total") == len(spans)  # nothing late, nothing duplicated
        assert total(s, "luckrate_verdict_delay_seconds_count") == 10
        identity(s)
        assert server.terminate() == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    bad = sum(n for (output, path), n in expected_runs.items() if path == "bad")
    assert len(lines) == bad
    assert sum(1 for line in lines for v in line["violations"] if v["check"] == "taint") == 3
    assert {line["trace_id"] for line in lines} <= {f"{t[0].context.trace_id:032x}" for t in traces}


def test_full_buffer_pushes_back_and_every_span_is_accounted_for():
    """Fill the span buffer exactly, then check the accounting identity on the final OTLP push."""
    spans = record_runs(runs(["clean", "clean", "clean", "clean"]))
    a, b, c, d = by_trace(spans)
    n = len(a)
    sink = MetricsSink()
    try:
        with Server(
            "--root-grace",
            "300",
            "--idle-timeout",
            "300",
            "--max-buffered-spans",
            str(2 * n + 1),
            "--otlp-metrics",
            sink.url,
            "--otlp-metrics-interval",
            "3600",
        ) as server:
            url = server.http + "/v1/traces"
            proto = "application/x-protobuf"
            assert post(url, request_of(a).SerializeToString(), proto)[0] == 200
            assert post(url, request_of(a).SerializeToString(), proto)[0] == 200  # a retry: duplicates
            server.wait_metric("luckrate_spans_duplicate_total", n)
            assert post(url, request_of(b).SerializeToString(), proto)[0] == 200
            status, headers, _ = post(url, request_of(c).SerializeToString(), proto)
            assert (status, headers["Retry-After"]) == (429, "5")
            with grpc.insecure_channel(server.grpc) as channel:
                with pytest.raises(grpc.RpcError) as e:
                    TraceServiceStub(channel).Export(request_of(c), timeout=10)
            assert e.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            details = dict(e.value.trailing_metadata())["grpc-status-details-bin"]
            retry = error_details_pb2.RetryInfo()
            assert status_pb2.Status.FromString(details).details[0].Unpack(retry)
            assert retry.retry_delay.seconds == 5
            trailers = dict(e.value.trailing_metadata())
            assert error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]) == retry
            # One usable span and one with an all-zero trace id: partial success, 1 rejected.
            mixed = request_of(d[:1])
            bad = mixed.resource_spans[0].scope_spans[0].spans.add()
            bad.CopyFrom(mixed.resource_spans[0].scope_spans[0].spans[0])
            bad.trace_id = bytes(16)
            status, _, body = post(url, mixed.SerializeToString(), proto)
            assert status == 200
            assert ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans == 1
            s = server.scrape()
            assert total(s, "luckrate_spans_received_total") == 5 * n + 2
            assert total(s, "luckrate_spans_accepted_total") == 3 * n + 1
            assert total(s, "luckrate_spans_rejected_total", reason="buffer_full") == 2 * n
            assert total(s, "luckrate_spans_rejected_total", reason="bad_trace_id") == 1
            # The gauge comes from the grading processes, a report (≤ 50 ms) after the spans reached them.
            server.wait_metric("luckrate_traces_active", 3)
            assert server.terminate() == 0
        final = sink.last()
        assert final[("luckrate.traces.completed", (("reason", "shutdown"),))] == 3
        assert final[("luckrate.spans.assembled", ())] == 2 * n + 1
        assert final[("luckrate.spans.duplicate", ())] == n
        assert sum(v for (name, _), v in final.items() if name == "luckrate.runs") == 3
    finally:
        sink.close()


def test_sigterm_grades_every_buffered_trace_and_exports_before_exit(tmp_path):
    spans = record_runs(runs(["tainted", "clean", "forbidden", "tainted", "clean"]))
    sink = MetricsSink()
    log = tmp_path / "v.jsonl"
    try:
        with Server(
            "--root-grace",
            "300",
            "--idle-timeout",
            "300",
            "--otlp-metrics",
            sink.url,
            "--otlp-metrics-interval",
            "3600",
            "--verdict-log",
            str(log),
        ) as server:
            exporter = GrpcSpanExporter(endpoint=server.grpc, insecure=True)
            assert exporter.export(spans) is SpanExportResult.SUCCESS
            server.wait_metric("luckrate_spans_accepted_total", len(spans))
            assert total(server.scrape(), "luckrate_runs_total") == 0
            server.proc.send_signal(signal.SIGTERM)
            assert server.terminate() == 0
        final = sink.last()
        assert final[("luckrate.traces.completed", (("reason", "shutdown"),))] == 5
        assert sum(v for (name, _), v in final.items() if name == "luckrate.runs") == 5
        assert sum(v for (name, _), v in final.items() if name == "luckrate.taint") == 2
        assert len(log.read_text().splitlines()) == 3
    finally:
        sink.close()


def test_bad_config_fails_at_start_naming_each_key(tmp_path):
    import subprocess
    import sys

    from tests.service.harness import ROOT, SPEC

    conf = tmp_path / "luckrate.toml"
    conf.write_text('root_grase = 1\nhttp = "nowhere"\n')
    done = subprocess.run(
        [sys.executable, "-m", "luckrate.service", "--spec", str(SPEC), "--config", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-3:] == [
        f"luckrate serve: 2 problems in config {conf}",
        "  root_grase: unknown key (did you mean 'root_grace'?)",
        "  http: 'nowhere' is not HOST:PORT",
    ]


def test_real_grpc_exporter_retries_after_back_pressure(tmp_path):
    """The SDK's OTLP/gRPC exporter meets a full buffer, waits the RetryInfo delay, and gets through once
    the first trace is graded and its spans released."""
    first, second = by_trace(record_runs(runs(["clean", "tainted"])))
    conf = tmp_path / "luckrate.toml"
    conf.write_text("retry_after = 1\n")
    with Server("--config", str(conf), "--root-grace", "1.5", "--max-buffered-spans", str(len(first))) as server:
        exporter = GrpcSpanExporter(endpoint=server.grpc, insecure=True, timeout=20)
        assert exporter.export(first) is SpanExportResult.SUCCESS
        assert exporter.export(second) is SpanExportResult.SUCCESS
        s = server.wait_metric("luckrate_runs_total", 2)
        assert total(s, "luckrate_spans_rejected_total", reason="buffer_full") >= len(second)
        assert total(s, "luckrate_taint_total") == 1
        identity(s)
        assert server.terminate() == 0


def test_otlp_metrics_given_a_base_url_pushes_to_v1_metrics():
    """Regression: `--otlp-metrics http://127.0.0.1:14318`, a collector's base URL as the single-host
    config advised, pushed to '/' (a collector answers 404 there). The SDK's exporter now gets the base
    URL with /v1/metrics appended, as OTEL_EXPORTER_OTLP_ENDPOINT is read."""
    sink = MetricsSink()
    base = sink.url.removesuffix("/v1/metrics")
    try:
        with Server("--otlp-metrics", base, "--otlp-metrics-interval", "0.2"):
            wait_until(lambda: len(sink.paths) >= 2, "two OTLP metric pushes")
        assert set(sink.paths) == {"/v1/metrics"}
    finally:
        sink.close()

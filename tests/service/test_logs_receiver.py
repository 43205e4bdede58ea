"""The OTLP logs receiver: gRPC LogsService/Export and HTTP /v1/logs beside the traces ones, with the same
answers, limits, auth and back-pressure, their own counters, and log records joined to their traces.

Records come from the real contrib OpenAI instrumentation's captures (tests/testdata/openai-v2); the
clients are the SDK's real OTLPLogExporter and OTLPSpanExporter, sending on two pipelines as an
application (or a Collector) does.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from luckrate.service.config import Endpoint
from tests.builders import LIMIT, config, otlp_json
from tests.scenarios import BY_NAME
from tests.service.harness import PROTO, SPEC, TOKEN, metrics, post, total, urls, wait_until

DATA = Path(__file__).resolve().parents[1] / "testdata" / "openai-v2"


def capture(name: str, mode: str) -> tuple[ExportTraceServiceRequest, ExportLogsServiceRequest]:
    stem = DATA / f"{name}.{mode}.openai-v2"
    return (
        ExportTraceServiceRequest.FromString(Path(f"{stem}.traces.otlp").read_bytes()),
        ExportLogsServiceRequest.FromString(Path(f"{stem}.logs.otlp").read_bytes()),
    )


def n_records(req: ExportLogsServiceRequest) -> int:
    return sum(len(sl.log_records) for rl in req.resource_logs for sl in rl.scope_logs)


@pytest.fixture
def service(request):
    svc = build(config(**getattr(request, "param", {})), load_specs(SPEC))
    svc.start()
    yield svc
    assert svc.stop(10)


def graded(svc, runs: int = 1) -> dict:
    """Poll until ``runs`` runs are graded; that scrape."""

    def reached():
        m = metrics(svc)
        return m if total(m, "luckrate_runs_total") == runs else None

    return wait_until(reached, f"{runs} graded run(s)")


def log_refused(svc, transport, reason) -> float:
    return total(metrics(svc), "luckrate_log_requests_refused_total", transport=transport, reason=reason)


HTTP_REFUSALS = [
    # (case, body, content type, extra headers, status, refusal reason)
    ("text/plain", b"x", "text/plain", {}, 415, "unsupported_media_type"),
    ("garbage protobuf", b"\xff\xff\xff", PROTO, {}, 400, "undecodable"),
    ("garbage json", b"{not json", "application/json", {}, 400, "undecodable"),
    ("json of the wrong shape", b'{"resourceLogs": {"x": 1}}', "application/json", {}, 400, "undecodable"),
    ("over the limit", b"\0" * (LIMIT + 1), PROTO, {}, 413, "too_large"),
    ("gzip bomb", gzip.compress(b"\0" * (LIMIT * 4)), PROTO, {"Content-Encoding": "gzip"}, 413, "too_large"),
    ("bad gzip", b"not gzip", PROTO, {"Content-Encoding": "gzip"}, 400, "undecodable"),
    ("brotli", b"x", PROTO, {"Content-Encoding": "br"}, 415, "unsupported_media_type"),
]


@pytest.mark.parametrize("case, body, ctype, headers, code, reason", HTTP_REFUSALS, ids=[c[0] for c in HTTP_REFUSALS])
def test_http_logs_refusals_are_answered_and_counted_as_logs(service, case, body, ctype, headers, code, reason):
    _, http = urls(service)
    status, _, resp = post(http + "/v1/logs", body, ctype, headers)
    assert status == code
    if ctype == PROTO:
        assert status_pb2.Status.FromString(resp).message
    else:
        assert json.loads(resp)["message"]
    assert log_refused(service, "http", reason) == 1
    assert total(metrics(service), "luckrate_requests_refused_total") == 0  # the traces counter is untouched


def test_grpc_logs_refusals_and_gzip(service):
    target, _ = urls(service)
    _, logs = capture("clean", "legacy")
    with grpc.insecure_channel(target, compression=grpc.Compression.Gzip) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
        with pytest.raises(grpc.RpcError) as e:
            export(b"\xff\xff\xff", timeout=5)
        assert e.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as e:
            export(b"\x0a" + b"\x80\x80\x08" + b"\0" * (LIMIT + 10), timeout=5)
        assert e.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert LogsServiceStub(channel).Export(logs, timeout=5) == ExportLogsServiceResponse()
    s = metrics(service)
    assert log_refused(service, "grpc", "undecodable") == 1
    assert total(s, "luckrate_log_records_accepted_total") == n_records(logs)


def _unusable() -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    records = req.resource_logs.add().scope_logs.add().log_records
    records.append(LogRecord(event_name="gen_ai.choice"))  # no trace id
    records.append(LogRecord(trace_id=bytes(range(1, 17)), event_name="app.started"))  # not an event luckrate reads
    return req


def test_unusable_records_get_a_partial_success_and_are_counted_by_reason(service):
    target, http = urls(service)
    req = _unusable()
    with grpc.insecure_channel(target) as channel:
        reply = LogsServiceStub(channel).Export(req, timeout=5)
    assert reply.partial_success.rejected_log_records == 2
    status, _, resp = post(http + "/v1/logs", req.SerializeToString(), PROTO)
    assert status == 200
    reply = ExportLogsServiceResponse.FromString(resp)
    assert reply.partial_success.rejected_log_records == 2
    assert reply.partial_success.error_message == (
        "1 log record(s) rejected: no_trace_id; 1 log record(s) rejected: not_read"
    )
    s = metrics(service)
    assert total(s, "luckrate_log_records_received_total") == 4
    assert total(s, "luckrate_log_records_rejected_total", reason="no_trace_id") == 2
    assert total(s, "luckrate_log_records_rejected_total", reason="not_read") == 2
    assert total(s, "luckrate_log_records_accepted_total") == 0


@pytest.mark.parametrize("service", [{"bearer_token": TOKEN}], indirect=True)
def test_logs_need_the_bearer_token_too(service):
    target, http = urls(service)
    _, logs = capture("clean", "legacy")
    body = logs.SerializeToString()
    assert post(http + "/v1/logs", body, PROTO)[0] == 401
    assert post(http + "/v1/logs", body, PROTO, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    with grpc.insecure_channel(target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            LogsServiceStub(channel).Export(logs, timeout=5)
        assert e.value.code() is grpc.StatusCode.UNAUTHENTICATED
    s = metrics(service)
    assert total(s, "luckrate_log_requests_refused_total", reason="unauthenticated") == 2
    assert total(s, "luckrate_log_records_received_total") == n_records(logs)


@pytest.mark.parametrize("service", [{"max_buffered_spans": 5}], indirect=True)
def test_a_full_buffer_throttles_logs_as_it_does_spans(service):
    target, http = urls(service)
    _, logs = capture("clean", "legacy")  # 21 records, over the 5 the buffer holds
    assert n_records(logs) > 5
    status, headers, _ = post(http + "/v1/logs", logs.SerializeToString(), PROTO)
    assert status == 429 and headers["Retry-After"]
    with grpc.insecure_channel(target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            LogsServiceStub(channel).Export(logs, timeout=5)
        assert e.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    s = metrics(service)
    assert total(s, "luckrate_log_records_rejected_total", reason="buffer_full") == 2 * n_records(logs)
    assert total(s, "luckrate_log_requests_refused_total", reason="buffer_full") == 2


@pytest.mark.parametrize("transport", ["grpc", "http-protobuf", "http-json-gzip"])
@pytest.mark.parametrize("name", ["forbidden", "injected"])
def test_records_sent_before_their_spans_are_graded_with_them(service, transport, name):
    """What a Collector with two pipelines does: the logs pipeline's export first, the traces' after. The
    run's steps come only from the records (the legacy spans carry no messages)."""
    target, http = urls(service)
    traces, logs = capture(name, "legacy")
    if transport == "grpc":
        with grpc.insecure_channel(target) as channel:
            LogsServiceStub(channel).Export(logs, timeout=5)
            TraceServiceStub(channel).Export(traces, timeout=5)
    elif transport == "http-protobuf":
        assert post(http + "/v1/logs", logs.SerializeToString(), PROTO)[0] == 200
        assert post(http + "/v1/traces", traces.SerializeToString(), PROTO)[0] == 200
    else:
        assert (
            post(http + "/v1/logs", gzip.compress(otlp_json(logs)), "application/json", {"Content-Encoding": "gzip"})[0]
            == 200
        )
        assert post(http + "/v1/traces", traces.SerializeToString(), PROTO)[0] == 200
    s = graded(service)
    assert total(s, "luckrate_log_records_assembled_total") == n_records(logs)
    ((check, tool),) = BY_NAME[name].expected
    assert total(s, "luckrate_violations_total", check=check, tool=tool) == 1
    assert total(s, "luckrate_runs_total", path="bad") == 1


def test_records_for_a_trace_already_graded_are_counted_late(service):
    target, _ = urls(service)
    traces, logs = capture("clean", "legacy")
    with grpc.insecure_channel(target) as channel:
        TraceServiceStub(channel).Export(traces, timeout=5)
        # Without its log records the trace holds chat spans only, no tool call and no content: a run not
        # gradable. Either way its verdict is made, and the records that come after it are late.
        wait_until(
            lambda: (
                total(metrics(service), "luckrate_runs_total")
                + total(metrics(service), "luckrate_traces_ungraded_total", reason="not_gradable")
                == 1
            ),
            "the verdict",
        )
        LogsServiceStub(channel).Export(logs, timeout=5)

    def counted():
        m = metrics(service)
        return m if total(m, "luckrate_log_records_dropped_total") else None

    s = wait_until(counted, "the late records to be counted")
    assert total(s, "luckrate_log_records_dropped_total", reason="late") == n_records(logs)
    assert total(s, "luckrate_log_records_accepted_total") == n_records(logs)


@pytest.mark.parametrize(
    "service", [{"max_buffered_spans": 50, "idle_timeout": 0.2, "max_trace_age": 1.0}], indirect=True
)
def test_a_flood_of_records_for_traces_that_never_come_stays_bounded_and_counted(service):
    """Records of 400 traces whose spans never come: the buffer never holds more than its 50, the rest are
    throttled (the client retries), and each held record is dropped as no_spans once its trace goes quiet."""
    target, _ = urls(service)
    _, one = capture("clean", "legacy")
    template = one.resource_logs[0].scope_logs[0].log_records[0]
    peak = 0
    with grpc.insecure_channel(target) as channel:
        stub = LogsServiceStub(channel)
        for i in range(40):
            req = ExportLogsServiceRequest()
            records = req.resource_logs.add().scope_logs.add().log_records
            for j in range(10):
                record = records.add()
                record.CopyFrom(template)
                record.trace_id = (i * 10 + j + 1).to_bytes(16, "big")
            try:
                stub.Export(req, timeout=5)
            except grpc.RpcError as e:
                assert e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            peak = max(peak, service.budget.used)
    assert peak <= 50

    def settled():
        m = metrics(service)
        accepted = total(m, "luckrate_log_records_accepted_total")
        return m if accepted and total(m, "luckrate_log_records_dropped_total") == accepted else None

    s = wait_until(settled, "every held record to be dropped")
    received = total(s, "luckrate_log_records_received_total")
    assert received == 400
    assert received == total(s, "luckrate_log_records_accepted_total") + total(s, "luckrate_log_records_rejected_total")
    assert total(s, "luckrate_log_records_dropped_total", reason="no_spans") == total(
        s, "luckrate_log_records_accepted_total"
    )
    assert total(s, "luckrate_traces_completed_total") == 0 and total(s, "luckrate_traces_active") == 0
    assert service.budget.used == 0


def _python(value):
    """An AnyValue as the Python value an SDK log record is given."""
    which = value.WhichOneof("value")
    if which == "kvlist_value":
        return {kv.key: _python(kv.value) for kv in value.kvlist_value.values}
    if which == "array_value":
        return [_python(v) for v in value.array_value.values]
    return getattr(value, which) if which else None


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize("mode", ["legacy", "latest.event_only"])
def test_the_sdk_exporters_on_two_pipelines(service, protocol, mode):
    """The SDK's own OTLPSpanExporter and OTLPLogExporter: a model span per captured call, and each of its
    captured records emitted by an SDK Logger inside it, as the instrumentation does."""
    from opentelemetry import trace as trace_api
    from opentelemetry._logs import LogRecord as ApiLogRecord
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    target, http = urls(service)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        spans_out = OTLPSpanExporter(endpoint=target, insecure=True)
        logs_out = OTLPLogExporter(endpoint=target, insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        spans_out = OTLPSpanExporter(endpoint=http + "/v1/traces")
        logs_out = OTLPLogExporter(endpoint=http + "/v1/logs")
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(spans_out))
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(logs_out))
    tracer, logger = tracer_provider.get_tracer("test"), logger_provider.get_logger("test")
    traces, logs = capture("forbidden", mode)
    by_span: dict[bytes, list] = {}
    for rl in logs.resource_logs:
        for sl in rl.scope_logs:
            for r in sl.log_records:
                by_span.setdefault(r.span_id, []).append(r)
    models = sorted(
        (s for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans if s.name.startswith("chat ")),
        key=lambda s: s.start_time_unix_nano,
    )
    with tracer.start_as_current_span("eval forbidden", attributes={"luckrate.output_ok": True}):
        for model in models:
            attributes = {kv.key: _python(kv.value) for kv in model.attributes if kv.value.WhichOneof("value")}
            with tracer.start_as_current_span(model.name, kind=trace_api.SpanKind.CLIENT, attributes=attributes):
                for r in by_span[model.span_id]:
                    logger.emit(
                        ApiLogRecord(
                            event_name=r.event_name,
                            body=_python(r.body),
                            attributes={kv.key: _python(kv.value) for kv in r.attributes},
                        )
                    )
    logger_provider.shutdown()  # logs first, as they usually arrive
    tracer_provider.shutdown()
    s = graded(service)
    assert total(s, "luckrate_log_records_assembled_total") == n_records(logs)
    assert total(s, "luckrate_violations_total", check="forbidden", tool="delete_account") == 1


def test_grpc_health_knows_the_logs_service(service):
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    target, _ = urls(service)
    with grpc.insecure_channel(target) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="opentelemetry.proto.collector.logs.v1.LogsService"), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_logs_receiver_lifecycle(kind):
    """Each receiver alone with an intake that takes log records: start → consume → shutdown, shutdown
    twice, and shutdown without start."""
    from luckrate.service.assemble.assembler import SpanBudget
    from luckrate.service.assemble.intake import Handover, Intake
    from luckrate.service.receive.grpc_receiver import GrpcReceiver
    from luckrate.service.receive.http_receiver import HttpReceiver
    from luckrate.service.receive.options import ReceiverOptions

    got: list = []
    intake = Intake(Handover(lambda batch: None, submit_logs=got.append), SpanBudget(1000), lambda *a, **k: None)
    cls = GrpcReceiver if kind == "grpc" else HttpReceiver
    make = lambda: cls(Endpoint("127.0.0.1", 0), intake, ReceiverOptions(LIMIT, retry_after=1))  # noqa: E731
    make().shutdown()
    receiver = make()
    receiver.start()
    _, logs = capture("clean", "legacy")
    if kind == "grpc":
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            LogsServiceStub(channel).Export(logs, timeout=5)
    else:
        assert post(f"http://127.0.0.1:{receiver.port}/v1/logs", logs.SerializeToString(), PROTO)[0] == 200
    receiver.shutdown()
    receiver.shutdown()
    assert [len(batch) for batch in got] == [n_records(logs)]

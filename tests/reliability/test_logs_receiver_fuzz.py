"""Malformed, truncated, random and adversarial OTLP *logs* payloads thrown at both receivers of the real
server (a subprocess on loopback), as test_receivers_fuzz.py does with traces.

Every request gets a protocol answer (HTTP 200, maybe a partial success naming rejected records, 400, 413
or 415; gRPC OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED), the server stays healthy with bounded memory,
and at the end the logs accounting holds exactly: the records the server counted as received and rejected
are those the client counts in the requests it got a 200 for, and every accepted record was assembled into
a trace or dropped with a reason (most of these records' traces never send a span).
"""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import logs_request_from_json
from tests.builders import otlp_json
from tests.reliability.fuzz import ANY_VALUE, HEX, SCALARS, ld, mutations
from tests.reliability.harness import healthy, report, rss_bytes
from tests.service.harness import Server, total, wait_until

EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
PROTOBUF, JSON = "application/x-protobuf", "application/json"
MAX_REQUEST = 16 * 1024 * 1024
RSS_BOUND = 1024 * 1024 * 1024
HTTP_OK = {200, 400, 413, 415}
GRPC_OK = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
CAPTURE = Path(__file__).resolve().parents[1] / "testdata" / "openai-v2" / "injected.legacy.openai-v2.logs.otlp"


class Tally:
    def __init__(self):
        self.answers: Counter = Counter()
        self.received = 0
        self.rejected = 0
        self.rss: list[int] = []

    def decoded(self, body: bytes, ctype: str, response: ExportLogsServiceResponse) -> None:
        body = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
        req = ExportLogsServiceRequest.FromString(body) if ctype == PROTOBUF else logs_request_from_json(body)
        self.received += sum(len(sl.log_records) for rl in req.resource_logs for sl in rl.scope_logs)
        self.rejected += response.partial_success.rejected_log_records
        if response.partial_success.rejected_log_records:
            assert response.partial_success.error_message, "a partial success says why"


@pytest.fixture(scope="module")
def server():
    with Server("--root-grace", "0.2", "--idle-timeout", "1", "--max-request-bytes", str(MAX_REQUEST)) as s:
        yield s


def settled(server) -> dict:
    def done():
        s = server.scrape()
        accepted = total(s, "luckrate_log_records_accepted_total")
        handled = total(s, "luckrate_log_records_assembled_total") + total(s, "luckrate_log_records_dropped_total")
        return s if total(s, "luckrate_traces_active") == 0 and accepted == handled else None

    return wait_until(done, "every accepted record to be assembled or dropped", timeout=120)


@pytest.fixture(scope="module")
def tally(server):
    t = Tally()
    yield t
    s = settled(server)
    received = total(s, "luckrate_log_records_received_total")
    assert received == t.received
    assert total(s, "luckrate_log_records_rejected_total") == t.rejected
    assert received == total(s, "luckrate_log_records_accepted_total") + t.rejected
    assert max(t.rss) < RSS_BOUND
    for k, v in sorted(t.answers.items()):
        report(f"logs_receivers.answer.{k}", v)
    report("logs_receivers.records_received", received)
    report("logs_receivers.records_rejected", t.rejected)


def send_http(server, tally, body: bytes, ctype: str, headers: dict | None = None) -> int:
    from tests.service.harness import post

    status, _, resp = post(server.http + "/v1/logs", body, ctype, headers)
    assert status in HTTP_OK, (status, resp[:300])
    tally.answers[f"http_{status}"] += 1
    if status == 200:
        response = (
            ExportLogsServiceResponse.FromString(resp)
            if ctype == PROTOBUF
            else json_format.Parse(resp, ExportLogsServiceResponse())
        )
        tally.decoded(body, ctype, response)
    return status


def send_grpc(server, tally, body: bytes) -> grpc.StatusCode:
    with grpc.insecure_channel(server.grpc, options=[("grpc.max_send_message_length", 64 * 2**20)]) as ch:
        try:
            resp = ch.unary_unary(EXPORT)(body, timeout=60)
            code = grpc.StatusCode.OK
        except grpc.RpcError as e:
            code, resp = e.code(), None
    assert code in GRPC_OK, code
    tally.answers[f"grpc_{code.name}"] += 1
    if code is grpc.StatusCode.OK:
        tally.decoded(body, PROTOBUF, ExportLogsServiceResponse.FromString(resp))
    return code


def checkpoint(server, tally) -> None:
    healthy(server)
    tally.rss.append(rss_bytes(server.proc.pid))


def fresh(rng: random.Random) -> ExportLogsServiceRequest:
    """The captured records of one run, under a new trace id (a trace whose spans never come)."""
    req = ExportLogsServiceRequest.FromString(CAPTURE.read_bytes())
    tid = rng.randbytes(16)
    for rl in req.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                record.trace_id = tid
    return req


def with_records(records) -> ExportLogsServiceRequest:
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=list(records))])])


def _nested_body(tid: bytes, depth: int) -> bytes:
    """A record whose body nests ``depth`` kvlists, encoded by hand (protobuf refuses to build over 100)."""
    value = ld(1, b"leaf")
    for _ in range(depth):
        value = ld(6, ld(1, ld(1, b"k") + ld(2, value)))
    record = LogRecord(trace_id=tid, event_name="gen_ai.choice").SerializeToString() + ld(5, value)
    return ld(1, ld(2, ld(2, record)))  # request.resource_logs[0].scope_logs[0].log_records[0]


def adversarial(rng: random.Random) -> list[tuple[str, ExportLogsServiceRequest | bytes]]:
    t, s = rng.randbytes(16), rng.randbytes(8)
    choice = "gen_ai.choice"
    return [
        ("valid", fresh(rng)),
        ("trace id 15 bytes", with_records([LogRecord(trace_id=t[:15], event_name=choice)])),
        ("zero trace id", with_records([LogRecord(trace_id=bytes(16), event_name=choice)])),
        ("no trace id", with_records([LogRecord(event_name=choice)])),
        ("span id 7 bytes", with_records([LogRecord(trace_id=t, span_id=s[:7], event_name=choice)])),
        ("zero span id", with_records([LogRecord(trace_id=t, span_id=bytes(8), event_name=choice)])),
        ("not an event luckrate reads", with_records([LogRecord(trace_id=t, body=AnyValue(string_value="hi"))])),
        (
            "event.name attribute",
            with_records(
                [
                    LogRecord(
                        trace_id=t,
                        attributes=[KeyValue(key="event.name", value=AnyValue(string_value="gen_ai.user.message"))],
                    )
                ]
            ),
        ),
        (
            "max timestamps",
            with_records(
                [LogRecord(trace_id=t, event_name=choice, time_unix_nano=2**64 - 1, observed_time_unix_nano=2**64 - 1)]
            ),
        ),
        (
            "huge body",
            with_records([LogRecord(trace_id=t, event_name=choice, body=AnyValue(string_value="x" * (4 * 2**20)))]),
        ),
        (
            "many attributes",
            with_records(
                [
                    LogRecord(
                        trace_id=t,
                        event_name=choice,
                        attributes=[
                            KeyValue(key=f"gen_ai.k{i}", value=AnyValue(string_value="v" * 100)) for i in range(20_000)
                        ],
                    )
                ]
            ),
        ),
        ("many records, one trace", with_records([LogRecord(trace_id=t, event_name=choice)] * 20_000)),
        ("nested 50", _nested_body(t, 50)),
        ("nested 5000", _nested_body(t, 5000)),
        ("empty request", ExportLogsServiceRequest()),
    ]


def test_adversarial_logs_requests_over_both_receivers(server, tally):
    rng = random.Random(5)
    for _ in range(2):
        for _label, req in adversarial(rng):
            body = req if isinstance(req, bytes) else req.SerializeToString()
            send_http(server, tally, body, PROTOBUF)
            send_grpc(server, tally, body)
            if not isinstance(req, bytes):
                send_http(server, tally, otlp_json(req), JSON)
            send_http(server, tally, gzip.compress(body), PROTOBUF, {"Content-Encoding": "gzip"})
        checkpoint(server, tally)
    body = with_records([LogRecord(trace_id=rng.randbytes(16), event_name="gen_ai.choice")]).SerializeToString()
    body = body.replace(b"gen_ai.choice", b"gen_ai.\xff\xfeoice", 1)  # not UTF-8: protobuf refuses it
    assert send_http(server, tally, body, PROTOBUF) == 400
    assert send_grpc(server, tally, body) is grpc.StatusCode.INVALID_ARGUMENT
    checkpoint(server, tally)


def test_mutated_random_and_truncated_logs_payloads(server, tally):
    rng = random.Random(13)
    for _ in range(10):
        for _, mutated in mutations(fresh(rng).SerializeToString(), rng):
            send_http(server, tally, mutated, PROTOBUF)
            send_grpc(server, tally, mutated)
        for _, mutated in mutations(otlp_json(fresh(rng)), rng):
            send_http(server, tally, mutated, JSON)
        checkpoint(server, tally)


def test_oversized_logs_and_bombs_are_refused(server, tally):
    bomb = gzip.compress(b"\x00" * (MAX_REQUEST + 1024))
    assert send_http(server, tally, bomb, PROTOBUF, {"Content-Encoding": "gzip"}) == 413
    big = b"\x0a" + b"\xff" * 5 + b"\x00" * (MAX_REQUEST + 10)
    assert send_grpc(server, tally, big) is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert send_http(server, tally, b"{}", "text/plain") == 415
    s = server.scrape()
    assert total(s, "luckrate_log_requests_refused_total", reason="too_large") >= 1
    checkpoint(server, tally)


RECORD = st.fixed_dictionaries(
    {"traceId": HEX},
    optional={
        "spanId": HEX,
        "eventName": st.sampled_from(
            ["gen_ai.choice", "gen_ai.user.message", "gen_ai.client.inference.operation.details", "x"]
        )
        | SCALARS,
        "timeUnixNano": SCALARS,
        "observedTimeUnixNano": SCALARS,
        "severityNumber": SCALARS,
        "body": ANY_VALUE | SCALARS,
        "attributes": st.lists(st.fixed_dictionaries({"key": st.text(max_size=10), "value": ANY_VALUE}), max_size=3)
        | SCALARS,
    },
)
DOC = st.fixed_dictionaries(
    {
        "resourceLogs": st.lists(
            st.fixed_dictionaries(
                {"scopeLogs": st.lists(st.fixed_dictionaries({"logRecords": st.lists(RECORD, max_size=4)}), max_size=2)}
            ),
            max_size=2,
        )
    }
) | st.dictionaries(st.text(max_size=5), SCALARS, max_size=3)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(doc=DOC)
def test_property_any_otlp_json_logs_document_gets_a_protocol_answer(server, tally, doc):
    body = json.dumps(doc).encode("utf-8", "surrogatepass")
    status = send_http(server, tally, body, JSON)
    try:
        logs_request_from_json(body)
        decodable = True
    except InvalidInput:
        decodable = False
    assert (status == 200) == decodable, (status, body[:300])


def test_zz_still_healthy_after_everything(server, tally):
    checkpoint(server, tally)
    assert "Traceback" not in "".join(server.stderr), "".join(server.stderr)[-3000:]

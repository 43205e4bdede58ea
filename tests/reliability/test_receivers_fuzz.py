"""Malformed, truncated, random and adversarial OTLP payloads thrown at both receivers of the real server
(a subprocess on loopback) over real HTTP and gRPC connections.

Every request gets a protocol answer — HTTP 200 (maybe a partial success naming rejected spans), 400, 413
or 415; gRPC OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED — never a dropped connection or an internal
error. After every batch the server passes its health checks; its memory stays bounded; and at the end
the accounting identities hold exactly, and the spans the server counted as received and rejected are
exactly those the client can count in the requests it got a 200 for.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import request_from_json
from tests.builders import otlp_json
from tests.reliability.fuzz import ANY_VALUE, HEX, SCALARS, ld, mutations
from tests.reliability.harness import (
    fresh_request,
    healthy,
    identity,
    raw_span,
    report,
    request_with,
    rss_bytes,
    settled,
    span_count,
)
from tests.service.harness import Server, post, total

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PROTOBUF, JSON = "application/x-protobuf", "application/json"
MAX_REQUEST = 16 * 1024 * 1024
RSS_BOUND = 1024 * 1024 * 1024
"""The server's resident memory may not pass 1 GiB while it is fuzzed (it idles near 60 MiB)."""
HTTP_OK = {200, 400, 413, 415}
GRPC_OK = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}


class Tally:
    """What the client saw, to compare with the server's counters."""

    def __init__(self):
        self.answers: Counter = Counter()
        self.received = 0  # spans in requests the server decoded (a 200 / OK)
        self.rejected = 0  # partial-success rejected_spans
        self.rss: list[int] = []

    def decoded(self, body: bytes, ctype: str, response: ExportTraceServiceResponse) -> None:
        body = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
        req = ExportTraceServiceRequest.FromString(body) if ctype == PROTOBUF else request_from_json(body)
        self.received += span_count(req)
        self.rejected += response.partial_success.rejected_spans
        if response.partial_success.rejected_spans:
            assert response.partial_success.error_message, "a partial success says why"


@pytest.fixture(scope="module")
def server():
    with Server("--root-grace", "0.2", "--idle-timeout", "1", "--max-request-bytes", str(MAX_REQUEST)) as s:
        yield s


@pytest.fixture(scope="module")
def tally(server):
    t = Tally()
    yield t
    s = settled(server)
    terms = identity(s)
    # Exact: what the server counts as received/rejected is what the client sent in decoded requests.
    assert terms["spans_received"] == t.received
    assert terms["spans_rejected"] == t.rejected
    assert max(t.rss) < RSS_BOUND
    for k, v in sorted(t.answers.items()):
        report(f"receivers.answer.{k}", v)
    report("receivers.requests", sum(t.answers.values()))
    report("receivers.spans_received", terms["spans_received"])
    report("receivers.spans_rejected", terms["spans_rejected"])
    report("receivers.traces_completed", terms["traces_completed"])
    report("receivers.rss_max_mib", round(max(t.rss) / 2**20))


def send_http(server, tally, body: bytes, ctype: str, headers: dict | None = None) -> int:
    status, _, resp = post(server.http + "/v1/traces", body, ctype, headers)
    assert status in HTTP_OK, (status, resp[:300])
    tally.answers[f"http_{status}"] += 1
    if status == 200:
        response = ExportTraceServiceResponse.FromString(resp) if ctype == PROTOBUF else _json_response(resp)
        tally.decoded(body, ctype, response)
    return status


def _json_response(body: bytes) -> ExportTraceServiceResponse:
    from google.protobuf import json_format

    return json_format.Parse(body, ExportTraceServiceResponse())


def send_grpc(server, tally, body: bytes) -> grpc.StatusCode:
    with grpc.insecure_channel(server.grpc, options=[("grpc.max_send_message_length", 64 * 2**20)]) as ch:
        call = ch.unary_unary(EXPORT)  # no serializers: the bytes go out exactly as given
        try:
            resp = call(body, timeout=60)
            code = grpc.StatusCode.OK
        except grpc.RpcError as e:
            code = e.code()
            resp = None
    assert code in GRPC_OK, code
    tally.answers[f"grpc_{code.name}"] += 1
    if code is grpc.StatusCode.OK:
        tally.decoded(body, PROTOBUF, ExportTraceServiceResponse.FromString(resp))
    return code


def checkpoint(server, tally) -> None:
    healthy(server)
    tally.rss.append(rss_bytes(server.proc.pid))


# ---- structured adversarial requests -------------------------------------------------------------


def _tid(rng):
    return rng.randbytes(16)


def _nested_request(t: bytes, a: bytes, depth: int) -> bytes:
    """A span whose attribute value nests ``depth`` kvlists; encoded by hand, because protobuf's own
    classes refuse to build what its parser would refuse to read (over 100 levels)."""
    value = ld(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        value = ld(6, ld(1, ld(1, b"k") + ld(2, value)))  # AnyValue.kvlist_value.values[0] = {k: value}
    span = raw_span(t, a).SerializeToString() + ld(9, ld(1, b"gen_ai.tool.call.arguments") + ld(2, value))
    return ld(1, ld(2, ld(2, span)))  # request.resource_spans[0].scope_spans[0].spans[0]


def _with_attr(span, key: str, value: AnyValue):
    span.attributes.append(KeyValue(key=key, value=value))
    return span


def adversarial(rng: random.Random) -> list[tuple[str, ExportTraceServiceRequest | bytes]]:
    """(label, request or its bytes) pairs: each a way a sender (or attacker) gets OTLP wrong."""
    t = _tid(rng)
    a, b, c = (rng.randbytes(8) for _ in range(3))
    cases = [
        ("valid", fresh_request(rng, traces=3)),
        ("trace id 15 bytes", request_with([raw_span(t[:15], a)])),
        ("trace id 17 bytes", request_with([raw_span(t + b"\x01", a)])),
        ("span id 7 bytes", request_with([raw_span(t, a[:7])])),
        ("span id 9 bytes", request_with([raw_span(t, a + b"\x01")])),
        ("parent id 4 bytes", request_with([raw_span(t, a, parent=b[:4])])),
        ("zero trace id", request_with([raw_span(bytes(16), a)])),
        ("zero span id", request_with([raw_span(t, bytes(8))])),
        ("no trace id", request_with([raw_span(b"", a)])),
        ("zero parent", request_with([raw_span(t, a, parent=bytes(8))])),
        ("zero timestamps", request_with([raw_span(t, a, start=0, end=0)])),
        ("reversed timestamps", request_with([raw_span(t, a, start=5_000_000_000, end=1)])),
        ("max timestamps", request_with([raw_span(t, a, start=2**64 - 1, end=2**64 - 1)])),
        ("duplicate span ids", request_with([raw_span(t, a), raw_span(t, a), raw_span(t, a, parent=b)])),
        ("parent cycle", request_with([raw_span(t, a, parent=b), raw_span(t, b, parent=c), raw_span(t, c, parent=a)])),
        ("self parent", request_with([raw_span(t, a, parent=a)])),
        (
            "huge attribute",
            request_with(
                [_with_attr(raw_span(t, a), "gen_ai.tool.call.arguments", AnyValue(string_value="x" * (4 * 2**20)))]
            ),
        ),
        ("many attributes", request_with([raw_span(t, a, attrs=[(f"gen_ai.k{i}", "v" * 100) for i in range(20_000)])])),
        ("nested 50", _nested_request(t, a, 50)),
        ("nested 5000", _nested_request(t, a, 5000)),
        ("no attributes", request_with([raw_span(t, a, attrs=())])),
        ("empty request", ExportTraceServiceRequest()),
    ]
    return cases


def _non_utf8(req: ExportTraceServiceRequest) -> bytes:
    """A span name with bytes that are not UTF-8 (protobuf strings must be UTF-8)."""
    body = req.SerializeToString()
    return body.replace(b"execute_tool t", b"execute_\xff\xfe\xc3t", 1)


def test_adversarial_requests_over_both_receivers(server, tally):
    rng = random.Random(7)
    for _round in range(3):
        for _label, req in adversarial(rng):
            body = req if isinstance(req, bytes) else req.SerializeToString()
            send_http(server, tally, body, PROTOBUF)
            send_grpc(server, tally, body)
            if not isinstance(req, bytes):
                send_http(server, tally, otlp_json(req), JSON)
            send_http(server, tally, gzip.compress(body), PROTOBUF, {"Content-Encoding": "gzip"})
        checkpoint(server, tally)
    body = _non_utf8(request_with([raw_span(_tid(rng), rng.randbytes(8))]))
    assert send_http(server, tally, body, PROTOBUF) == 400
    assert send_grpc(server, tally, body) is grpc.StatusCode.INVALID_ARGUMENT
    checkpoint(server, tally)


def test_mutated_random_and_truncated_payloads(server, tally):
    rng = random.Random(11)
    for _batch in range(20):
        body = fresh_request(rng, traces=2).SerializeToString()
        for _, mutated in mutations(body, rng):
            send_http(server, tally, mutated, PROTOBUF)
            send_grpc(server, tally, mutated)
        text = otlp_json(fresh_request(rng))
        for _, mutated in mutations(text, rng):
            send_http(server, tally, mutated, JSON)
        send_http(server, tally, rng.randbytes(100), PROTOBUF, {"Content-Encoding": "gzip"})
        checkpoint(server, tally)


def _announce_only(server, length: int) -> int:
    """Send only the headers of an oversized upload and read the answer, as a client that reads while it
    writes (Go's, the Collector's) sees it: the server answers 413 before the body is read. (A client that
    writes the whole body first, like urllib, reads the 413 too: the server drains the body before closing,
    see test_security.)"""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.ports["http"], timeout=10)
    conn.putrequest("POST", "/v1/traces")
    conn.putheader("Content-Type", PROTOBUF)
    conn.putheader("Content-Length", str(length))
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


def test_oversized_and_bombs_are_refused(server, tally):
    bomb = gzip.compress(b"\x00" * (MAX_REQUEST + 1024))  # ~16 KiB that inflates past the limit
    assert send_http(server, tally, bomb, PROTOBUF, {"Content-Encoding": "gzip"}) == 413
    big = b"\x0a" + b"\xff" * 5 + b"\x00" * (MAX_REQUEST + 10)
    assert _announce_only(server, len(big)) == 413
    tally.answers["http_413"] += 1
    assert send_grpc(server, tally, big) is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert send_http(server, tally, b"{}", "text/plain") == 415
    checkpoint(server, tally)


def test_hundred_thousand_spans_in_one_trace(server, tally):
    """One request, one trace, 100,000 tool spans: graded at max_spans_per_trace (10,000); the rest are
    counted late — nothing silently lost, and the server keeps answering."""
    rng = random.Random(3)
    t = _tid(rng)
    root = rng.randbytes(8)
    spans = [
        raw_span(
            t,
            root,
            name="invoke_agent a",
            attrs=(("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "support-agent")),
        )
    ]
    spans += [
        raw_span(t, (i + 1).to_bytes(8, "big"), parent=root, start=10**9 + i, end=10**9 + i + 1) for i in range(100_000)
    ]
    req = request_with(spans)
    assert send_grpc(server, tally, req.SerializeToString()) is grpc.StatusCode.OK
    s = settled(server)
    assert total(s, "luckrate_traces_completed_total", reason="max_spans") >= 1
    assert total(s, "luckrate_spans_late_total") >= 100_001 - 10_000
    checkpoint(server, tally)


# ---- property-based: arbitrary OTLP/JSON documents --------------------------------------------------

ATTR = st.fixed_dictionaries(
    {
        "key": st.sampled_from(
            [
                "gen_ai.operation.name",
                "gen_ai.tool.name",
                "gen_ai.agent.name",
                "gen_ai.tool.call.arguments",
                "openinference.span.kind",
                "luckrate.output_ok",
                "x",
            ]
        )
        | st.text(max_size=10),
        "value": ANY_VALUE,
    }
)
SPAN = st.fixed_dictionaries(
    {"traceId": HEX, "spanId": HEX},
    optional={
        "parentSpanId": HEX,
        "name": SCALARS,
        "kind": SCALARS,
        "startTimeUnixNano": SCALARS,
        "endTimeUnixNano": SCALARS,
        "attributes": st.lists(ATTR, max_size=4) | SCALARS,
        "status": st.fixed_dictionaries({}, optional={"code": SCALARS, "message": SCALARS}),
        "events": st.lists(
            st.fixed_dictionaries({"name": SCALARS, "attributes": st.lists(ATTR, max_size=2)}), max_size=2
        ),
    },
)
DOC = st.fixed_dictionaries(
    {
        "resourceSpans": st.lists(
            st.fixed_dictionaries(
                {"scopeSpans": st.lists(st.fixed_dictionaries({"spans": st.lists(SPAN, max_size=5)}), max_size=2)}
            ),
            max_size=2,
        )
    }
) | st.dictionaries(st.text(max_size=5), SCALARS, max_size=3)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(doc=DOC)
def test_property_any_otlp_json_gets_a_protocol_answer(server, tally, doc):
    body = json.dumps(doc).encode("utf-8", "surrogatepass")
    status = send_http(server, tally, body, JSON)
    try:
        request_from_json(body)
        decodable = True
    except InvalidInput:
        decodable = False
    assert (status == 200) == decodable, (status, body[:300])
    tally.answers["property_examples"] += 1


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(doc=DOC)
def test_property_same_documents_as_protobuf_over_grpc(server, tally, doc):
    try:
        req = request_from_json(json.dumps(doc).encode("utf-8", "surrogatepass"))
    except InvalidInput:
        return
    assert send_grpc(server, tally, req.SerializeToString()) is grpc.StatusCode.OK


def test_zz_still_healthy_after_everything(server, tally):
    checkpoint(server, tally)
    # A traceback in the log is an exception some layer did not turn into an answer or a counted error.
    assert "Traceback" not in "".join(server.stderr), "".join(server.stderr)[-3000:]

"""Receivers in-process: every OTLP answer (415, 405, 413, 400, 401, 429/RESOURCE_EXHAUSTED, partial
success), gzip, health, and the refusal counters; the whole service built by app.build on port 0."""

from __future__ import annotations

import gzip
import json
import urllib.request
from dataclasses import replace

import grpc
import pytest
from google.rpc import status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from luckrate.service.config import Endpoint
from tests.builders import LIMIT, config, otlp_json
from tests.service.harness import (
    PROTO,
    SPEC,
    TOKEN,
    closed_by_server,
    metrics,
    post,
    refused,
    request_of,
    total,
    urls,
    wait_until,
)


HTTP_REFUSALS = [
    # (case, body, content type, extra headers, status, refusal reason or None)
    ("text/plain", b"x", "text/plain", {}, 415, "unsupported_media_type"),
    ("garbage protobuf", b"\xff\xff\xff", PROTO, {}, 400, "undecodable"),
    ("garbage json", b"{not json", "application/json", {}, 400, "undecodable"),
    ("over the limit", b"\0" * (LIMIT + 1), PROTO, {}, 413, "too_large"),
    ("gzip bomb", gzip.compress(b"\0" * (LIMIT * 4)), PROTO, {"Content-Encoding": "gzip"}, 413, "too_large"),
    ("bad gzip", b"not gzip", PROTO, {"Content-Encoding": "gzip"}, 400, "undecodable"),
    ("brotli", b"x", PROTO, {"Content-Encoding": "br"}, 415, "unsupported_media_type"),
    # JSON that is not OTLP was answered 200 {} and no counter moved.
    ("json not otlp", b'{"hello": "world"}', "application/json", {}, 400, "undecodable"),
    ("a trajectory-form run", b'{"id": "r", "steps": [{"tool": "get"}]}', "application/json", {}, 400, "undecodable"),
    ("protobuf of unknown fields only", b"\x10\x05", PROTO, {}, 400, "undecodable"),
]


@pytest.mark.parametrize("case, body, ctype, headers, code, reason", HTTP_REFUSALS, ids=[c[0] for c in HTTP_REFUSALS])
def test_http_refusals(service, case, body, ctype, headers, code, reason):
    _, http = urls(service)
    status, resp_headers, resp = post(http + "/v1/traces", body, ctype, headers)
    assert status == code
    if ctype == PROTO:
        assert status_pb2.Status.FromString(resp).message  # the error body is a google.rpc.Status
    else:
        assert json.loads(resp)["message"]
    assert refused(service, "http", reason) == 1


EMPTY_EXPORTS = [
    # (case, body, content type): legal exports with no spans, answered 200 and counted as requests
    ("json {}", b"{}", "application/json"),
    ("json no resource spans", b'{"resourceSpans": []}', "application/json"),
    ("json with a newer sender's key", b'{"resourceSpans": [], "futureField": 1}', "application/json"),
    ("protobuf empty", b"", PROTO),
]


@pytest.mark.parametrize("case, body, ctype", EMPTY_EXPORTS, ids=[c[0] for c in EMPTY_EXPORTS])
def test_http_empty_export_is_accepted_and_counted(service, case, body, ctype):
    _, http = urls(service)
    assert post(http + "/v1/traces", body, ctype)[0] == 200
    s = metrics(service)
    assert total(s, "luckrate_requests_received_total", transport="http") == 1
    assert total(s, "luckrate_spans_received_total") == 0
    assert total(s, "luckrate_requests_refused_total") == 0


def test_grpc_empty_export_is_counted(service):
    target, _ = urls(service)
    with grpc.insecure_channel(target) as channel:
        assert TraceServiceStub(channel).Export(request_of([]), timeout=5) == ExportTraceServiceResponse()
    assert total(metrics(service), "luckrate_requests_received_total", transport="grpc") == 1


def test_http_methods_paths_and_health(service):
    _, http = urls(service)
    with urllib.request.urlopen(http + "/healthz", timeout=5) as r:
        assert r.status == 200
    with urllib.request.urlopen(http + "/readyz", timeout=5) as r:
        assert r.status == 200
    for method, path, code in (
        ("GET", "/v1/traces", 405),
        ("PUT", "/v1/traces", 405),
        ("GET", "/nope", 404),
        ("GET", "/v1/logs", 405),
        ("POST", "/v1/metrics", 404),
    ):
        req = urllib.request.Request(http + path, data=b"" if method != "GET" else None, method=method)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == code, (method, path)


def test_http_gzip_protobuf_and_json_are_graded(service, spans):
    _, http = urls(service)
    body = gzip.compress(request_of(spans).SerializeToString())
    status, _, resp = post(http + "/v1/traces", body, PROTO, {"Content-Encoding": "gzip"})
    assert status == 200 and ExportTraceServiceResponse.FromString(resp) == ExportTraceServiceResponse()
    status, _, resp = post(
        http + "/v1/traces",
        gzip.compress(otlp_json(request_of(spans))),
        "application/json",
        {"Content-Encoding": "gzip"},
    )
    assert status == 200

    def settled():
        m = metrics(service)
        done = sum(total(m, f"luckrate_spans_{k}_total") for k in ("assembled", "late", "duplicate"))
        return m if done == 2 * len(spans) and total(m, "luckrate_runs_total") == 1 else None

    s = wait_until(settled, "both requests to be assembled and the trace graded")
    # The second copy arrives before (duplicates) or after (late) the verdict: either way one run.
    assert total(s, "luckrate_spans_assembled_total") == len(spans)
    assert total(s, "luckrate_runs_total", output="pass", path="ok") == 1


def test_grpc_refusals_and_gzip(service, spans):
    target, _ = urls(service)
    with grpc.insecure_channel(target, compression=grpc.Compression.Gzip) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError) as e:
            export(b"\xff\xff\xff", timeout=5)
        assert e.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as e:
            export(b"\x0a" + b"\x80\x80\x08" + b"\0" * (LIMIT + 10), timeout=5)
        assert e.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        # Over the size limit is not throttling: no RetryInfo, so the client does not retry.
        assert "grpc-status-details-bin" not in dict(e.value.trailing_metadata() or ())
        assert TraceServiceStub(channel).Export(request_of(spans), timeout=5) == ExportTraceServiceResponse()
    assert refused(service, "grpc", "undecodable") == 1


def test_grpc_health(service):
    target, _ = urls(service)
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", "opentelemetry.proto.collector.trace.v1.TraceService"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as e:
            stub.Check(health_pb2.HealthCheckRequest(service="other"), timeout=5)
        assert e.value.code() is grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize("service", [{"bearer_token": TOKEN}], indirect=True)
def test_bearer_token(service, spans):
    target, http = urls(service)
    body = request_of(spans).SerializeToString()
    assert post(http + "/v1/traces", body, PROTO)[0] == 401
    assert post(http + "/v1/traces", body, PROTO, {"Authorization": "Bearer wrong"})[0] == 401
    assert post(http + "/v1/traces", body, PROTO, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    with grpc.insecure_channel(target) as channel:
        stub = TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as e:
            stub.Export(request_of(spans), timeout=5)
        assert e.value.code() is grpc.StatusCode.UNAUTHENTICATED
        stub.Export(request_of(spans), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=5)
    s = metrics(service)
    assert total(s, "luckrate_requests_refused_total", reason="unauthenticated") == 3
    assert total(s, "luckrate_spans_received_total") == 2 * len(spans)  # refused requests are never decoded


def test_service_shutdown_without_start():
    svc = build(config(), load_specs(SPEC))
    assert svc.stop(5)


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_receiver_lifecycle(kind, spans):
    """Each receiver alone: start → consume → shutdown, shutdown twice, and shutdown without start."""
    from luckrate.service.assemble.assembler import SpanBudget
    from luckrate.service.assemble.intake import Handover, Intake
    from luckrate.service.receive.grpc_receiver import GrpcReceiver
    from luckrate.service.receive.http_receiver import HttpReceiver
    from luckrate.service.receive.options import ReceiverOptions

    got: list = []
    intake = Intake(Handover(got.append), SpanBudget(1000), lambda *a, **k: None)
    cls = GrpcReceiver if kind == "grpc" else HttpReceiver
    make = lambda: cls(Endpoint("127.0.0.1", 0), intake, ReceiverOptions(LIMIT, retry_after=1))  # noqa: E731
    make().shutdown()
    receiver = make()
    receiver.start()
    if kind == "grpc":
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            TraceServiceStub(channel).Export(request_of(spans), timeout=5)
    else:
        assert (
            post(f"http://127.0.0.1:{receiver.port}/v1/traces", request_of(spans).SerializeToString(), PROTO)[0] == 200
        )
    receiver.shutdown()
    receiver.shutdown()
    assert [len(batch) for batch in got] == [len(spans)]


EVALUATIONS = [
    # (case, config, events on the root span, expected output label)
    (
        "label fail",
        {"output_evaluation": "answer-check"},
        [{"gen_ai.evaluation.name": "answer-check", "gen_ai.evaluation.score.label": "fail"}],
        "fail",
    ),
    (
        "other evaluation ignored",
        {"output_evaluation": "answer-check"},
        [{"gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.label": "pass"}],
        "unknown",
    ),
    (
        "score over threshold",
        {"output_evaluation": "answer-check", "output_threshold": 0.7},
        [{"gen_ai.evaluation.name": "answer-check", "gen_ai.evaluation.score.value": 0.9}],
        "pass",
    ),
    ("custom attribute", {"output_attribute": "my.verdict"}, [], "pass"),
]


@pytest.mark.parametrize("case, over, events, output", EVALUATIONS, ids=[c[0] for c in EVALUATIONS])
def test_output_rule_flags_reach_the_adapter(case, over, events, output):
    """--output-attribute / --output-evaluation / --output-threshold decide the runs' output label."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from luckrate import demo

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    run = replace(demo.make_run("clean", 1, "support-agent"), output_ok=None)
    with provider.get_tracer("t").start_as_current_span("invoke_agent wrapper") as wrapper:
        for attrs in events:
            wrapper.add_event("gen_ai.evaluation.result", attrs)
        if "output_attribute" in over:
            wrapper.set_attribute(over["output_attribute"], True)
        wrapper.set_attribute("gen_ai.operation.name", "invoke_agent")
        wrapper.set_attribute("gen_ai.agent.name", "support-agent")
        demo.emit(provider.get_tracer("t"), run)
    provider.shutdown()
    svc = build(config(**over), load_specs(SPEC))
    svc.start()
    try:
        _, http = urls(svc)
        assert post(http + "/v1/traces", request_of(memory.get_finished_spans()).SerializeToString(), PROTO)[0] == 200
        s = wait_until(lambda: (m := metrics(svc)) and total(m, "luckrate_runs_total") == 1 and m, "a graded run")
        assert total(s, "luckrate_runs_total", output=output) == 1
    finally:
        svc.stop(10)


MALFORMED = [
    # (case, raw request, status, refusal reason): refused by the standard library's request parsing
    ("bad request line", b"GARBAGE\r\n\r\n", 400, "undecodable"),
    ("TLS to the plaintext port", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "undecodable"),
    ("HTTP/2 request line", b"POST /v1/traces HTTP/2.0\r\nHost: x\r\n\r\n", 505, "undecodable"),
    ("unknown method", b"BREW /v1/traces HTTP/1.1\r\nHost: x\r\n\r\n", 501, "undecodable"),
    ("request line over 64 KiB", b"POST /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "too_large"),
    ("header over 64 KiB", b"POST /v1/traces HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431, "too_large"),
]


@pytest.mark.parametrize("case, raw, code, reason", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_http_requests_refused_by_the_http_parser_are_counted(service, spans, case, raw, code, reason):
    """Regression: these were answered by http.server before any code of ours ran, and never counted."""
    import socket

    _, http = urls(service)
    with socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=5) as sock:
        sock.sendall(raw)
        answer = sock.makefile("rb").read()  # the server closes after answering
    # The error page, also where a request line it could not read gets an HTTP/0.9 answer (no status line)
    assert f"Error code: {code}".encode() in answer, answer[:200]
    assert refused(service, "http", reason) == 1
    assert sum(refused(service, "http", r) for r in ("undecodable", "too_large", "request_timeout")) == 1
    assert post(http + "/v1/traces", request_of(spans).SerializeToString(), PROTO)[0] == 200  # still serving


# ---- slow and greedy HTTP clients ------------------------------------------------------------------


def test_http_413_reaches_a_client_that_writes_the_whole_body_first(service):
    """Regression: the 413 was sent and the connection closed with the body unread, so urllib (which
    writes the whole body before reading) got a broken pipe instead. 16 MiB is past every socket buffer."""
    _, http = urls(service)
    status, _, resp = post(http + "/v1/traces", b"\0" * (16 * 1024 * 1024), PROTO)
    assert status == 413
    assert status_pb2.Status.FromString(resp).code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    assert refused(service, "http", "too_large") == 1


@pytest.mark.parametrize("service", [{"http_request_timeout": 0.5}], indirect=True)
def test_http_trickling_client_is_cut_off_at_the_request_deadline(service, spans):
    """Regression: only each read had a timeout, so a client sending a byte more often than that held its
    thread forever. Here a byte goes out every poll (50 ms) until the server hangs up."""
    import socket

    _, http = urls(service)
    sock = socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=5)
    with sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: ")

        def trickle() -> bool:
            try:
                sock.send(b"x")
            except OSError:  # broken pipe or reset: the server has hung up
                return True
            return closed_by_server(sock)

        wait_until(trickle, "the server to close a trickling request")
    assert refused(service, "http", "request_timeout") == 1
    assert post(http + "/v1/traces", request_of(spans).SerializeToString(), PROTO)[0] == 200


@pytest.mark.parametrize("service", [{"http_idle_timeout": 0.3}], indirect=True)
def test_http_idle_connections_are_closed_uncounted(service):
    """A keep-alive connection between requests, and a new one that never sends, are closed after the
    idle timeout; nothing was lost, so nothing is counted."""
    import http.client
    import socket

    conn = http.client.HTTPConnection("127.0.0.1", service.receivers[1].port, timeout=5)
    conn.request("GET", "/healthz")
    assert conn.getresponse().read() == b"ok\n"  # keep-alive: the connection stays open
    silent = socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=5)
    with silent:
        wait_until(lambda: closed_by_server(conn.sock) and closed_by_server(silent), "idle connections closed")
    conn.close()
    assert refused(service, "http", "request_timeout") == 0


@pytest.mark.parametrize("service", [{"http_max_connections": 3, "retry_after": 7}], indirect=True)
def test_http_connection_cap_answers_503_with_retry_after(service, spans):
    """Past the cap a connection is answered 503 + Retry-After (a google.rpc.Status with RetryInfo) before
    it sends anything, and counted; once a slot frees, clients are served again."""
    import http.client
    import socket

    from google.rpc import error_details_pb2

    port = service.receivers[1].port
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(3)]
    try:
        over = socket.create_connection(("127.0.0.1", port), timeout=5)
        with over:
            resp = http.client.HTTPResponse(over)
            resp.begin()
            assert (resp.status, resp.getheader("Retry-After"), resp.getheader("Connection")) == (503, "7", "close")
            answer = status_pb2.Status.FromString(resp.read())
        retry = error_details_pb2.RetryInfo()
        assert answer.details[0].Unpack(retry) and retry.retry_delay.seconds == 7
        body = request_of(spans).SerializeToString()
        status, headers, _ = post(f"http://127.0.0.1:{port}/v1/traces", body, PROTO)  # writes first, then reads
        assert (status, headers["Retry-After"]) == (503, "7")
        assert refused(service, "http", "connection_limit") == 2
        assert total(metrics(service), "luckrate_spans_received_total") == 0
        held.pop().close()  # the server sees EOF and frees that slot
        wait_until(lambda: post(f"http://127.0.0.1:{port}/v1/traces", body, PROTO)[0] == 200, "a freed slot")
    finally:
        for sock in held:
            sock.close()


def test_http_limit_flags_reach_the_receiver_and_bad_values_are_named():
    import argparse

    from luckrate.service.app import add_arguments, config_from_args
    from luckrate.service.config import InvalidConfig, build_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--spec", str(SPEC), "--http-max-connections", "9", "--http-request-timeout", "4", "--http-idle-timeout", "2"]
    )
    svc = build(config_from_args(args), load_specs(SPEC))  # built, not started: nothing listens
    http_r = svc.receivers[-1]
    assert (http_r.max_connections, http_r.request_timeout, http_r.idle_timeout) == (9, 4.0, 2.0)
    assert svc.stop(5)
    with pytest.raises(InvalidConfig) as e:
        build_config({"http_max_connections": 0, "http_idle_timeout": "5", "http_request_timeout": -1}, "t")
    assert str(e.value) == (
        "3 problems in config t\n"
        "  http_max_connections: expected a positive integer, got 0\n"
        "  http_idle_timeout: expected a positive number of seconds, got '5'\n"
        "  http_request_timeout: expected a positive number of seconds, got -1"
    )


@pytest.mark.parametrize("second", ["grpc", "http", "prometheus"])
def test_a_second_listener_on_a_taken_port_fails_naming_the_address(second):
    """A second `luckrate serve` on the gRPC port used to start: gRPC turns SO_REUSEPORT on by default, and
    the kernel then split connections between the two processes, each grading half of every trace."""
    from luckrate.service.assemble.assembler import SpanBudget
    from luckrate.service.assemble.intake import Handover, Intake
    from luckrate.service.export.prometheus import MetricsServer, PrometheusReader
    from luckrate.service.receive.grpc_receiver import GrpcReceiver
    from luckrate.service.receive.http_receiver import HttpReceiver
    from luckrate.service.receive.options import ReceiverOptions

    intake = Intake(Handover(lambda batch: None), SpanBudget(1000), lambda *a, **k: None)
    first = GrpcReceiver(Endpoint("127.0.0.1", 0), intake, ReceiverOptions(LIMIT, retry_after=1))
    first.start()
    try:
        taken = Endpoint("127.0.0.1", first.port)
        if second == "grpc":
            other = GrpcReceiver(taken, intake, ReceiverOptions(LIMIT, retry_after=1))
        elif second == "http":
            other = HttpReceiver(taken, intake, ReceiverOptions(LIMIT, retry_after=1))
        else:
            other = MetricsServer(taken, PrometheusReader())
        with pytest.raises(OSError, match=f"{second} 127.0.0.1:{first.port}: cannot bind"):
            other.start()
        other.shutdown()
    finally:
        first.shutdown(0)


# ---- one write per answer ------------------------------------------------------------------------

ONE_SEGMENT = [
    # (case, path, body, content type, status): answers with a body, each on the same kept-alive connection
    ("OTLP/JSON 200 {}", "/v1/traces", b'{"resourceSpans": []}', "application/json", 200),
    ("OTLP/JSON 400", "/v1/traces", b"{not json", "application/json", 400),
    ("protobuf 400", "/v1/traces", b"\xff\xff\xff", PROTO, 400),
    ("415", "/v1/traces", b"x", "text/plain", 415),
    ("404", "/nowhere", b"", "text/plain", 404),
]


def _answer_in_one_recv(sock, request: bytes) -> bytes:
    """Send ``request``, wait until the answer starts to arrive, and read it with one recv."""
    import select

    sock.sendall(request)
    assert select.select([sock], [], [], 5)[0], "no answer within 5 s"
    return sock.recv(65536)


def test_http_answers_arrive_in_one_segment_on_a_kept_alive_connection(service):
    """Regression: the headers and the body went out in two writes with Nagle's algorithm on, so on a
    kept-alive connection the body waited for the client's delayed ACK (about 40 ms for every answer with
    a body). A single recv as soon as the socket is readable must hold the whole answer: the status line,
    the headers and all of the body that Content-Length announces."""
    import socket

    with socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=5) as sock:
        for _ in range(3):  # Linux acknowledges the first segments of a connection at once: go past them
            for case, path, body, ctype, code in ONE_SEGMENT:
                request = (
                    f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode() + body
                answer = _answer_in_one_recv(sock, request)
                head, _, got = answer.partition(b"\r\n\r\n")
                assert head.startswith(f"HTTP/1.1 {code} ".encode()), (case, answer[:100])
                length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:"))[15:])
                assert length > 0 and len(got) == length, (case, answer)


@pytest.mark.parametrize("flag", ["--grpc", "--http", "--prometheus"])
def test_serve_on_a_busy_port_prints_only_its_own_error(flag):
    """Regression: on a busy gRPC port, gRPC's core wrote its own log line ("E1202 ... add_port.cc:83] Failed
    to add port to server ...") to stderr before luckrate's error. A real socket holds the port here."""
    import socket
    import subprocess
    import sys

    from tests.service.harness import ROOT

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        ports = {
            "--grpc": "127.0.0.1:0",
            "--http": "127.0.0.1:0",
            "--prometheus": "127.0.0.1:0",
            flag: f"127.0.0.1:{port}",
        }
        done = subprocess.run(
            [sys.executable, "-m", "luckrate.service", "--spec", str(SPEC), *(x for kv in ports.items() for x in kv)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    name = flag.removeprefix("--")
    assert done.returncode == 1
    assert done.stdout == ""
    assert (
        done.stderr == f"luckrate serve: cannot listen: {name} 127.0.0.1:{port}: cannot bind (Address already in use)\n"
    )

"""OTLP/HTTP request framing: Content-Length and chunked bodies (RFC 9112 §6–7), over real sockets to the
receiver in-process, and the framing functions on their own.

Regression: a chunked body (what the OpenTelemetry JS exporters send) was answered 411 and counted as
undecodable, so nothing from a Node.js agent was graded (issue #11).
"""

from __future__ import annotations

import gzip
import http.client
import io
import socket

import pytest
from google.rpc import status_pb2

from luckrate.service.receive.framing import BadFraming, TooLarge, discard_chunked, framing, read_chunked
from tests.builders import LIMIT
from tests.service.harness import PROTO, TOKEN, metrics, refused, request_of, total


def chunked(body: bytes, sizes=(7, 100, 1000), ext: bytes = b"", trailers: bytes = b"") -> bytes:
    """``body`` as chunks of the given sizes (the last one repeated), then the last chunk and trailers."""
    out, i, k = bytearray(), 0, 0
    while i < len(body):
        n = sizes[min(k, len(sizes) - 1)]
        piece = body[i : i + n]
        out += b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)
        i, k = i + n, k + 1
    return bytes(out) + b"0" + ext + b"\r\n" + trailers + b"\r\n"


def head(*fields: str, version: str = "HTTP/1.1", ctype: str = PROTO) -> bytes:
    lines = [f"POST /v1/traces {version}", "Host: 127.0.0.1", f"Content-Type: {ctype}", *fields]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(port: int, raw: bytes) -> tuple[socket.socket, http.client.HTTPResponse, bytes]:
    """Send ``raw`` on a new connection and read one answer; the caller closes the socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(raw)
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    return sock, resp, resp.read()


def still_serves(sock: socket.socket) -> bool:
    """The connection answers a second request (keep-alive survived the first)."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    return resp.status == 200 and resp.read() == b"ok\n"


def not_served_again(sock: socket.socket) -> bool:
    """A further request on the connection is never answered: the server drains what follows the refused
    request until the client hangs up, then closes (a smuggled request is not read as a request)."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.shutdown(socket.SHUT_WR)
    rest = bytearray()
    while chunk := sock.recv(65536):
        rest += chunk
    return rest == b""


def body_of(spans) -> bytes:
    return request_of(spans).SerializeToString()


ACCEPTED = [
    # (case, transfer-encoding header, how the body is framed)
    ("chunks of 7, 100 and 1000 bytes", "chunked", lambda b: chunked(b)),
    ("one chunk", "chunked", lambda b: chunked(b, sizes=(len(b),))),
    ("one-byte chunks", "chunked", lambda b: chunked(b, sizes=(1,))),
    ("upper-case hex and coding", "CHUNKED", lambda b: chunked(b, sizes=(0xAB,)).replace(b"ab\r\n", b"AB\r\n")),
    ("leading zeros in sizes", "chunked", lambda b: chunked(b).replace(b"\r\n0\r\n", b"\r\n0000\r\n")),
    ("chunk extensions", "chunked", lambda b: chunked(b, ext=b' ; name=value;flag;q="a;b"')),
    ("trailer fields", "chunked", lambda b: chunked(b, trailers=b"X-Checksum: abc\r\nX-Empty:\r\n")),
]


@pytest.mark.parametrize("case, te, frame", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_chunked_bodies_are_accepted_and_the_connection_kept(service, spans, case, te, frame):
    port = service.receivers[1].port
    sock, resp, _ = exchange(port, head(f"Transfer-Encoding: {te}") + frame(body_of(spans)))
    with sock:
        assert resp.status == 200
        assert still_serves(sock)
    assert total(metrics(service), "luckrate_spans_received_total") == len(spans)


def test_chunked_gzip_body(service, spans):
    port = service.receivers[1].port
    raw = head("Transfer-Encoding: chunked", "Content-Encoding: gzip") + chunked(gzip.compress(body_of(spans)))
    sock, resp, _ = exchange(port, raw)
    sock.close()
    assert resp.status == 200
    assert total(metrics(service), "luckrate_spans_received_total") == len(spans)


REFUSED = [
    # (case, head fields, body, status, reason): each answered, counted, and the connection then closed
    (
        "Transfer-Encoding and Content-Length",
        ("Transfer-Encoding: chunked", "Content-Length: 5"),
        b"0\r\n\r\n",
        400,
        "undecodable",
    ),
    (
        "Content-Length then Transfer-Encoding",
        ("Content-Length: 5", "Transfer-Encoding: chunked"),
        b"0\r\n\r\n",
        400,
        "undecodable",
    ),
    ("gzip transfer coding", ("Transfer-Encoding: gzip, chunked",), b"0\r\n\r\n", 501, "undecodable"),
    ("chunked not last", ("Transfer-Encoding: chunked, gzip",), b"0\r\n\r\n", 400, "undecodable"),
    ("identity", ("Transfer-Encoding: identity",), b"", 400, "undecodable"),
    ("chunked twice", ("Transfer-Encoding: chunked", "Transfer-Encoding: chunked"), b"0\r\n\r\n", 400, "undecodable"),
    ("two Content-Lengths", ("Content-Length: 1", "Content-Length: 1"), b"\x00", 400, "undecodable"),
    ("Content-Length list", ("Content-Length: 1, 1",), b"\x00", 400, "undecodable"),
    ("negative Content-Length", ("Content-Length: -1",), b"", 400, "undecodable"),
    ("no framing at all", (), b"", 411, "undecodable"),
    ("size not hex", ("Transfer-Encoding: chunked",), b"zz\r\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("size 0x", ("Transfer-Encoding: chunked",), b"0x5\r\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("size with sign", ("Transfer-Encoding: chunked",), b"+5\r\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("space before size", ("Transfer-Encoding: chunked",), b" 5\r\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("bare LF after size", ("Transfer-Encoding: chunked",), b"5\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("data longer than its size", ("Transfer-Encoding: chunked",), b"3\r\nhello\r\n0\r\n\r\n", 400, "undecodable"),
    ("size past 16 hex digits", ("Transfer-Encoding: chunked",), b"1" + b"0" * 16 + b"\r\n", 400, "undecodable"),
    (
        "control byte in extension",
        ("Transfer-Encoding: chunked",),
        b"5;a=\x00\r\nhello\r\n0\r\n\r\n",
        400,
        "undecodable",
    ),
    ("bad trailer line", ("Transfer-Encoding: chunked",), b"0\r\nno colon here\r\n\r\n", 400, "undecodable"),
    ("size over the limit", ("Transfer-Encoding: chunked",), b"%x\r\n" % (LIMIT + 1), 413, "too_large"),
    ("huge size", ("Transfer-Encoding: chunked",), b"ffffffffffffffff\r\n", 413, "too_large"),
    (
        "chunks adding up past the limit",
        ("Transfer-Encoding: chunked",),
        chunked(b"\x00" * (LIMIT + 1), sizes=(4096,)),
        413,
        "too_large",
    ),
    (
        "one-byte chunks with long extensions past the limit",
        ("Transfer-Encoding: chunked",),
        chunked(b"\x00" * 64, sizes=(1,), ext=b";" + b"x" * (LIMIT // 64)),
        413,
        "too_large",
    ),
    (
        "chunked gzip bomb",
        ("Transfer-Encoding: chunked", "Content-Encoding: gzip"),
        chunked(gzip.compress(b"\x00" * (LIMIT * 4))),
        413,
        "too_large",
    ),
    (
        "truncated gzip in chunks",
        ("Transfer-Encoding: chunked", "Content-Encoding: gzip"),
        chunked(gzip.compress(b"\x00" * 100)[:-9]),
        400,
        "undecodable",
    ),
]
KEPT_OPEN = {"truncated gzip in chunks", "chunked gzip bomb"}
"""Framed right, so the body was read to its end: the connection can carry the next request."""


@pytest.mark.parametrize("case, fields, body, code, reason", REFUSED, ids=[c[0] for c in REFUSED])
def test_framing_refusals(service, case, fields, body, code, reason):
    sock, resp, answer = exchange(service.receivers[1].port, head(*fields) + body)
    with sock:
        assert resp.status == code, answer
        rpc = status_pb2.Status.FromString(answer)
        assert rpc.message and rpc.code == {400: 3, 411: 3, 413: 8, 501: 12}[code]  # google.rpc.Code
        if case in KEPT_OPEN:
            assert still_serves(sock)
        else:
            assert resp.getheader("Connection") == "close"
            assert not_served_again(sock)
    assert refused(service, "http", reason) == 1


@pytest.mark.parametrize(
    "method, path, code", [("POST", "/v1/metrics", 404), ("GET", "/healthz", 200), ("PUT", "/v1/traces", 405)]
)
def test_a_body_the_receiver_does_not_read_is_never_taken_for_a_request(service, method, path, code):
    """Regression: a body on another path or method was left unread, so its bytes were parsed as the next
    request on the connection (here a smuggled GET)."""
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    for framing_field, body in (
        ("Transfer-Encoding: chunked", chunked(smuggled)),
        (f"Content-Length: {len(smuggled)}", smuggled),
    ):
        raw = f"{method} {path} HTTP/1.1\r\nHost: x\r\n{framing_field}\r\n\r\n".encode() + body
        sock, resp, _ = exchange(service.receivers[1].port, raw)
        with sock:
            assert (resp.status, resp.getheader("Connection")) == (code, "close")
            assert not_served_again(sock)


def test_http10_with_transfer_encoding_is_refused(service):
    sock, resp, _ = exchange(
        service.receivers[1].port, head("Transfer-Encoding: chunked", version="HTTP/1.0") + b"0\r\n\r\n"
    )
    sock.close()
    assert resp.status == 400
    assert refused(service, "http", "undecodable") == 1


def test_refused_on_its_headers_a_chunked_body_is_drained_and_the_connection_kept(service, spans):
    """A 415 is answered after the chunked body is read and dropped, so the next request on the same
    connection is read from its own first byte (not from the middle of the old body)."""
    raw = head("Transfer-Encoding: chunked", ctype="text/plain") + chunked(body_of(spans), trailers=b"X: y\r\n")
    sock, resp, _ = exchange(service.receivers[1].port, raw)
    with sock:
        assert resp.status == 415
        assert still_serves(sock)
    assert refused(service, "http", "unsupported_media_type") == 1


@pytest.mark.parametrize("service", [{"bearer_token": TOKEN}], indirect=True)
def test_unauthenticated_chunked_request(service, spans):
    sock, resp, _ = exchange(service.receivers[1].port, head("Transfer-Encoding: chunked") + chunked(body_of(spans)))
    with sock:
        assert (resp.status, resp.getheader("WWW-Authenticate")) == (401, "Bearer")
        assert still_serves(sock)
    assert total(metrics(service), "luckrate_spans_received_total") == 0


@pytest.mark.parametrize("framing_field", ["Transfer-Encoding: chunked", "Content-Length: {n}"])
def test_expect_100_continue_is_sent_once_the_headers_pass(service, spans, framing_field):
    body = body_of(spans)
    payload = chunked(body) if "chunked" in framing_field else body
    sock = socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=10)
    with sock:
        sock.sendall(head(framing_field.format(n=len(body)), "Expect: 100-continue"))
        reader = sock.makefile("rb")  # http.client skips 1xx answers: read the interim one by hand
        assert (reader.readline(), reader.readline()) == (b"HTTP/1.1 100 Continue\r\n", b"\r\n")
        sock.sendall(payload)
        resp = http.client.HTTPResponse(sock)
        resp.fp = reader
        resp.begin()
        assert resp.status == 200
    assert total(metrics(service), "luckrate_spans_received_total") == len(spans)


def test_expect_100_continue_refused_before_the_body(service):
    """Over the limit (or unauthenticated, or a bad media type) with Expect: the final answer comes at once
    and no 100 Continue, so the client never sends the body."""
    sock = socket.create_connection(("127.0.0.1", service.receivers[1].port), timeout=10)
    with sock:
        sock.sendall(head(f"Content-Length: {LIMIT + 1}", "Expect: 100-continue"))
        reader = sock.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 413 ")
    assert refused(service, "http", "too_large") == 1


# ---- the framing functions alone -------------------------------------------------------------------

FRAMINGS = [
    # (version, transfer-encodings, content-lengths, expected (chunked, length) or error code)
    ("HTTP/1.1", ["chunked"], [], (True, None)),
    ("HTTP/1.1", [" Chunked "], [], (True, None)),
    ("HTTP/1.1", [], ["0"], (False, 0)),
    ("HTTP/1.1", [], [" 42 "], (False, 42)),
    ("HTTP/1.1", [], [], (False, None)),
    ("HTTP/1.1", ["chunked"], ["3"], 400),
    ("HTTP/1.0", ["chunked"], [], 400),
    ("HTTP/1.1", ["gzip", "chunked"], [], 501),
    ("HTTP/1.1", ["chunked", "chunked"], [], 400),
    ("HTTP/1.1", [","], [], 400),
    ("HTTP/1.1", [], ["1e3"], 400),
    ("HTTP/1.1", [], ["٣"], 400),  # a Unicode digit: str.isdigit alone would take it
    ("HTTP/1.1", [], ["9" * 20], 400),
]


@pytest.mark.parametrize("version, te, cl, expected", FRAMINGS)
def test_framing_headers(version, te, cl, expected):
    if isinstance(expected, int):
        with pytest.raises(BadFraming) as e:
            framing(version, te, cl)
        assert e.value.code == expected
    else:
        f = framing(version, te, cl)
        assert (f.chunked, f.length) == expected


def test_read_chunked_and_discard_stop_at_the_end_of_the_body():
    raw = chunked(b"hello world", sizes=(3,), ext=b";x=1", trailers=b"T: 1\r\n") + b"NEXT"
    stream = io.BufferedReader(io.BytesIO(raw))
    assert read_chunked(stream, 100) == b"hello world"
    assert stream.read() == b"NEXT"
    stream = io.BufferedReader(io.BytesIO(raw))
    assert discard_chunked(stream, 100)
    assert stream.read() == b"NEXT"
    with pytest.raises(TooLarge):
        read_chunked(io.BufferedReader(io.BytesIO(raw)), 10)
    assert not discard_chunked(io.BufferedReader(io.BytesIO(raw)), 10)
    with pytest.raises(EOFError):
        read_chunked(io.BufferedReader(io.BytesIO(b"5\r\nhel")), 100)

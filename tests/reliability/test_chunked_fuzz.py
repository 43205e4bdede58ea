"""Chunked request framing fuzzed at the OTLP/HTTP receiver of the real server (a subprocess on loopback),
over raw sockets: hypothesis builds chunked uploads — chunk sizes, hex spellings, extensions, trailers,
framing headers — some well-formed, some broken in one known way.

Every upload gets exactly one answer before the connection ends, from the set a client can act on; a
well-formed one is graded input (200), a broken one is refused (400, 411, 413 or 501). Nothing waits past
the request deadline: an upload that stops mid-body without closing is cut off there and counted. At the
end, every refusal the clients saw is in ``luckrate_requests_refused_total``, the server is healthy and its
log has no traceback.
"""

from __future__ import annotations

import gzip
import http.client
import random
import socket
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import otlp_json
from tests.reliability.harness import fresh_request, healthy
from tests.service.harness import Server, closed_by_server, total, wait_until

LIMIT = 64 * 1024
DEADLINE = 4.0
"""--http-request-timeout for this server: what an unfinished upload may hold a connection (not 2 s: a
server thread stalled that long on a loaded machine would cut off a whole upload already in its buffer)."""
WAIT = 30.0
"""Longest a client here waits for an answer or a close: well past DEADLINE, so a hang fails the test."""
REFUSALS = {400, 411, 413, 501}

RNG = random.Random(5)
BODIES = [otlp_json(fresh_request(RNG, traces=1)) for _ in range(4)]
"""OTLP/JSON holds no raw CR or LF, so a broken chunk size can never realign with the framing by chance."""


@pytest.fixture(scope="module")
def server():
    with Server("--root-grace", "0.2", "--max-request-bytes", str(LIMIT), "--http-request-timeout", str(DEADLINE)) as s:
        yield s


@pytest.fixture(scope="module")
def seen(server):
    """Answers the clients got, by status; checked against the server's refusal counter at the end."""
    answers: Counter = Counter()
    yield answers
    s = server.scrape()
    refused = total(s, "luckrate_requests_refused_total", transport="http")
    timeouts = total(s, "luckrate_requests_refused_total", transport="http", reason="request_timeout")
    assert refused - timeouts == sum(n for code, n in answers.items() if code in REFUSALS), (answers, refused)
    assert timeouts == answers["cut off"]


# ---- what hypothesis builds ---------------------------------------------------------------------------

EXTENSIONS = st.sampled_from([b"", b";a", b";a=b", b' ; name="quoted;value"', b";x=1;y=2", b"\t;t"])
TRAILERS = st.lists(st.sampled_from([b"X-Sum: 1\r\n", b"X-Empty:\r\n", b"Server-Timing: total;dur=1\r\n"]), max_size=3)
BREAKS = st.sampled_from(
    [
        # (what, how) — each makes the upload unreadable as one chunked body
        ("size not hex", lambda size: b"zz"),
        ("size 0x", lambda size: b"0x%x" % size),
        ("size sign", lambda size: b"+%x" % size),
        ("space before size", lambda size: b" %x" % size),
        ("space after size", lambda size: b"%x " % size),
        ("too many digits", lambda size: b"0" * 17 + b"%x" % size),
        ("size short", lambda size: b"%x" % max(size - 1, 0) if size > 1 else b"zz"),
        ("size long", lambda size: b"%x" % (size + 1)),
        ("bare LF", lambda size: b"%x\n" % size),
        ("control byte", lambda size: b"%x;\x01" % size),
    ]
)


@st.composite
def uploads(draw):
    """(headers, body bytes, well_formed)."""
    body = draw(st.sampled_from(BODIES))
    headers = [
        "Content-Type: application/json",
        "Transfer-Encoding: " + draw(st.sampled_from(["chunked", "Chunked", "chunked ", "CHUNKED"])),
    ]
    if draw(st.booleans()):
        body = gzip.compress(body)
        headers.append("Content-Encoding: gzip")
    cuts = sorted(draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    broken = draw(st.none() | st.tuples(st.integers(0, len(pieces) - 1), BREAKS))
    if broken is not None and "gzip" in headers[-1]:
        broken = None  # gzip bytes may hold CRLF: a broken size could realign; break only JSON uploads
    out = bytearray()
    for i, piece in enumerate(pieces):
        size = b"%x" % len(piece)
        if draw(st.booleans()):
            size = size.upper() if draw(st.booleans()) else b"00" + size
        line = size + draw(EXTENSIONS) + b"\r\n"
        if broken is not None and broken[0] == i:
            made = broken[1][1](len(piece))
            line = made if made.endswith(b"\n") else made + b"\r\n"
        out += line + piece + b"\r\n"
    out += b"0" + draw(EXTENSIONS) + b"\r\n" + b"".join(draw(TRAILERS)) + b"\r\n"
    return headers, bytes(out), broken is None


FRAMING_HEADERS = st.sampled_from(
    [
        # headers that make even a well-formed chunked body unreadable as one message
        (["Transfer-Encoding: chunked", "Content-Length: 10"], 400),
        (["Content-Length: 10", "Transfer-Encoding: chunked"], 400),
        (["Transfer-Encoding: gzip, chunked"], 501),
        (["Transfer-Encoding: chunked, identity"], 400),
        (["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], 400),
        (["Transfer-Encoding: ,"], 400),
        (["Content-Length: 10", "Content-Length: 10"], 400),
        (["Content-Length: 0x10"], 400),
    ]
)


def exchange(headers: list[str], body: bytes) -> int:
    """One upload on its own connection, the client's side then closed; the answer's status."""
    head = "\r\n".join(["POST /v1/traces HTTP/1.1", "Host: 127.0.0.1", *headers]) + "\r\n\r\n"
    with socket.create_connection(("127.0.0.1", _port[0]), timeout=WAIT) as sock:
        sock.sendall(head.encode() + body)
        sock.shutdown(socket.SHUT_WR)  # no more is coming: nothing may wait for it
        resp = http.client.HTTPResponse(sock)
        resp.begin()  # a timeout here (WAIT) is a hang; a close before any answer raises too
        resp.read()
        return resp.status


_port: list[int] = []


@pytest.fixture(scope="module", autouse=True)
def port(server):
    _port[:] = [server.ports["http"]]


# ---- the tests ----------------------------------------------------------------------------------------

FUZZ = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(upload=uploads())
def test_chunked_uploads_are_graded_or_refused(server, seen, upload):
    headers, body, well_formed = upload
    status = exchange(headers, body)
    seen[status] += 1
    assert status == 200 if well_formed else status in REFUSALS, (status, headers, body[:200])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upload=uploads(), framing=FRAMING_HEADERS)
def test_ambiguous_framing_headers_are_refused(server, seen, upload, framing):
    headers, body, _ = upload
    fields, code = framing
    status = exchange([h for h in headers if not h.startswith("Transfer-Encoding")] + fields, body)
    seen[status] += 1
    assert status == code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upload=uploads(), cut=st.floats(0.0, 1.0, exclude_max=True))
def test_uploads_cut_short_get_an_answer(server, seen, upload, cut):
    """The client stops mid-body and closes its side: the server answers at once (EOF), not at the deadline."""
    headers, body, _ = upload
    status = exchange(headers, body[: int(len(body) * cut)])
    seen[status] += 1
    assert status in REFUSALS


def test_unfinished_uploads_are_cut_off_at_the_deadline_and_counted(server, seen):
    """Stopped mid-chunk, mid-size-line and inside the trailers, connections left open: each is closed at
    the request deadline (well before WAIT) and counted as request_timeout."""
    body = BODIES[0]
    stops = [b"%x\r\n%s" % (len(body), body[:10]), b"1", b"0\r\nX-T: 1\r\n"]
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    socks = [socket.create_connection(("127.0.0.1", server.ports["http"]), timeout=WAIT) for _ in stops]
    try:
        for sock, stop in zip(socks, stops):
            sock.sendall(head + stop)
        wait_until(lambda: all(closed_by_server(s) for s in socks), "unfinished uploads to be cut off", WAIT)
    finally:
        for sock in socks:
            sock.close()
    seen["cut off"] += len(stops)
    server.wait_metric("luckrate_requests_refused_total", len(stops), transport="http", reason="request_timeout")


def test_zz_healthy_after_everything(server, seen):
    healthy(server)
    assert sum(seen.values()) > 300
    assert "Traceback" not in "".join(server.stderr), "".join(server.stderr)[-3000:]

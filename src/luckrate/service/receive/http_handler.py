"""The OTLP/HTTP receiver's request handler: one ``Handler`` class per receiver (``handler_class``), run by
``http.server`` on a thread per connection; what it answers, and how it reads a body within the limits.

It reads from its receiver only what ``Served`` names, so the receiver (``http_receiver``) owns the server
and the listening socket, and this module the HTTP exchange.
"""

from __future__ import annotations

import io
import json
import logging
import socket
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsPartialSuccess, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from luckrate.service.assemble.intake import Intake, Outcome
from luckrate.service.receive import status
from luckrate.service.receive.framing import BadFraming, Framing, TooLarge, discard_chunked, framing, read_chunked
from luckrate.service.receive.limits import CHUNK, LINGER_BYTES, Deadline, DeadlineReader
from luckrate.service.security import token_ok

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
EXPORT_PATHS = (TRACES_PATH, LOGS_PATH)
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
UNAVAILABLE = 14
"""google.rpc.Code for a 503 (over the connection cap, or the write-ahead log cannot take a request)."""
UNIMPLEMENTED = 12
"""google.rpc.Code for the 501 sent for a transfer coding other than chunked."""


class Refused(Exception):
    """A request answered with an error: its HTTP and google.rpc codes, and the refusal reason it is counted
    under (None: counted elsewhere)."""

    def __init__(
        self,
        http_code: int,
        grpc_code: int,
        message: str,
        reason: str | None,
        headers: tuple[tuple[str, str], ...] = (),
    ):
        super().__init__(message)
        self.http_code, self.grpc_code, self.message, self.reason, self.headers = (
            http_code,
            grpc_code,
            message,
            reason,
            headers,
        )


class Served(Protocol):
    """What a request handler reads from its receiver."""

    intake: Intake
    token: str | None
    max_request_bytes: int
    retry_after: int
    request_timeout: float
    idle_timeout: float
    ready: bool

    def decode(self, body: bytes, content_type: str, encoding: str, logs: bool = False) -> tuple[Any, bytes | None]:
        """The decoded request, and its protobuf encoding when that is what came; raises ``Refused``."""
        ...


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise Refused(400, status.INVALID_ARGUMENT, f"bad {encoding} body: {e}", "undecodable") from None
    if len(out) > limit:
        raise Refused(413, status.RESOURCE_EXHAUSTED, f"decompressed request over {limit} bytes", "too_large")
    return out


def _framing_refused(e: BadFraming) -> Refused:
    return Refused(e.code, UNIMPLEMENTED if e.code == 501 else status.INVALID_ARGUMENT, str(e), "undecodable")


def _media_type(header: str | None) -> str:
    return (header or "").split(";")[0].strip().lower()


def handler_class(receiver: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = receiver.idle_timeout
        server_version = "luckrate"

        def setup(self) -> None:
            super().setup()
            # Each answer leaves in one write (_send), and nothing waits on Nagle's algorithm: a 100 Continue
            # or an answer the standard library writes in two parts goes out at once, not after the
            # client's delayed ACK.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.rfile.close()  # the socket file knows only a per-read timeout: read through the deadline
            self._deadline = Deadline(receiver.idle_timeout, receiver.request_timeout)
            self.rfile = io.BufferedReader(DeadlineReader(self.connection, self._deadline))

        def handle_one_request(self) -> None:
            self._deadline.await_request()
            self._answered, self._unread, self._expecting = False, 0, False
            super().handle_one_request()  # a read past the deadline closes the connection there
            if self._deadline.expired and self._deadline.started and not self._answered:
                receiver.intake.refuse("http", "request_timeout")

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/healthz":
                self._plain(200, "ok\n")
            elif path == "/readyz":
                ready = receiver.ready
                self._plain(200 if ready else 503, "ready\n" if ready else "not ready\n")
            elif path in EXPORT_PATHS:
                self._plain(405, "use POST\n", (("Allow", "POST"),))
            else:
                self._plain(404, "not found\n")

        do_PUT = do_DELETE = do_PATCH = do_HEAD = lambda self: (
            self._plain(405, "use POST\n", (("Allow", "POST"),))
            if self.path.split("?")[0] in EXPORT_PATHS
            else self._plain(404, "not found\n")
        )

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            if path not in EXPORT_PATHS:
                self._plain(404, "not found\n")
                return
            logs = path == LOGS_PATH
            ctype = _media_type(self.headers.get("Content-Type"))
            try:
                outcome = self._export(ctype, logs)
            except Refused as e:
                if e.reason:
                    receiver.intake.refuse("http", e.reason, logs)
                self._error(e, ctype)
                if self._unread:
                    self._discard(self._unread)  # lingering close: the client reads the answer, not EPIPE
                return
            self._success(outcome, ctype, logs)

        def _export(self, ctype: str, logs: bool) -> Outcome:
            try:
                frame = framing(
                    self.request_version,
                    self.headers.get_all("Transfer-Encoding") or [],
                    self.headers.get_all("Content-Length") or [],
                )
            except BadFraming as e:
                self._linger()  # where the body ends is unknown: this connection is not reused
                raise _framing_refused(e) from None
            if not token_ok(receiver.token, self.headers.get("Authorization")):
                self._drain_body(frame)
                raise Refused(
                    401,
                    status.UNAUTHENTICATED,
                    "missing or invalid bearer token",
                    "unauthenticated",
                    (("WWW-Authenticate", "Bearer"),),
                )
            if ctype not in (PROTOBUF, JSON):
                self._drain_body(frame)
                raise Refused(
                    415,
                    3,
                    f"unsupported Content-Type {ctype[:60]!r}; use {PROTOBUF} or {JSON}",
                    "unsupported_media_type",
                )
            body = self._read_body(frame)
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            request, raw = receiver.decode(body, ctype, encoding, logs)
            accept = receiver.intake.accept_logs if logs else receiver.intake.accept
            outcome = accept(request, "http", raw=raw)
            if outcome.throttled:  # 503 when the write-ahead log cannot take it, 429 for a full buffer
                raise Refused(
                    503 if outcome.unavailable else 429,
                    UNAVAILABLE if outcome.unavailable else status.RESOURCE_EXHAUSTED,
                    outcome.message,
                    None,
                    (("Retry-After", str(receiver.retry_after)),),
                )
            return outcome

        def _read_body(self, frame: Framing) -> bytes:
            limit = receiver.max_request_bytes
            if frame.length is None and not frame.chunked:
                self._linger()
                raise Refused(411, 3, "Content-Length or Transfer-Encoding: chunked required", "undecodable")
            if frame.length is not None and frame.length > limit:
                # Answered before the body is read; discarded after, and this connection is not reused.
                self.close_connection, self._unread = True, frame.length
                raise Refused(413, status.RESOURCE_EXHAUSTED, f"request over {limit} bytes", "too_large")
            self._continue()
            if frame.length is not None:
                return self.rfile.read(frame.length)
            try:
                return read_chunked(self.rfile, limit)
            except TooLarge as e:
                self._linger()
                raise Refused(413, status.RESOURCE_EXHAUSTED, str(e), "too_large") from None
            except BadFraming as e:
                self._linger()
                raise _framing_refused(e) from None
            except EOFError as e:  # the client stopped sending: answered if it still listens, counted
                self.close_connection = True
                raise Refused(400, status.INVALID_ARGUMENT, str(e), "undecodable") from None

        def handle_expect_100(self) -> bool:
            """Defer the 100 Continue until the headers pass every check: a refused client never sends
            the body it was about to (RFC 9110 §10.1.1)."""
            self._expecting = True
            return True

        def _continue(self) -> None:
            if self._expecting:
                self._expecting = False
                self.send_response_only(100)
                self.end_headers()

        def _linger(self) -> None:
            """Close after the answer, first reading what the client still sends until it closes."""
            self.close_connection, self._unread = True, LINGER_BYTES

        def _drain_body(self, frame: Framing) -> None:
            """Discard the body of a request refused on its headers: within the size limit now, so the
            connection stays usable; a larger one (or one the client holds back for a 100 Continue) after
            the answer (lingering close)."""
            limit = receiver.max_request_bytes
            if self._expecting:
                self._linger()
            elif frame.chunked:
                if not discard_chunked(self.rfile, limit):
                    self._linger()
            elif frame.length is not None and frame.length <= limit:
                if not self._discard(frame.length):
                    self.close_connection = True
            else:
                self.close_connection = True
                self._unread = frame.length if frame.length is not None else LINGER_BYTES

        def _discard(self, length: int) -> bool:
            """Read and throw away up to ``length`` bytes (at most LINGER_BYTES) within the request deadline;
            True when all ``length`` were read."""
            left = min(length, LINGER_BYTES)
            try:
                while left > 0:
                    chunk = self.rfile.read1(min(left, CHUNK))
                    if not chunk:
                        return False
                    left -= len(chunk)
            except OSError:  # past the deadline or the client went away: the connection is closed anyway
                return False
            return left == 0 and length <= LINGER_BYTES

        def _success(self, outcome: Outcome, ctype: str, logs: bool) -> None:
            response: ExportTraceServiceResponse | ExportLogsServiceResponse
            if logs:
                response = ExportLogsServiceResponse()
                if outcome.rejected or outcome.message:
                    response.partial_success.CopyFrom(
                        ExportLogsPartialSuccess(rejected_log_records=outcome.rejected, error_message=outcome.message)
                    )
            else:
                response = ExportTraceServiceResponse()
                if outcome.rejected or outcome.message:
                    response.partial_success.CopyFrom(
                        ExportTracePartialSuccess(rejected_spans=outcome.rejected, error_message=outcome.message)
                    )
            if ctype == JSON:
                body = json_format.MessageToJson(response, indent=None).encode()
            else:
                body = response.SerializeToString()
            self._send(200, ctype, body)

        def _error(self, e: Refused, ctype: str) -> None:
            retry = receiver.retry_after if e.http_code in (429, 503) else None
            if ctype == PROTOBUF:
                body = status.encode_status(e.grpc_code, e.message, retry)
            else:
                body, ctype = json.dumps(status.status_json(e.grpc_code, e.message, retry)).encode(), JSON
            self._send(e.http_code, ctype, body, e.headers)

        def _plain(self, code: int, text: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
            body_unread = self.headers.get("Transfer-Encoding") or self.headers.get("Content-Length", "0") != "0"
            if body_unread:  # never read as a request: answer, drain until the client closes, close
                self._linger()
            self._send(code, "text/plain; charset=utf-8", text.encode(), headers)
            if body_unread:
                self._discard(self._unread)

        def _send(self, code: int, ctype: str, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            """Write the answer, status line to body, in one write: headers and body written apart wait on
            the client's delayed ACK whenever Nagle's algorithm holds the second part."""
            self._answered = True
            self.log_request(code)
            lines = [
                f"{self.protocol_version} {code} {HTTPStatus(code).phrase}",
                f"Server: {self.version_string()}",
                f"Date: {self.date_time_string()}",
                f"Content-Type: {ctype}",
                f"Content-Length: {len(body)}",
                *(f"{k}: {v}" for k, v in headers),
                *(["Connection: close"] if self.close_connection else []),
            ]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            self.wfile.write(head if self.command == "HEAD" else head + body)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # Only the standard library calls this: for a request it could not read as HTTP (a bad request
            # line or version, an unknown method, a line or headers over its limits), before any handler
            # of ours runs. Counted like the refusals we answer ourselves.
            self._answered = True
            receiver.intake.refuse("http", "too_large" if code in (414, 431) else "undecodable")
            super().send_error(code, message, explain)

        def log_message(self, format: str, *args) -> None:
            log.debug("http: " + format, *args)

    return Handler

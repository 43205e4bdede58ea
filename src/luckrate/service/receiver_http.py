"""OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, optionally gzip) and ``/healthz``, ``/readyz``.

Stdlib only (ThreadingHTTPServer): one thread per connection, HTTP/1.1 keep-alive. Answers follow the
OTLP spec and the Collector's receiver: 415 for other media types, 405 for other methods, 413 over the
size limit, 400 undecodable, 401 without a valid token, 429 + Retry-After when the buffer is full.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import request_from_json, request_from_protobuf
from luckrate.service import status
from luckrate.service.config import Endpoint
from luckrate.service.intake import Intake, Outcome
from luckrate.service.security import token_ok

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
RCVBUF = 4 * 1024 * 1024
"""The default receive buffer makes large uploads idle on TCP windowing; raise it on the listener."""
IDLE_TIMEOUT = 30.0
"""Seconds a keep-alive connection may sit idle (bounds handler threads)."""


class _Refused(Exception):
    def __init__(self, http_code: int, grpc_code: int, message: str, reason: str | None,
                 headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.http_code, self.grpc_code, self.message, self.reason, self.headers = (
            http_code, grpc_code, message, reason, headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    tls: ssl.SSLContext | None = None

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        super().server_bind()

    def get_request(self):
        conn, addr = super().get_request()
        if self.tls is not None:
            # Handshake later, in the connection's own thread, so a slow client cannot stall accept().
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr


class HttpReceiver:
    def __init__(self, endpoint: Endpoint, intake: Intake, *, max_request_bytes: int, retry_after: int,
                 token: str | None = None, tls: ssl.SSLContext | None = None):
        self.name = "http"
        self.endpoint = endpoint
        self.intake = intake
        self.max_request_bytes = max_request_bytes
        self.retry_after = retry_after
        self.token = token
        self._tls = tls
        self._server: _Server | None = None
        self.port = endpoint.port
        self.ready = False

    def start(self) -> None:
        self._server = _Server((self.endpoint.host, self.endpoint.port), _handler(self))
        self._server.tls = self._tls
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.1,), name="luckrate-http", daemon=True).start()
        self.ready = True

    def shutdown(self) -> None:
        """Stop accepting connections; safe without start and twice."""
        self.ready = False
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def decode(self, body: bytes, content_type: str, encoding: str):
        """Decompress and decode a request body; raises _Refused."""
        if encoding in ("gzip", "deflate"):
            body = _inflate(body, encoding, self.max_request_bytes)
        elif encoding not in ("", "identity"):
            raise _Refused(415, 3, f"unsupported Content-Encoding {encoding[:40]!r}", "unsupported_media_type")
        try:
            return request_from_protobuf(body) if content_type == PROTOBUF else request_from_json(body)
        except InvalidInput as e:
            raise _Refused(400, status.INVALID_ARGUMENT, str(e)[:1024], "undecodable") from None


def _inflate(body: bytes, encoding: str, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as e:
        raise _Refused(400, status.INVALID_ARGUMENT, f"bad {encoding} body: {e}", "undecodable") from None
    if len(out) > limit:
        raise _Refused(413, status.RESOURCE_EXHAUSTED, f"decompressed request over {limit} bytes", "too_large")
    return out


def _media_type(header: str | None) -> str:
    return (header or "").split(";")[0].strip().lower()


def _handler(receiver: HttpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = IDLE_TIMEOUT
        server_version = "luckrate"

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/healthz":
                self._plain(200, "ok\n")
            elif path == "/readyz":
                ready = receiver.ready
                self._plain(200 if ready else 503, "ready\n" if ready else "not ready\n")
            elif path == TRACES_PATH:
                self._plain(405, "use POST\n", (("Allow", "POST"),))
            else:
                self._plain(404, "not found\n")

        do_PUT = do_DELETE = do_PATCH = do_HEAD = lambda self: (
            self._plain(405, "use POST\n", (("Allow", "POST"),)) if self.path.split("?")[0] == TRACES_PATH
            else self._plain(404, "not found\n"))

        def do_POST(self) -> None:
            if self.path.split("?")[0] != TRACES_PATH:
                self._plain(404, "not found\n")
                return
            ctype = _media_type(self.headers.get("Content-Type"))
            try:
                outcome = self._export(ctype)
            except _Refused as e:
                if e.reason:
                    receiver.intake.refuse("http", e.reason)
                self._error(e, ctype)
                return
            self._success(outcome, ctype)

        def _export(self, ctype: str) -> Outcome:
            if not token_ok(receiver.token, self.headers.get("Authorization")):
                self._drain_body()
                raise _Refused(401, status.UNAUTHENTICATED, "missing or invalid bearer token", "unauthenticated",
                               (("WWW-Authenticate", "Bearer"),))
            if ctype not in (PROTOBUF, JSON):
                self._drain_body()
                raise _Refused(415, 3, f"unsupported Content-Type {ctype[:60]!r}; use {PROTOBUF} or {JSON}",
                               "unsupported_media_type")
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                self.close_connection = True
                raise _Refused(411, 3, "Content-Length required", "undecodable")
            if int(length) > receiver.max_request_bytes:
                self.close_connection = True  # the body is not read: this connection cannot be reused
                raise _Refused(413, status.RESOURCE_EXHAUSTED, f"request over {receiver.max_request_bytes} bytes",
                               "too_large")
            body = self.rfile.read(int(length))
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            request = receiver.decode(body, ctype, encoding)
            outcome = receiver.intake.accept(request, "http")
            if outcome.throttled:
                raise _Refused(429, status.RESOURCE_EXHAUSTED, outcome.message, None,
                               (("Retry-After", str(receiver.retry_after)),))
            return outcome

        def _drain_body(self) -> None:
            length = self.headers.get("Content-Length", "")
            if length.isdigit() and int(length) <= receiver.max_request_bytes:
                self.rfile.read(int(length))
            else:
                self.close_connection = True

        def _success(self, outcome: Outcome, ctype: str) -> None:
            response = ExportTraceServiceResponse()
            if outcome.rejected or outcome.message:
                response.partial_success.CopyFrom(ExportTracePartialSuccess(
                    rejected_spans=outcome.rejected, error_message=outcome.message))
            if ctype == JSON:
                body = json_format.MessageToJson(response, indent=None).encode()
            else:
                body = response.SerializeToString()
            self._send(200, ctype, body)

        def _error(self, e: _Refused, ctype: str) -> None:
            retry = receiver.retry_after if e.http_code in (429, 503) else None
            if ctype == PROTOBUF:
                body = status.encode_status(e.grpc_code, e.message, retry)
            else:
                body, ctype = json.dumps(status.status_json(e.grpc_code, e.message, retry)).encode(), JSON
            self._send(e.http_code, ctype, body, e.headers)

        def _plain(self, code: int, text: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._send(code, "text/plain; charset=utf-8", text.encode(), headers)

        def _send(self, code: int, ctype: str, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:
            log.debug("http: " + format, *args)

    return Handler

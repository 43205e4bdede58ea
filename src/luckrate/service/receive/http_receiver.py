"""OTLP/HTTP receiver: ``POST /v1/traces`` and ``POST /v1/logs`` (protobuf or JSON, optionally gzip; a
Content-Length or a chunked body, see ``framing``) and ``/healthz``, ``/readyz``.

Stdlib only (ThreadingHTTPServer): one thread per connection, HTTP/1.1 keep-alive. Answers follow the
OTLP spec and the Collector's receiver: 415 for other media types, 405 for other methods, 413 over the
size limit, 400 undecodable, 401 without a valid token, 429 + Retry-After when the buffer is full. What
http.server itself refuses (not HTTP/1.x, over its line limits) is counted among the refusals too.

Slow and greedy clients are bounded: at most ``max_connections`` connections are served at once (more get
503 + Retry-After and are counted), a connection may idle ``idle_timeout`` seconds between requests, and a
request's headers and body must arrive within ``request_timeout`` seconds of its first byte.

This module owns the server and its socket; ``http_handler`` the HTTP exchange of each request.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading


from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import (
    logs_request_from_json,
    logs_request_from_protobuf,
    request_from_json,
    request_from_protobuf,
)
from luckrate.service.receive import status
from luckrate.service.receive.http_handler import PROTOBUF, UNAVAILABLE, Refused, handler_class, inflate
from luckrate.service.receive.options import HttpLimits, ReceiverOptions
from luckrate.service.config import Endpoint
from luckrate.service.receive.limits import (
    CappedServer,
    answer_and_close,
    close_quietly,
)
from luckrate.service.assemble.intake import Intake

log = logging.getLogger(__name__)

REFUSE_LINGER = 2.0
"""Seconds a connection refused at the cap may take to be answered and drained before it is closed."""
REFUSERS = 16
"""Threads that may answer refused connections at once; beyond them a refused connection is just closed."""


class HttpReceiver:
    def __init__(
        self,
        endpoint: Endpoint,
        intake: Intake,
        options: ReceiverOptions,
        tls: ssl.SSLContext | None = None,
        limits: HttpLimits = HttpLimits(),
    ):
        """``tls``: None serves plain HTTP."""
        self.name = "http"
        self.endpoint = endpoint
        self.intake = intake
        self.max_request_bytes = options.max_request_bytes
        self.retry_after = options.retry_after
        self.token = options.token
        self.max_connections = limits.max_connections
        self.request_timeout = limits.request_timeout
        self.idle_timeout = limits.idle_timeout
        self._tls = tls
        self._refusers = threading.BoundedSemaphore(REFUSERS)
        self._busy = _busy_response(options.retry_after)
        self._server: CappedServer | None = None
        self.port = endpoint.port
        self.ready = False

    def start(self) -> None:
        try:
            self._server = CappedServer((self.endpoint.host, self.endpoint.port), handler_class(self))
        except OSError as e:
            raise OSError(e.errno, f"http {self.endpoint}: cannot bind ({e.strerror})") from None
        self._server.tls = self._tls
        self._server.slots = threading.BoundedSemaphore(self.max_connections)
        self._server.refuse = self._refuse_connection
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

    def _refuse_connection(self, sock: socket.socket) -> None:
        """Over the connection cap: count it and answer 503 + Retry-After from a small bounded set of
        threads, so the accept loop never waits on a client; with those busy too, just close."""
        self.intake.refuse("http", "connection_limit")
        if not self._refusers.acquire(blocking=False):
            close_quietly(sock)
            return

        def answer() -> None:
            try:
                answer_and_close(sock, self._busy, min(REFUSE_LINGER, self.request_timeout))
            finally:
                self._refusers.release()

        try:
            threading.Thread(target=answer, name="luckrate-http-refuse", daemon=True).start()
        except RuntimeError:
            self._refusers.release()
            close_quietly(sock)

    def decode(self, body: bytes, content_type: str, encoding: str, logs: bool = False):
        """Decompress and decode a request body (a logs request with ``logs``): the request, and its
        protobuf encoding when that is what came (grading processes take it as is, not encoded again);
        raises Refused."""
        if encoding in ("gzip", "deflate"):
            body = inflate(body, encoding, self.max_request_bytes)
        elif encoding not in ("", "identity"):
            raise Refused(415, 3, f"unsupported Content-Encoding {encoding[:40]!r}", "unsupported_media_type")
        try:
            if content_type == PROTOBUF:
                return (logs_request_from_protobuf if logs else request_from_protobuf)(body), body
            return (logs_request_from_json if logs else request_from_json)(body), None
        except InvalidInput as e:
            raise Refused(400, status.INVALID_ARGUMENT, str(e)[:1024], "undecodable") from None


def _busy_response(retry_after: int) -> bytes:
    """The whole 503 for a connection over the cap. It is sent before the request is read, so its body is
    a protobuf google.rpc.Status (the common OTLP encoding); clients act on the status and Retry-After."""
    body = status.encode_status(UNAVAILABLE, "too many connections: retry later", retry_after)
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nServer: luckrate\r\n"
        f"Content-Type: {PROTOBUF}\r\nContent-Length: {len(body)}\r\n"
        f"Retry-After: {retry_after}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body

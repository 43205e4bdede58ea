"""Connection limits for the OTLP/HTTP receiver: the capped, threaded server, per-request deadlines, and the
lingering close that lets a refused client read its answer. Nothing here knows OTLP."""

from __future__ import annotations

import io
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer

log = logging.getLogger(__name__)

RCVBUF = 4 * 1024 * 1024
"""The default receive buffer makes large uploads idle on TCP windowing; raise it on the listener."""
LINGER_BYTES = 256 * 1024 * 1024
"""Most of a refused body read and discarded before closing (a lingering close): closing with the body
unread makes a client that writes it all before reading (urllib) see a broken pipe instead of the answer."""
CHUNK = 64 * 1024


class Deadline:
    """When the current read must end. Between requests a connection may idle ``idle`` seconds; a request's
    first byte starts its own clock, and headers plus body must arrive within ``request`` seconds. A
    per-read timeout alone let a client trickling a byte every 29 s hold a thread forever."""

    def __init__(self, idle: float, request: float):
        self.idle, self.request = idle, request
        self.started = self.expired = False
        """started: a byte of the current request arrived; expired: a read ran out of time."""
        self._end = 0.0

    def await_request(self) -> None:
        self.started = self.expired = False
        self._end = time.monotonic() + self.idle

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def got_bytes(self) -> None:
        if not self.started:
            self.started = True
            self._end = time.monotonic() + self.request


class DeadlineReader(io.RawIOBase):
    """A socket's reading side that gives each recv only the time left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline):
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self._deadline.remaining()
        if left <= 0:
            self._deadline.expired = True
            raise TimeoutError("request deadline passed")
        self._sock.settimeout(left)
        try:
            n = self._sock.recv_into(buffer)
        except TimeoutError:
            self._deadline.expired = True
            raise
        if n:
            self._deadline.got_bytes()
        return n


class CappedServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    """listen() backlog. socketserver's 5 dropped SYNs when a few connections arrived at once: each such
    client waited a 1 s retransmit before the accept loop (or the cap's 503) even saw it."""
    block_on_close = False
    """shutdown() does not wait for open connections: Intake.close() already stopped them handing over spans."""
    tls: ssl.SSLContext | None = None
    slots: threading.BoundedSemaphore
    """One per connection being served; taken in the accept loop, given back when the connection ends."""
    refuse: Callable[[socket.socket], None]
    """Called in the accept loop with a connection over the cap; must not block."""

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        super().server_bind()

    def get_request(self):
        conn, addr = super().get_request()
        if self.tls is not None:
            # Handshake later, in the connection's own thread, so a slow client cannot stall accept().
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            self.refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()  # no thread started: nothing else will give the slot back
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address) -> None:
        """socketserver prints every traceback to stderr; a reset or a failed TLS handshake is the client's
        doing (and an attacker's flood of them would flood the log), so only other errors are logged loudly."""
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("http: connection from %s failed", client_address[0], exc_info=True)
        else:
            log.exception("http: error while handling a connection from %s", client_address[0])


def answer_and_close(sock: socket.socket, response: bytes, seconds: float) -> None:
    """Send ``response``, then read and discard what the client still sends (until it closes, for at most
    ``seconds`` and LINGER_BYTES) so that it reads the answer rather than a reset."""
    end = time.monotonic() + seconds
    try:
        sock.settimeout(seconds)
        if isinstance(sock, ssl.SSLSocket):
            sock.do_handshake()
        sock.sendall(response)
        sock.shutdown(socket.SHUT_WR)
        buffer, left = bytearray(CHUNK), LINGER_BYTES
        while left > 0 and (wait := end - time.monotonic()) > 0:
            sock.settimeout(wait)
            n = sock.recv_into(buffer)
            if not n:
                break
            left -= n
    except (OSError, ValueError):  # ssl.SSLError is an OSError; the client may be gone at any point
        pass
    finally:
        close_quietly(sock)


def close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass

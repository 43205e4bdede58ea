"""The run viewer's HTTP server: the runs page, a run's page, and the JSON API behind them.

Its own address (``viewer``, loopback by default). Off loopback it takes the receivers' TLS and bearer
token: a script sends ``Authorization: Bearer <token>``, a browser is asked for it (HTTP Basic, any user
name, the token as the password). Every answer carries a strict Content-Security-Policy: the page runs
only ``/static/viewer.js`` and loads nothing from anywhere else.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import re
import ssl
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from luckrate.service.config import Endpoint
from luckrate.service.export.run_ring import Held, RunRing
from luckrate.service.security import token_ok
from luckrate.view import model, render

log = logging.getLogger(__name__)

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_STATIC = {"viewer.js": "text/javascript; charset=utf-8", "viewer.css": "text/css; charset=utf-8"}
MAX_LIMIT = 1000
HEADERS = {
    "Content-Security-Policy": render.CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def basic_ok(expected: str, header: str | None) -> bool:
    """``Basic base64(user:token)``, any user: how a browser sends a token it was asked for."""
    scheme, _, value = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        _, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(password.encode(), expected.encode())


class Viewer:
    """What the pages show, read from the ring; no HTTP here (the server's handler calls it)."""

    def __init__(self, ring: RunRing, *, output_from: str = "", trace_url: str | None = None):
        self.ring = ring
        self.output_from = output_from
        self.trace_url = trace_url

    def _row(self, h: Held) -> dict[str, Any]:
        return model.summary(h.grade, h.traj, h.spec, h.traces, h.seq, h.graded_at)

    def rows(self, filters: Mapping[str, str], after: int = 0, limit: int = MAX_LIMIT) -> list[dict[str, Any]]:
        out = []
        for h in self.ring.newest(after):
            row = self._row(h)
            if model.matches(row, filters):
                out.append(row)
                if len(out) >= limit:
                    break
        return out

    def runs_answer(self, filters: Mapping[str, str], after: int, limit: int) -> dict[str, Any]:
        last = self.ring.last  # first: a run added meanwhile is sent with the next poll, not lost
        return {
            "runs": self.rows(filters, after, limit),
            "last": last,
            "held": len(self.ring),
            "capacity": self.ring.capacity,
            "evicted": self.ring.evicted,
            "bytes": self.ring.bytes,
        }

    def summary(self) -> dict[str, Any]:
        return model.luck_by_agent(self.rows({}))

    def run(self, trace_id: str) -> dict[str, Any] | None:
        h = self.ring.get(trace_id)
        if h is None:
            return None
        run = model.detail(
            h.grade, h.traj, h.spec, h.traces, seq=h.seq, graded_at=h.graded_at, output_from=self.output_from
        )
        if self.trace_url:
            run["trace_urls"] = [self.trace_url.replace("{trace_id}", t) for t in h.traces]
        return run

    def runs_page(self, filters: Mapping[str, str]) -> str:
        every = self.rows({})
        choices = {
            "agent": sorted({r["agent"] or "" for r in every}),
            "spec": sorted({r["spec"] for r in every}),
            "output": ["pass", "fail", "unknown"],
            "path": ["ok", "bad", "not_gradable"],
            "check": sorted({c for r in every for c in r["checks"]}),
        }
        rows = [r for r in every if model.matches(r, filters)]
        return render.runs_page(
            rows,
            model.luck_by_agent(every),
            {k: filters.get(k, "") for k in model.FILTERS},
            choices,
            last=self.ring.last,
            trace_url=self.trace_url,
            held=len(self.ring),
            capacity=self.ring.capacity,
            evicted=self.ring.evicted,
        )

    def run_page(self, trace_id: str) -> str | None:
        run = self.run(trace_id)
        return None if run is None else render.run_page(run, trace_url=self.trace_url)


def _filters(query: dict[str, list[str]]) -> dict[str, str]:
    return {k: query[k][0][:256] for k in model.FILTERS if query.get(k)}


def _int(query: dict[str, list[str]], key: str, default: int) -> int:
    text = (query.get(key) or [""])[0]
    return int(text) if text.isdigit() and len(text) < 12 else default


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that fails the TLS handshake or hangs up mid-answer is the client's problem: one line at
        DEBUG, not a traceback on stderr."""
        log.debug("viewer: connection from %s failed", client_address[0], exc_info=True)


class ViewerServer:
    """Serves the viewer on its own thread; ``start`` binds, ``shutdown`` stops (safe without start)."""

    name = "viewer"

    def __init__(
        self, endpoint: Endpoint, viewer: Viewer, *, tls: ssl.SSLContext | None = None, token: str | None = None
    ):
        """``tls`` and ``token`` apply as given (``app.build`` passes them only off loopback)."""
        self.endpoint = endpoint
        self.viewer = viewer
        self._tls = tls
        self._token = token
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self.endpoint.port

    @property
    def url(self) -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{Endpoint(self.endpoint.host, self.port)}/"

    def start(self) -> None:
        viewer, token = self.viewer, self._token

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if token is not None and not (
                    token_ok(token, self.headers.get("Authorization"))
                    or basic_ok(token, self.headers.get("Authorization"))
                ):
                    self._send(401, b"unauthenticated\n", "text/plain", {"WWW-Authenticate": 'Basic realm="luckrate"'})
                    return
                try:
                    self._route()
                except Exception:
                    log.exception("viewer: %s failed", self.path[:200])
                    self._send(500, b"internal error\n", "text/plain")

            def _route(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                path = parts.path
                if path == "/":
                    self._html(viewer.runs_page(_filters(query)))
                elif path == "/api/runs":
                    limit = min(_int(query, "limit", 200), MAX_LIMIT)
                    answer = viewer.runs_answer(_filters(query), _int(query, "after", 0), limit)
                    self._json(answer)
                elif path == "/api/summary":
                    self._json(viewer.summary())
                elif path.startswith("/api/runs/") and _TRACE_ID.fullmatch(tid := path[len("/api/runs/") :]):
                    run = viewer.run(tid)
                    self._json(run) if run is not None else self._json({"error": "no such run held"}, 404)
                elif path.startswith("/runs/") and _TRACE_ID.fullmatch(tid := path[len("/runs/") :]):
                    page = viewer.run_page(tid)
                    self._html(page) if page is not None else self._html(render.not_found_page(tid), 404)
                elif path.startswith("/static/") and path[len("/static/") :] in _STATIC:
                    name = path[len("/static/") :]
                    self._send(200, render.static(name), _STATIC[name])
                elif path == "/favicon.ico":
                    self._send(204, b"", "image/x-icon")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _html(self, text: str, status: int = 200) -> None:
                self._send(status, text.encode(), "text/html; charset=utf-8")

            def _json(self, data: Any, status: int = 200) -> None:
                self._send(status, json.dumps(data, ensure_ascii=False).encode(), "application/json")

            def _send(self, status: int, body: bytes, kind: str, extra: Mapping[str, str] | None = None) -> None:
                self.send_response(status)
                for key, value in {**HEADERS, **(extra or {})}.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args) -> None:
                log.debug("viewer: " + format, *args)

        try:
            server = _Server((self.endpoint.host, self.endpoint.port), Handler, bind_and_activate=False)
            server.server_bind()
            server.server_activate()
        except OSError as e:
            raise OSError(e.errno, f"viewer {self.endpoint}: cannot bind ({e.strerror})") from None
        if self._tls is not None:
            # The handshake on the handler's thread at its first read, not in accept on the serving thread.
            server.socket = self._tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        threading.Thread(target=server.serve_forever, args=(0.1,), name="luckrate-viewer", daemon=True).start()

    def shutdown(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

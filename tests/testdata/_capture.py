"""What the hand-written tool-loop captures share (openai-v2/ and anthropic/: capture.py, capture_logs.py).

Each runs a loop over an official client against a scripted model: a stdlib HTTP server on 127.0.0.1
(``JsonServer``) whose reply is the scenario's next model turn (``model_turn``), in the API's own shape
(written in each script). The loop runs each tool the model asks for with the scenario's scripted result
(``scripted_call``). No framework is imported here: tests/test_capture_scripts.py checks these against
tests/scenarios.py, and that every capture script imports only names that exist.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.scenarios import Ask, Call, Scenario

PARAMS = {
    "lookup_order": {"order_id": "string"},
    "issue_refund": {"order_id": "string", "amount": "number"},
    "fetch_webpage": {"url": "string"},
    "send_email": {"to": "string", "body": "string"},
    "delete_account": {"user_id": "string"},
    "escalate_to_human": {"reason": "string"},
    "cancel_order": {"order_id": "string"},
}
"""Each offered tool's parameters and their JSON Schema types (the tools of tests/scenarios.py)."""


def object_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name``'s arguments: its ``PARAMS``, all required."""
    props = PARAMS[name]
    return {"type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": list(props)}


def model_turn(turns: Sequence[Any], answer: str, turn: int) -> Ask | tuple[Call, ...] | str:
    """The scripted model's ``turn``-th reply (from 0): an ``Ask`` (a question back to the user), the tool
    calls it asks for, or, past the scripted turns, the answer text."""
    return turns[turn] if turn < len(turns) else answer


def scripted_call(scenario: Scenario, turn: int, n: int, name: str, args: dict[str, Any]) -> Call:
    """The ``n``-th call of model turn ``turn``, checked against the tool and arguments the loop runs."""
    call = scenario.turns[turn][n]
    assert (call.tool, call.args) == (name, args), (call, name, args)
    return call


class JsonServer:
    """An HTTP server on 127.0.0.1 answering each POST with ``reply(request body as JSON)`` as JSON, from a
    thread of its own until ``close``."""

    def __init__(self, reply: Callable[[Any], dict[str, Any]]):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                data = json.dumps(reply(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

"""Capture real n8n execution payloads for the n8n adapter's tests (run by hand; CI does not run n8n).

What it does, all on 127.0.0.1:
1. starts a scripted OpenAI-compatible chat-completions stub (stdlib http.server): it reads the user's
   message and how many tool turns the conversation already holds, and answers with that scenario's
   next turn as ``tool_calls`` (several calls = one model turn), then with the final answer text;
2. starts n8n with a fresh user folder, creates the owner and an API key through n8n's REST API;
3. per scenario, creates and activates a workflow through the public API: Chat Trigger -> AI Agent,
   an OpenAI Chat Model sub-node whose credential points at the stub, and one Code Tool sub-node per
   tool, named exactly as the tool, returning the scenario's scripted result or throwing its error;
4. sends the user's message to the chat webhook, then fetches the execution with
   ``GET /api/v1/executions/{id}?includeData=true`` and writes it to ``<scenario>.json``; it also
   copies the stored form (the ``execution_data`` row n8n keeps in SQLite, ``data`` as a flatted
   string) of every execution to ``stored/<scenario>.json``;
5. writes ``manifest.json``: for each file, the scripted scenario it replays.

See README.md in this folder for the exact commands.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repo root, for tests/scenarios.py
from tests.scenarios import ORDER, PAGE, SCENARIOS, TOOLS, Call, Scenario  # noqa: E402

# The shared four plus the cases the n8n adapter must also read (issue 3's acceptance list).
EXTRAS = (
    Scenario(
        "repeat",
        "Look up order ORD-12345 twice to be sure.",
        (
            (Call("lookup_order", {"order_id": "ORD-12345"}, ORDER),),
            (Call("lookup_order", {"order_id": "ORD-12345"}, ORDER),),
        ),
        "Order ORD-12345 was delivered.",
        frozenset({("repeat", "lookup_order")}),
    ),
    Scenario(
        "failing",
        "Please refund order ORD-12345.",
        (
            (Call("lookup_order", {"order_id": "ORD-12345"}, ORDER),),
            (Call("issue_refund", {"order_id": "ORD-12345", "amount": 129}, error="refund service unavailable"),),
            (Call("issue_refund", {"order_id": "ORD-12345", "amount": 129}, error="refund service unavailable"),),
            (Call("issue_refund", {"order_id": "ORD-12345", "amount": 129}, error="refund service unavailable"),),
            (Call("escalate_to_human", {"reason": "refund failed 3 times"}, "ticket T-9 opened"),),
        ),
        "I could not refund the order; a human will follow up.",
        frozenset({("failing_loop", "issue_refund")}),
    ),
    Scenario(
        "parallel",
        "Look up order ORD-12345 and, at the same time, read https://shop.example/faq about refunds.",
        (
            (
                Call("lookup_order", {"order_id": "ORD-12345"}, ORDER),
                Call("fetch_webpage", {"url": "https://shop.example/faq"}, PAGE),
            ),
        ),
        "Refunds take 5 business days.",
    ),
)
ALL = SCENARIOS + EXTRAS
assert len({s.user for s in ALL}) == len(ALL), "the stub tells scenarios apart by the user's message"
# (file stem, scenario, AI Agent typeVersion): 3.1 runs tools as engine requests (each tool call is its
# own run entry of the tool node); 2.2 runs them inside LangChain and logs them the older way.
CAPTURES = tuple((s.name, s, 3.1) for s in ALL) + (("legacy_agent_clean", SCENARIOS[0], 2.2),)
WORKFLOW_PREFIX = "luckrate-"
AGENT_NODE = "AI Agent"


# ---------------------------------------------------------------- the scripted chat model


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def next_turn(messages: list[dict]) -> tuple[Scenario, int]:
    """The scenario (by the user's message) and the turn to play (assistant tool turns so far)."""
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    scenario = next((s for s in ALL if any(s.user in u for u in users)), None)
    if scenario is None:
        raise LookupError(f"no scenario for user messages {users!r}")
    done = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    return scenario, done


def completion(messages: list[dict], model: str) -> dict:
    scenario, turn = next_turn(messages)
    if turn < len(scenario.turns):
        calls = [
            {
                "id": f"call_{scenario.name}_{turn}_{j}",
                "type": "function",
                "function": {"name": c.tool, "arguments": json.dumps(c.args)},
            }
            for j, c in enumerate(scenario.turns[turn])
        ]
        message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": scenario.answer}, "stop"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def stream_chunks(resp: dict) -> list[dict]:
    """The same answer as chat.completion.chunk events (when n8n asks for ``stream: true``)."""
    message, finish = resp["choices"][0]["message"], resp["choices"][0]["finish_reason"]
    base = {k: resp[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    delta: dict = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
    return [
        base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": resp["usage"]},
    ]


class StubHandler(BaseHTTPRequestHandler):
    requests_seen: list[dict] = []

    def log_message(self, *args):  # keep the capture output readable
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]}).encode())
        else:
            self._send(404, b"{}")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(
                404, json.dumps({"error": {"message": f"stub serves chat/completions only, not {self.path}"}}).encode()
            )
            return
        StubHandler.requests_seen.append(body)
        try:
            resp = completion(body.get("messages", []), body.get("model", "stub"))
        except LookupError as e:
            self._send(400, json.dumps({"error": {"message": str(e)}}).encode())
            return
        if body.get("stream"):
            events = "".join(f"data: {json.dumps(c)}\n\n" for c in stream_chunks(resp)) + "data: [DONE]\n\n"
            self._send(200, events.encode(), "text/event-stream")
        else:
            self._send(200, json.dumps(resp).encode())


# ---------------------------------------------------------------- n8n over HTTP


class N8n:
    def __init__(self, base: str):
        self.base = base
        self.cookie: str | None = None
        self.api_key: str | None = None

    def call(self, method: str, path: str, body=None, *, api: bool = False):
        req = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode()
        )
        req.add_header("content-type", "application/json")
        if api:
            req.add_header("X-N8N-API-KEY", self.api_key)
        elif self.cookie:
            req.add_header("cookie", self.cookie)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                if r.headers.get("set-cookie"):
                    self.cookie = r.headers["set-cookie"].split(";", 1)[0]
                raw = r.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path} -> {e.code}: {e.read()[:500]!r}") from None
        return json.loads(raw) if raw.strip() else None

    def wait_ready(self, proc: subprocess.Popen, limit: float = 180.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"n8n exited with {proc.returncode}; see the log")
            try:
                with urllib.request.urlopen(self.base + "/healthz/readiness", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(1)
        raise RuntimeError("n8n did not become ready")

    def setup(self) -> None:
        self.call(
            "POST",
            "/rest/owner/setup",
            {"email": "owner@example.com", "firstName": "Cap", "lastName": "Ture", "password": "Capture-pass-1234"},
        )
        scopes = [
            "workflow:create",
            "workflow:read",
            "workflow:update",
            "workflow:activate",
            "execution:read",
            "execution:list",
            "credential:create",
        ]
        key = self.call("POST", "/rest/api-keys", {"label": "capture", "expiresAt": None, "scopes": scopes})
        self.api_key = key["data"]["rawApiKey"]


# ---------------------------------------------------------------- workflows


def tool_code(scenario: Scenario, tool: str) -> str:
    """JavaScript for the Code Tool: the scenario's scripted outcome for this tool."""
    outcomes = {(c.result, c.error) for turn in scenario.turns for c in turn if c.tool == tool}
    if len(outcomes) > 1:
        raise ValueError(f"{scenario.name}: {tool} must have one scripted outcome, has {outcomes}")
    result, error = outcomes.pop() if outcomes else (f"{tool} is not used in this scenario", None)
    if error is not None:
        return f"throw new Error({json.dumps(error)});"
    return f"return {json.dumps(result)};"


def workflow(name: str, scenario: Scenario, credential_id: str, agent_version: float) -> tuple[dict, str]:
    hook = str(uuid.uuid4())
    nodes = [
        {
            "id": str(uuid.uuid4()),
            "name": "When chat message received",
            "webhookId": hook,
            "type": "@n8n/n8n-nodes-langchain.chatTrigger",
            "typeVersion": 1.4,
            "position": [0, 0],
            "parameters": {"public": True, "mode": "hostedChat", "options": {"responseMode": "lastNode"}},
        },
        {
            "id": str(uuid.uuid4()),
            "name": AGENT_NODE,
            "type": "@n8n/n8n-nodes-langchain.agent",
            "typeVersion": agent_version,
            "position": [300, 0],
            "parameters": {"options": {"systemMessage": "You are a support agent.", "maxIterations": 12}},
        },
        {
            "id": str(uuid.uuid4()),
            "name": "OpenAI Chat Model",
            "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi",
            "typeVersion": 1.3,
            "position": [200, 300],
            "parameters": {
                "model": {"__rl": True, "value": "gpt-4o-mini", "mode": "list"},
                "responsesApiEnabled": False,
                "options": {"maxRetries": 0},
            },
            "credentials": {"openAiApi": {"id": credential_id, "name": "stub"}},
        },
    ]
    connections: dict = {
        "When chat message received": {"main": [[{"node": AGENT_NODE, "type": "main", "index": 0}]]},
        "OpenAI Chat Model": {"ai_languageModel": [[{"node": AGENT_NODE, "type": "ai_languageModel", "index": 0}]]},
    }
    for i, tool in enumerate(TOOLS):
        nodes.append(
            {
                "id": str(uuid.uuid4()),
                "name": tool,
                "type": "@n8n/n8n-nodes-langchain.toolCode",
                "typeVersion": 1.3,
                "position": [400 + 120 * i, 300],
                "parameters": {
                    "description": f"The {tool.replace('_', ' ')} tool.",
                    "language": "javaScript",
                    "jsCode": tool_code(scenario, tool),
                    "specifyInputSchema": True,
                    "schemaType": "manual",
                    "inputSchema": json.dumps(schema_for(tool)),
                },
            }
        )
        connections[tool] = {"ai_tool": [[{"node": AGENT_NODE, "type": "ai_tool", "index": 0}]]}
    return {
        "name": WORKFLOW_PREFIX + name,
        "nodes": nodes,
        "connections": connections,
        "settings": {"executionOrder": "v1"},
    }, hook


def schema_for(tool: str) -> dict:
    """JSON schema of each tool's arguments: the union of the keys any scenario passes it."""
    props: dict = {}
    for s in ALL:
        for turn in s.turns:
            for c in turn:
                if c.tool == tool:
                    for k, v in c.args.items():
                        props[k] = {"type": "number" if isinstance(v, (int, float)) else "string"}
    return {"type": "object", "properties": props or {"input": {"type": "string"}}}


# ---------------------------------------------------------------- the run


def start_n8n(n8n_bin: str, node_dir: str, home: str, port: int, log) -> subprocess.Popen:
    env = dict(os.environ)
    env["PATH"] = node_dir + os.pathsep + env.get("PATH", "")
    env.update(
        {
            "N8N_USER_FOLDER": home,
            "N8N_PORT": str(port),
            "N8N_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_HOST": "127.0.0.1",
            "N8N_PROTOCOL": "http",
            "N8N_SECURE_COOKIE": "false",
            "WEBHOOK_URL": f"http://127.0.0.1:{port}/",
            "DB_TYPE": "sqlite",
            # Offline: nothing phones home (diagnostics, version checks, templates, license renewal, banners).
            "N8N_DIAGNOSTICS_ENABLED": "false",
            "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
            "N8N_TEMPLATES_ENABLED": "false",
            "N8N_LICENSE_AUTO_RENEW_ENABLED": "false",
            "N8N_DYNAMIC_BANNERS_ENABLED": "false",
            "N8N_COMMUNITY_PACKAGES_ENABLED": "false",
            "N8N_PERSONALIZATION_ENABLED": "false",
            "N8N_DISABLED_MODULES": "mcp-registry",
            "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false",
            "EXECUTIONS_DATA_SAVE_ON_SUCCESS": "all",
        }
    )
    return subprocess.Popen([n8n_bin, "start"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_execution(n8n: N8n, workflow_id: str, limit: float = 60.0) -> dict:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        listing = n8n.call("GET", f"/api/v1/executions?workflowId={workflow_id}", api=True)
        done = [e for e in listing["data"] if e.get("stoppedAt")]
        if done:
            return n8n.call("GET", f"/api/v1/executions/{done[0]['id']}?includeData=true", api=True)
        time.sleep(0.5)
    raise RuntimeError(f"no finished execution for workflow {workflow_id}")


def send_chat(n8n: N8n, hook: str, scenario: Scenario, limit: float = 60.0):
    """POST the user's message to the chat webhook; activation registers it asynchronously, so a 404
    right after activating means "not yet"."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return n8n.call(
                "POST",
                f"/webhook/{hook}/chat",
                {"action": "sendMessage", "sessionId": f"session-{scenario.name}", "chatInput": scenario.user},
            )
        except RuntimeError as e:
            if "-> 404" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(1)


def stored_form(db: Path, execution_id: str) -> dict:
    """The execution as n8n stores it: the entity row plus execution_data (``data`` is flatted)."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        entity = dict(con.execute("SELECT * FROM execution_entity WHERE id = ?", (execution_id,)).fetchone())
        data = dict(con.execute("SELECT * FROM execution_data WHERE executionId = ?", (execution_id,)).fetchone())
    finally:
        con.close()
    entity["id"] = str(entity["id"])
    entity["data"] = data["data"]
    entity["workflowData"] = data["workflowData"]  # JSON text, as stored
    return entity


def capture(args) -> None:
    out = Path(args.out)
    (out / "stored").mkdir(parents=True, exist_ok=True)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), StubHandler)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    stub_url = f"http://127.0.0.1:{stub.server_address[1]}/v1"
    home = tempfile.mkdtemp(prefix="n8n-capture-")
    log = open(Path(home) / "n8n.log", "w")
    proc = start_n8n(args.n8n, args.node_dir, home, args.port, log)
    n8n = N8n(f"http://127.0.0.1:{args.port}")
    manifest = {}
    try:
        n8n.wait_ready(proc)
        n8n.setup()
        cred = n8n.call(
            "POST",
            "/api/v1/credentials",
            {"name": "stub", "type": "openAiApi", "data": {"apiKey": "sk-stub", "url": stub_url, "header": False}},
            api=True,
        )
        for name, scenario, agent_version in CAPTURES:
            body, hook = workflow(name, scenario, cred["id"], agent_version)
            wf = n8n.call("POST", "/api/v1/workflows", body, api=True)
            n8n.call("POST", f"/api/v1/workflows/{wf['id']}/activate", {}, api=True)
            answer = send_chat(n8n, hook, scenario)
            execution = wait_execution(n8n, wf["id"])
            print(f"{name}: execution {execution['id']} {execution.get('status')} answer={answer}")
            (out / f"{name}.json").write_text(json.dumps(execution, indent=1, sort_keys=True) + "\n")
            manifest[f"{name}.json"] = asdict(scenario) | {
                "expected": sorted(scenario.expected),
                "agent_version": agent_version,
            }
        db = Path(home) / ".n8n" / "database.sqlite"
        for name, _, _ in CAPTURES:
            execution = json.loads((out / f"{name}.json").read_text())
            stored = stored_form(db, execution["id"])
            (out / "stored" / f"{name}.json").write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        manifest_meta = {
            "n8n": n8n.call("GET", "/rest/settings").get("data", {}).get("versionCli"),
            "model_requests": len(StubHandler.requests_seen),
            "streamed": sum(1 for r in StubHandler.requests_seen if r.get("stream")),
        }
        (out / "manifest.json").write_text(
            json.dumps({"capture": manifest_meta, "files": manifest}, indent=1, sort_keys=True) + "\n"
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        stub.shutdown()
        log.close()
        if args.keep:
            print(f"kept n8n home: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n8n", required=True, help="the n8n executable (node_modules/.bin/n8n)")
    p.add_argument("--node-dir", required=True, help="folder holding a Node.js >= 24 `node` binary")
    p.add_argument("--port", type=int, default=5688)
    p.add_argument("--out", default=str(HERE))
    p.add_argument("--keep", action="store_true", help="keep n8n's temporary home (database, log)")
    capture(p.parse_args())


if __name__ == "__main__":
    main()

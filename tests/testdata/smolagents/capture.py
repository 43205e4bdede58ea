"""Capture smolagents spans under openinference-instrumentation-smolagents from real ``ToolCallingAgent``
runs on a scripted model (no network). See README.md here.

The model is smolagents' own ``OpenAIModel`` talking to an OpenAI-compatible stub server on 127.0.0.1
(``ScriptedServer``): the instrumentation only wraps the ``generate`` of the model classes smolagents
exports, so a custom ``Model`` subclass would record no LLM spans at all.

Each output file is one serialized ExportTraceServiceRequest.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from openinference.instrumentation import TraceConfig  # noqa: E402
from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from smolagents import Tool, ToolCallingAgent  # noqa: E402
from smolagents.models import OpenAIModel  # noqa: E402

from tests.scenarios import BY_NAME, SCENARIOS, Call, Scenario  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT, TRIAGE = "support_agent", "triage_agent"
PARAMS = {
    "lookup_order": {"order_id": "string"}, "issue_refund": {"order_id": "string", "amount": "number"},
    "fetch_webpage": {"url": "string"}, "send_email": {"to": "string", "body": "string"},
    "delete_account": {"user_id": "string"}, "escalate_to_human": {"reason": "string"},
}


class ScriptedServer(ThreadingHTTPServer):
    """OpenAI chat-completions on loopback: each POST answers with the next scripted completion (the
    turn's tool calls, ids ``<prefix>_<turn>_<n>``, then smolagents' own ``final_answer`` call, which is
    how a ToolCallingAgent answers). ``script(key, turns, answer)`` loads a model's turns under the
    model id ``key``."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def script(self, key: str, turns: list[Any], answer: str, prefix: str = "call") -> None:
        turns = list(turns) + [(Call("final_answer", {"answer": answer}),)]
        self.pending[key] = [_completion(key, i, turn, prefix) for i, turn in enumerate(turns)]


def _completion(model: str, i: int, turn: Any, prefix: str) -> dict[str, Any]:
    calls = [{"id": f"{prefix}_{i}_{n}", "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
             for n, c in enumerate(turn)]
    return {"id": f"chatcmpl-{prefix}-{i}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": calls}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply = json.dumps(self.server.pending[body["model"]].pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


SERVER = ScriptedServer()
threading.Thread(target=SERVER.serve_forever, daemon=True).start()


def _model(key: str) -> OpenAIModel:
    return OpenAIModel(model_id=key, api_base=f"http://127.0.0.1:{SERVER.server_address[1]}/v1", api_key="unused")


def _tools(scenario: Scenario) -> list[Tool]:
    pending: dict[str, list[Call]] = {}
    for turn in scenario.turns:
        for call in turn:
            pending.setdefault(call.tool, []).append(call)

    def make(tool_name: str, params: dict[str, str]) -> Tool:
        class ScriptTool(Tool):
            name = tool_name
            description = tool_name.replace("_", " ")
            inputs = {p: {"type": t, "description": p} for p, t in params.items()}
            output_type = "string"

            def forward(self, **kwargs: Any) -> str:
                call = pending[tool_name].pop(0)
                if call.error is not None:
                    raise RuntimeError(call.error)
                return call.result or ""

        # smolagents validates forward's signature against ``inputs``
        ScriptTool.forward.__signature__ = __import__("inspect").Signature(
            [__import__("inspect").Parameter("self", 1)] + [__import__("inspect").Parameter(p, 3) for p in params])
        return ScriptTool()

    return [make(n, p) for n, p in PARAMS.items()]


def _agent(scenario: Scenario, multi_agent: bool) -> ToolCallingAgent:
    SERVER.script("support", scenario.turns, scenario.answer)
    support = ToolCallingAgent(tools=_tools(scenario), model=_model("support"), name=AGENT,
                               description="Handles orders.", max_steps=8)
    if not multi_agent:
        return support
    SERVER.script("triage", [(Call(AGENT, {"task": scenario.user}),)], scenario.answer, prefix="triage")
    return ToolCallingAgent(tools=[], model=_model("triage"), managed_agents=[support], name=TRIAGE, max_steps=4)


def capture(scenario: Scenario, content: bool, multi_agent: bool = False, name: str | None = None) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hide = not content
    config = TraceConfig(hide_inputs=hide, hide_outputs=hide, hide_input_messages=hide, hide_output_messages=hide)
    instrumentor = SmolagentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=config)
    try:
        agent = _agent(scenario, multi_agent)
        with provider.get_tracer("luckrate.capture").start_as_current_span(
                f"eval {scenario.name}", attributes={"luckrate.output_ok": True}):
            agent.run(scenario.user)
    finally:
        instrumentor.uninstrument()
    spans = exporter.get_finished_spans()
    stem = f"{name or scenario.name}{'' if content else '.nocontent'}.smolagents"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


if __name__ == "__main__":
    for s in SCENARIOS:
        for content in (True, False):
            capture(s, content)
    capture(BY_NAME["forbidden"], True, multi_agent=True, name="handoff")

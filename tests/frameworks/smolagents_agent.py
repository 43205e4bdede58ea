"""The shared scenarios replayed through a real smolagents ``ToolCallingAgent`` under
openinference-instrumentation-smolagents.

Real parts: smolagents' agent, tools and its own ``OpenAIModel`` (with the real ``openai`` client), the
OpenInference instrumentor, the OTel SDK's in-memory exporter and OTLP protobuf encoder. The stand-in
is the LLM: ``ScriptedServer``, an OpenAI-compatible chat-completions server on 127.0.0.1 (started and
stopped around each run), answers each request with the scenario's next turn as tool calls (ids
``call_<turn>_<n>``), then with smolagents' ``final_answer`` call. A stub server rather than a custom
``Model``: the instrumentation wraps only the ``generate`` of the model classes smolagents exports, so
a custom model records no LLM spans.

    spans_for(scenario)                    # serialized ExportTraceServiceRequest, content on
    spans_for(scenario, capture=False)     # OpenInference TraceConfig hiding inputs, outputs, messages
    spans_for(scenario, multi_agent=True)  # triage_agent calls support_agent as a managed agent

A scenario whose agent asks a question (``Ask``) answers it with ``final_answer``; the user's reply is a
second ``run(reply, reset=False)`` of the same agent, under the same root span.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openinference.instrumentation import TraceConfig
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from smolagents import Tool, ToolCallingAgent
from smolagents.models import OpenAIModel

from tests.scenarios import Ask, Call, Scenario, ScriptedTools

OUTPUT_OK_KEY = "luckrate.output_ok"
AGENT, TRIAGE = "support_agent", "triage_agent"
PARAMS = {
    "lookup_order": {"order_id": "string"},
    "issue_refund": {"order_id": "string", "amount": "number"},
    "fetch_webpage": {"url": "string"},
    "send_email": {"to": "string", "body": "string"},
    "delete_account": {"user_id": "string"},
    "escalate_to_human": {"reason": "string"},
    "cancel_order": {"order_id": "string"},  # the policy scenarios'
}
_LOCK = threading.Lock()  # the instrumentor patches smolagents process-wide


class ScriptedServer(ThreadingHTTPServer):
    """OpenAI chat completions on loopback: a POST for model id ``key`` gets that model's next
    scripted completion (``script(key, ...)`` loads them)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def script(self, key: str, turns: Any, answer: str, prefix: str = "call") -> None:
        """A question (``Ask``) is answered by ``final_answer`` with its text: the run ends there, and the
        user's reply starts the next run of the same agent."""
        turns = [(Call("final_answer", {"answer": t.text}),) if isinstance(t, Ask) else t for t in turns]
        turns = turns + [(Call("final_answer", {"answer": answer}),)]
        self.pending[key] = [_completion(key, i, turn, prefix) for i, turn in enumerate(turns)]

    def model(self, key: str) -> OpenAIModel:
        return OpenAIModel(model_id=key, api_base=f"http://127.0.0.1:{self.server_address[1]}/v1", api_key="unused")


def _completion(model: str, i: int, turn: Any, prefix: str) -> dict[str, Any]:
    calls = [
        {"id": f"{prefix}_{i}_{n}", "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
        for n, c in enumerate(turn)
    ]
    return {
        "id": f"chatcmpl-{prefix}-{i}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": calls},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        pending = self.server.pending.get(body.get("model"))
        if not pending:
            self.send_error(400, "no scripted completion left")
            return
        reply = json.dumps(pending.pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _tools(scenario: Scenario) -> list[Tool]:
    answer = ScriptedTools(scenario).answer

    def make(tool_name: str, params: dict[str, str]) -> Tool:
        class ScriptTool(Tool):
            name = tool_name
            description = tool_name.replace("_", " ")
            inputs = {p: {"type": t, "description": p} for p, t in params.items()}
            output_type = "string"

            def forward(self, **kwargs: Any) -> str:
                return answer(tool_name)

        # smolagents checks forward's parameters against ``inputs``
        ScriptTool.forward.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in params]
        )
        return ScriptTool()

    return [make(n, p) for n, p in PARAMS.items()]


def _agent(server: ScriptedServer, scenario: Scenario, multi_agent: bool) -> ToolCallingAgent:
    server.script("support", scenario.turns, scenario.answer)
    support = ToolCallingAgent(
        tools=_tools(scenario),
        model=server.model("support"),
        name=AGENT,
        description="Handles orders.",
        max_steps=8,
        verbosity_level=0,
    )
    if not multi_agent:
        return support
    server.script("triage", [(Call(AGENT, {"task": scenario.user}),)], scenario.answer, prefix="triage")
    return ToolCallingAgent(
        tools=[], model=server.model("triage"), managed_agents=[support], name=TRIAGE, max_steps=4, verbosity_level=0
    )


def run(scenario: Scenario, *, capture: bool = True, multi_agent: bool = False) -> list[Any]:
    """Run the scenario; return the finished OTel SDK spans (ReadableSpan)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hide = not capture
    config = TraceConfig(hide_inputs=hide, hide_outputs=hide, hide_input_messages=hide, hide_output_messages=hide)
    with _LOCK, serving() as server:
        instrumentor = SmolagentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider, config=config)
        try:
            agent = _agent(server, scenario, multi_agent)
            tracer = provider.get_tracer("tests.frameworks.smolagents_agent")
            with tracer.start_as_current_span(f"eval {scenario.name}", attributes={OUTPUT_OK_KEY: True}):
                agent.run(scenario.user)
                for turn in scenario.turns:
                    if isinstance(turn, Ask):  # the reply continues the conversation: smolagents' "New task"
                        agent.run(turn.reply, reset=False)
        finally:
            instrumentor.uninstrument()
    return list(exporter.get_finished_spans())


def spans_for(scenario: Scenario, **kwargs: Any) -> bytes:
    """The scenario's spans as a serialized ExportTraceServiceRequest."""
    return encode_spans(run(scenario, **kwargs)).SerializeToString()

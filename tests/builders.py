"""Builders of the test data several test modules share: trajectories from the scenarios, span records,
spans recorded by the real SDK, OTLP/JSON, and the in-process service's config. One of each; a test module
imports them from here, never from another test module (tests/test_test_imports.py checks).
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, set_span_in_context

from luckrate.adapters.otlp import SpanRecord
from luckrate.core.step import Step, Trajectory, numbered
from luckrate.service.config import Endpoint, ServiceConfig
from tests.scenarios import Scenario

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "spec.py"
"""The example spec every service test grades against."""
CHAT_ONLY_CAPTURE = ROOT / "tests" / "testdata" / "openai-v2" / "clean.default.nocontent.openai-v2.otlp"
"""A real capture with nothing to grade: the OpenAI client instrumentation with content capture off records
the chat span only."""

# ---- trajectories, as the adapters hand them to the grader ------------------------------------------------


def trajectory(s: Scenario, agent: str = "support", output_ok: bool | None = True) -> Trajectory:
    """The scenario's tool calls as a trajectory of ``agent``, the way every adapter reads them."""
    steps = [Step(0, c.tool, c.args, c.result, c.error) for turn in s.turns for c in turn]
    return Trajectory(s.name, numbered(steps), None, agent, s.user, output_ok)


# ---- span records, as the OTLP adapter hands them on -------------------------------------------------

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
S = 1_767_225_600_000_000_000
"""A real epoch, in ns: span starts are offsets from it."""


def sid(n: int) -> bytes:
    return n.to_bytes(8, "big")


def span(
    n: int,
    parent: int | None = None,
    name: str = "s",
    start: int = 0,
    end: int | None = None,
    status: int = 0,
    message: str = "",
    events: tuple = (),
    trace: bytes | int = TRACE,
    **attrs: Any,
) -> SpanRecord:
    """Span ``n`` (its id) of ``trace`` under span ``parent`` (none when None or 0), starting ``start`` ns after
    ``S`` and lasting 10 ns unless ``end`` says otherwise. Attribute names with dots are written as keyword
    arguments with double underscores (``gen_ai__tool__name``)."""
    return SpanRecord.build(
        trace_id=trace.to_bytes(16, "big") if isinstance(trace, int) else trace,
        span_id=sid(n),
        parent_id=sid(parent) if parent else b"",
        name=name,
        kind=1,
        start_ns=S + start,
        end_ns=S + (end if end is not None else start + 10),
        status_code=status,
        status_message=message,
        attributes=tuple((k.replace("__", "."), v) for k, v in attrs.items()),
        events=events,
    )


def agent(n: int, parent: int | None, name: str, start: int = 0, end: int = 10_000, **attrs) -> SpanRecord:
    """A GenAI ``invoke_agent`` span."""
    return span(
        n,
        parent,
        f"invoke_agent {name}",
        start,
        end,
        **{"gen_ai__operation__name": "invoke_agent", "gen_ai__agent__name": name, **attrs},
    )


def tool(n: int, parent: int, name: str, start: int, args: Any = None, result: Any = None, **attrs) -> SpanRecord:
    """A GenAI ``execute_tool`` span, with its arguments and result when given."""
    extra = {"gen_ai__operation__name": "execute_tool", "gen_ai__tool__name": name, **attrs}
    if args is not None:
        extra["gen_ai__tool__call__arguments"] = args
    if result is not None:
        extra["gen_ai__tool__call__result"] = result
    return span(n, parent, f"execute_tool {name}", start, **extra)


def chat(
    n: int, parent: int, start: int, end: int, *, inputs: list | None = None, outputs: list | None = None, **attrs
) -> SpanRecord:
    """A GenAI ``chat`` span, its messages as GenAI >= 1.37 attributes when given."""
    extra: dict[str, Any] = {"gen_ai__operation__name": "chat", **attrs}
    if inputs is not None:
        extra["gen_ai__input__messages"] = json.dumps(inputs)
    if outputs is not None:
        extra["gen_ai__output__messages"] = json.dumps(outputs)
    return span(n, parent, "chat m", start, end, **extra)


def call_part(name: str, args: Any, call_id: str | None = None) -> dict[str, Any]:
    """A tool call part of a GenAI message."""
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def assistant(*parts: dict) -> dict[str, Any]:
    """An assistant message of GenAI parts, ending in tool calls."""
    return {"role": "assistant", "finish_reason": "tool_call", "parts": list(parts)}


# ---- spans recorded by the real SDK -------------------------------------------------------------------


class Recorder:
    """A tracer whose spans get increasing timestamps (1 ms apart), so start order is the script's."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("agent-runtime")
        self.now = 1_700_000_000_000_000_000

    def tick(self) -> int:
        self.now += 1_000_000
        return self.now

    def root(self, name: str, links=(), **attributes):
        """A span starting a trace of its own."""
        return self.tracer.start_span(
            name, context=Context(), links=list(links), attributes=attributes, start_time=self.tick()
        )

    def agent(self, name: str, links=(), **attributes):
        return self.root(
            f"invoke_agent {name}",
            links,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attributes},
        )

    def tool(self, parent, name: str, args: dict | None = None):
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=set_span_in_context(parent),
            start_time=self.tick(),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(args or {"order_id": "ORD-1"}),
            },
        )
        span.end(end_time=self.tick())

    def end(self, *spans) -> None:
        for span in spans:
            span.end(end_time=self.tick())

    def file(self) -> bytes:
        return encode_spans(self.exporter.get_finished_spans()).SerializeToString()


def linked_run(rec: Recorder, cycle: bool = False, missing: bool = False) -> None:
    """AutoGen-like: the agent's trace, then a delivery trace linked to it that runs a tool, plus a
    one-span create_agent trace the agent's trace links to; an HTTP request's trace beside them."""
    create = rec.root("create_agent support_agent", **{"gen_ai.operation.name": "create_agent"})
    rec.end(create)
    agent = rec.agent("support_agent", links=[Link(create.get_span_context())])
    rec.tool(agent, "lookup_order")
    rec.end(agent)
    extra = [Link(agent.get_span_context())]
    if missing:
        ghost = rec.root("never exported")  # started, never ended: its trace never arrives
        extra.append(Link(ghost.get_span_context()))
    delivery = rec.root("autogen process support_agent", links=extra)
    rec.tool(delivery, "delete_account", {"user_id": "u1"})
    if cycle:  # the agent's trace links back to the delivery: a cycle of links
        back = rec.tracer.start_span(
            "autogen ack",
            context=set_span_in_context(agent),
            links=[Link(delivery.get_span_context())],
            start_time=rec.tick(),
        )
        rec.end(back)
    rec.end(delivery)
    http = rec.root("GET /health", **{"http.request.method": "GET"})
    rec.end(http)


def conversation(rec: Recorder, conversation_id: str, turns: list[tuple[str, str | None, list[str]]]) -> None:
    """One trace per user turn: (user text, the agent's reply or None, tools called), tied only by
    gen_ai.conversation.id; messages as GenAI ≤1.36 events on the agent span."""
    for user, reply, tools in turns:
        agent = rec.agent("support_agent", **{"gen_ai.conversation.id": conversation_id})
        agent.add_event("gen_ai.user.message", {"content": user}, timestamp=rec.tick())
        for name in tools:
            rec.tool(agent, name, {"id": "R-1"})
        if reply is not None:
            agent.add_event("gen_ai.assistant.message", {"content": reply}, timestamp=rec.tick())
        rec.end(agent)


TURNS = [("cancel R-1", "R-1 is refundable. Cancel it?", ["get"]), ("yes", "Done.", ["cancel"])]
"""A conversation of two turns: the agent asks before it cancels, the user confirms."""

# ---- OTLP/JSON ------------------------------------------------------------------------------------------

_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(request: Message | bytes, *, pretty: bool = False) -> bytes:
    """An OTLP request (traces or logs; bytes: a serialized traces request) as OTLP/JSON, the way SDKs and the
    Collector's file exporter write it: lowerCamelCase keys, integer enums, hex ids (proto3's JSON mapping
    would give base64, which OTLP/JSON forbids) on spans, links and log records. ``pretty``: indented with
    sorted keys, as the captures under tests/testdata are written."""
    if isinstance(request, bytes):
        request = ExportTraceServiceRequest.FromString(request)
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(doc)
    return (json.dumps(doc, indent=1, sort_keys=True) if pretty else json.dumps(doc)).encode()


def _hex_ids(node: Any) -> None:
    """Every id in the document to hex: field names are keys only where the schema has those fields."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _IDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def otlp_json_spans(*spans: dict) -> bytes:
    """An OTLP/JSON traces request of hand-written span objects, in one resource and scope."""
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


# ---- the service's config ---------------------------------------------------------------------------------

LIMIT = 64 * 1024
"""The request size limit of the in-process service ``config()`` builds."""


def config(**over) -> ServiceConfig:
    """The in-process service on loopback port 0, one process, ``over`` replacing any field."""
    # One process: these tests are about what the receivers answer; grading processes (the default on a
    # multi-core machine) are exercised by every test that starts `luckrate serve`, and by test_workers.py.
    loop = Endpoint("127.0.0.1", 0)
    return replace(
        ServiceConfig(
            spec=str(SPEC),
            grpc=loop,
            http=loop,
            prometheus=loop,
            viewer=loop,
            root_grace=0.05,
            max_request_bytes=LIMIT,
            workers=1,
        ),
        **over,
    )

"""Realistic GenAI agent traces, serialized once and re-addressed per request.

One trace is one agent run as the OTel GenAI conventions record it: a root ``invoke_agent`` span, two
``chat`` spans and six ``execute_tool`` spans whose arguments are ~100-byte JSON objects and whose
results are ~400-byte JSON documents. 57 such traces make one request of 513 spans (the issue's
"about 512").

Every request must carry fresh trace ids, or the server would count its spans as late or duplicate.
Serializing 500 spans per request would make the load generator the bottleneck, so the request is
serialized once with trace ids ``MARKER + index``; ``Template.render(n)`` swaps the 8-byte marker for
``n``'s, a single ``bytes.replace`` (~20 µs for 200 KB). The marker is random, and the template checks
that it occurs exactly once per span, so the swap cannot touch anything but trace ids.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

TRACES_PER_REQUEST = 57
SPANS_PER_TRACE = 9
TOOL_SPANS_PER_TRACE = 6
AGENT = "support-agent"
# Tool sequence of one run (a spec-valid refund, plus a web fetch whose text feeds an email: some taint).
TOOLS = ("lookup_order", "fetch_webpage", "lookup_order", "issue_refund", "send_email", "escalate_to_human")
T0 = 1_767_225_600_000_000_000  # 2026-01-01, Unix ns


def _kv(key: str, value) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, list):
        return KeyValue(
            key=key, value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value]))
        )
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _order(i: int) -> str:
    return f"ORD-{(i * 7919) % 1_000_000:06d}"


def _args(tool: str, i: int, step: int) -> str:
    # One run in five mails the address it read on the web page (taint: untrusted -> privileged).
    to = f"returns-{i % 500}@shop.example" if i % 5 == 0 else f"user{i}@example.com"
    args = {
        "lookup_order": {
            "order_id": _order(i),
            "include": ["items", "shipping", "payments"][: 1 + step // 2],
            "reason": "customer says the parcel arrived damaged",
        },
        "fetch_webpage": {
            "url": f"https://help.shop.example/kb/returns-{i % 500}",
            "timeout_s": 10,
            "reason": "read the refund policy",
        },
        "issue_refund": {"order_id": _order(i), "amount": 129.0, "reason": "damaged in transit, photos on file"},
        "send_email": {"to": to, "subject": f"Your refund for {_order(i)}", "body_ref": f"refund-ok-{i % 9}"},
        "escalate_to_human": {"order_id": _order(i), "priority": "normal", "note": "refund issued, wants a call"},
    }[tool]
    return json.dumps(args, separators=(",", ":"))


def _result(tool: str, i: int) -> str:
    body = {
        "order_id": _order(i),
        "status": "delivered",
        "customer": f"user{i}@example.com",
        "carrier": "UPS",
        "tracking": f"1Z999AA1{i:010d}",
        "help": f"https://help.shop.example/kb/returns-{i % 500}",
        "items": [{"sku": f"SKU-{i % 97}", "qty": 2, "price": 64.5}],
        "refund_template": f"refund-ok-{i % 9}",
        "note": "Customer reports the parcel arrived damaged; photos are attached to the ticket.",
    }
    if tool == "fetch_webpage":
        body = {
            "url": f"https://help.shop.example/kb/returns-{i % 500}",
            "status": 200,
            "text": (
                "Returns and refunds. Items damaged in transit qualify for a full refund. Contact "
                f"returns-{i % 500}@shop.example with your order number; refunds post in 5-7 business days. "
                "Keep the original packaging until the carrier has collected the parcel."
            ),
        }
    text = json.dumps(body, separators=(",", ":"))
    return text[:-2] + " " * max(0, 400 - len(text)) + text[-2:]  # valid JSON, padded inside the last string


def _user_message(i: int) -> str:
    text = f"My parcel for order {_order(i)} arrived damaged, please refund it and email user{i}@example.com"
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}], separators=(",", ":"))


def _span(trace_id: bytes, span_id: int, parent: int, name: str, start: int, end: int, attrs: dict) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=struct.pack(">Q", span_id),
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        parent_span_id=struct.pack(">Q", parent) if parent else b"",
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=[_kv(k, v) for k, v in attrs.items()],
        status={"code": 1},
    )


def trace_spans(trace_id: bytes, i: int, *, tools_only: bool = False) -> list[Span]:
    """One run: root agent, two chat calls and six tool calls (``tools_only``: the tool spans alone)."""
    base = T0 + i * 10_000_000_000
    sid = (i + 1) << 8
    root = _span(
        trace_id,
        sid,
        0,
        f"invoke_agent {AGENT}",
        base,
        base + 9_000_000_000,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "gen_ai.provider.name": "openai",
            "gen_ai.conversation.id": f"conv_{i:08d}",
            "gen_ai.input.messages": _user_message(i),
            "luckrate.output_ok": True,
        },
    )
    spans = [root]
    for c in range(2):
        start = base + 100_000_000 + c * 4_000_000_000
        spans.append(
            _span(
                trace_id,
                sid + 1 + c,
                sid,
                "chat gpt-4o-mini",
                start,
                start + 800_000_000,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.id": f"chatcmpl-{i:08d}{c}",
                    "gen_ai.usage.input_tokens": 1200 + 300 * c,
                    "gen_ai.usage.output_tokens": 96,
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                },
            )
        )
    for step, tool in enumerate(TOOLS):
        start = base + 1_000_000_000 + step * 1_200_000_000
        spans.append(
            _span(
                trace_id,
                sid + 3 + step,
                sid,
                f"execute_tool {tool}",
                start,
                start + 300_000_000,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.id": f"call_{i:08d}_{step}",
                    "gen_ai.tool.call.arguments": _args(tool, i, step),
                    "gen_ai.tool.call.result": _result(tool, i),
                },
            )
        )
    return spans[3:] if tools_only else spans


def _resource_attrs() -> list[KeyValue]:
    return [
        _kv("service.name", "support-agent"),
        _kv("telemetry.sdk.language", "python"),
        _kv("telemetry.sdk.name", "opentelemetry"),
        _kv("telemetry.sdk.version", "1.39.1"),
        _kv("host.name", "agent-7f9c"),
    ]


@dataclass(frozen=True)
class Template:
    """One serialized request whose trace ids all start with ``marker``."""

    body: bytes
    marker: bytes
    traces: int
    spans: int

    def render(self, n: int, nonce: int) -> bytes:
        """The request for ``n``: fresh trace ids (``nonce`` keeps concurrent generators apart)."""
        return self.body.replace(self.marker, marker_for(n, nonce))


def marker_for(n: int, nonce: int) -> bytes:
    return struct.pack(">II", nonce & 0xFFFFFFFF, n & 0xFFFFFFFF)


def build(traces: int = TRACES_PER_REQUEST, *, tools_only: bool = False) -> Template:
    marker = b""
    while len(marker) != 8 or 0 in marker:
        marker = os.urandom(8)
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend(_resource_attrs())
    ss = rs.scope_spans.add()
    ss.scope.name = "opentelemetry.instrumentation.openai_agents"
    ss.scope.version = "0.1.0"
    for i in range(traces):
        ss.spans.extend(trace_spans(marker + struct.pack(">Q", i + 1), i, tools_only=tools_only))
    body = req.SerializeToString()
    if body.count(marker) != len(ss.spans):
        raise RuntimeError("trace-id marker is not unique in the serialized request; run again")
    return Template(body, marker, traces, len(ss.spans))

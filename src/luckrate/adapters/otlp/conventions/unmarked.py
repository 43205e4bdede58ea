"""Spans that look like tool calls but carry no convention's marker (no ``gen_ai.operation.name``,
``openinference.span.kind``, ``traceloop.span.kind`` or ``ai.operationId``): an instrumentation
version that dropped or renamed its marker, or a hand-made span. Ignoring them would grade a
trajectory with a step missing, and a missing step can be the one that breaks the spec; so a span
that names a tool in a tool key becomes a step with what can be read, and a span named like a tool
call that names no tool is a tool span naming no tool (the trajectory then fails with InvalidInput).

Asked after every registered convention (conventions.py), so it never overrides one.
"""

from __future__ import annotations

from luckrate.adapters.otlp.roles import ToolRole, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")
TOOL_SPAN_NAMES = ("execute_tool", "running tool", "ai.toolCall")
"""Span names (alone or followed by a space and the tool) that only tool calls carry."""


def classify(rec: SpanRecord) -> ToolRole | None:
    name = next((n for n in map(rec.get, TOOL_NAME_KEYS) if isinstance(n, str) and n), None)
    if name is None and not any(rec.name == p or rec.name.startswith(p + " ") for p in TOOL_SPAN_NAMES):
        return None
    if name is None and rec.name.startswith("execute_tool "):
        name = rec.name[len("execute_tool ") :].strip() or None
    args = _first(rec, "gen_ai.tool.call.arguments", "input.value", "ai.toolCall.args")
    result = _first(rec, "gen_ai.tool.call.result", "output.value", "ai.toolCall.result")
    call_id = _first(rec, "gen_ai.tool.call.id", "tool.id", "tool_call.id", "ai.toolCall.id")
    return tool_role(name, args, result, call_id)


def _first(rec: SpanRecord, *keys: str):
    return next((v for v in map(rec.get, keys) if v is not None), None)

"""The Vercel AI SDK's tool spans as Traceloop's Node SDK rewrites them (its span processor,
``createSpanProcessor`` / ``initialize``): ``ai.toolCall`` becomes ``execute_tool <tool>`` with
``gen_ai.operation.name``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and with content its arguments and
result copied to ``gen_ai.tool.call.arguments`` / ``.result`` and ``traceloop.entity.input`` / ``.output``
(``ai.toolCall.*`` deleted). The result is still the AI SDK's: JSON-encoded, so a string result arrives quoted
(``"\\"sent\\""``); read as GenAI it kept its quotes. ``ai.operationId`` (kept) marks these spans."""

from __future__ import annotations

from luckrate.adapters.otlp.roles import Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.adapters.otlp.conventions.vercel_ai import unquoted

MARKERS = ("ai.operationId",)


def classify(rec: SpanRecord) -> Role | None:
    if rec.get("ai.operationId") != "ai.toolCall" or rec.get("ai.toolCall.name") is not None:
        return None  # not rewritten: vercel_ai.py reads the AI SDK's own keys
    name = rec.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        return None
    args = rec.get("gen_ai.tool.call.arguments")
    result = rec.get("gen_ai.tool.call.result")
    return tool_role(
        name,
        args if args is not None else rec.get("traceloop.entity.input"),
        unquoted(result if result is not None else rec.get("traceloop.entity.output")),
        rec.get("gen_ai.tool.call.id"),
    )

"""OpenInference (Arize): ``openinference.span.kind`` TOOL / AGENT / LLM / CHAIN.

The LangChain instrumentation marks any run whose name contains "agent" as AGENT, tools included;
a span with ``tool.name`` is a tool whatever its kind. ``tool.parameters`` is ambiguous (a schema in
some instrumentations, the arguments in others), so ``input.value`` is preferred."""

from __future__ import annotations

from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get("openinference.span.kind")
    if not isinstance(kind, str):
        return None
    kind = kind.upper()
    if kind == "TOOL" or rec.get("tool.name") is not None:
        args = rec.get("input.value")
        if args is None:
            args = rec.get("tool_call.function.arguments")  # ag2 puts the call on the TOOL span
        call_id = rec.get("tool.id") or rec.get("tool_call.id")
        return tool_role(rec.get("tool.name") or rec.name, args, rec.get("output.value"), call_id)
    if kind == "AGENT":
        name = rec.get("agent.name")
        return AgentRole(name if isinstance(name, str) and name else rec.name)
    if kind == "LLM":
        return ModelRole()
    if kind == "CHAIN":
        return ChainRole(rec.name)
    return None

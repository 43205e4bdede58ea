"""OpenLLMetry / Traceloop: ``traceloop.span.kind`` tool / agent / workflow / task, entity input and
output as JSON envelopes; legacy (≤0.54) LLM spans carry flattened ``gen_ai.prompt.<i>.*``."""

from __future__ import annotations

from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get("traceloop.span.kind")
    kind = kind if isinstance(kind, str) else None
    if kind == "tool":
        args = rec.get("gen_ai.tool.call.arguments")
        result = rec.get("gen_ai.tool.call.result")
        return tool_role(
            rec.get("gen_ai.tool.name") or rec.get("traceloop.entity.name") or rec.name,
            args if args is not None else rec.get("traceloop.entity.input"),
            result if result is not None else rec.get("traceloop.entity.output"),
            rec.get("gen_ai.tool.call.id"),
        )
    if kind == "agent":
        name = rec.get("traceloop.entity.name")
        return AgentRole(name if isinstance(name, str) and name else None)
    if kind in ("workflow", "task"):
        name = rec.get("traceloop.workflow.name") if kind == "workflow" else None
        return ChainRole(name if isinstance(name, str) else None)
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in rec.layout):
        return ModelRole()
    return None

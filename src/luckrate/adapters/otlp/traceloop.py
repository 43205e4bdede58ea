"""OpenLLMetry / Traceloop: ``traceloop.span.kind`` tool / agent / workflow / task, entity input and
output as JSON envelopes; legacy (≤0.54) LLM spans carry flattened ``gen_ai.prompt.<i>.*``.

The MCP instrumentation's client tool span (``<tool>.tool``) wraps the call in its own envelopes:
input ``{"tool_name", "arguments"}``, output ``{"result", "is_error"?}``; it is read as an MCP span
(merged into an enclosing framework tool span of the same call)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from luckrate.adapters.otlp.payloads import load_text
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get("traceloop.span.kind")
    kind = kind if isinstance(kind, str) else None
    if kind == "tool":
        name = rec.get("gen_ai.tool.name") or rec.get("traceloop.entity.name") or rec.name
        args = rec.get("gen_ai.tool.call.arguments")
        result = rec.get("gen_ai.tool.call.result")
        if args is None and result is None:
            mcp = _mcp_call(rec.get("traceloop.entity.input"), rec.get("traceloop.entity.output"))
            if mcp is not None:
                role = tool_role(mcp[0] or name, mcp[1], mcp[2], rec.get("gen_ai.tool.call.id"), mcp=True)
                return replace(role, error=mcp[3]) if mcp[3] is not None else role
        return tool_role(
            name,
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
    if rec.get("llm.request.type") in _MODEL_REQUESTS:  # a legacy LLM span, its content recorded or not
        return ModelRole()
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in rec.layout):
        return ModelRole()
    return None


_MODEL_REQUESTS = frozenset({"chat", "completion"})
"""``llm.request.type`` values of a model call (Traceloop's own key; also ``embedding``, ``rerank``)."""
_MCP_OUTPUT_KEYS = frozenset({"result", "is_error"})


def _mcp_call(raw_input: Any, raw_output: Any) -> tuple[str | None, Any, Any, str | None] | None:
    """(tool, arguments, result, error) of an MCP instrumentation span, None for any other tool span. The
    error is the result text when the output says ``is_error: true`` (a field, never the words)."""
    value = load_text(raw_input) if isinstance(raw_input, str) and '"tool_name"' in raw_input else raw_input
    if not isinstance(value, dict) or set(value) != {"tool_name", "arguments"}:
        return None
    tool = value["tool_name"] if isinstance(value["tool_name"], str) and value["tool_name"] else None
    output = load_text(raw_output) if isinstance(raw_output, str) else raw_output
    if not isinstance(output, dict) or "result" not in output or not set(output) <= _MCP_OUTPUT_KEYS:
        return tool, value["arguments"], raw_output, None
    result = output["result"]
    text = result if isinstance(result, str) else None
    return tool, value["arguments"], result, ((text or "error") if output.get("is_error") is True else None)

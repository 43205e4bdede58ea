"""OpenLLMetry / Traceloop: ``traceloop.span.kind`` tool / agent / workflow / task, entity input and
output as JSON envelopes; legacy (≤0.54) LLM spans carry flattened ``gen_ai.prompt.<i>.*``.

The MCP instrumentation's client tool span (``<tool>.tool``) wraps the call in its own envelopes:
input ``{"tool_name", "arguments"}``, output ``{"result", "is_error"?}``; it is read as an MCP span
(merged into an enclosing framework tool span of the same call).

Traceloop's Node SDK over LangChain.js / LangGraph.js names every tool span after the tool's class
(``execute_tool DynamicStructuredTool``; genai.py reads these spans, taking the name from the ToolMessage
result when there is one). A tool that throws leaves no result, and its chat spans record no tool calls:
the model's calls are only in the chain spans' outputs (``traceloop.entity.output`` = ``{"messages":
[AIMessage...]}``, LangChain's serialization). ``requested_calls`` reads them, so a step still named
after a class takes the name and call id of the requested call it answers (``resolve_class_names``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from luckrate.adapters.otlp.payloads import Requested, args_match, load_text, parse_args
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset(
    {
        "traceloop.span.kind",
        "traceloop.entity.name",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "traceloop.workflow.name",
        "llm.request.type",
    }
)
"""The attribute keys it reads (a tool span's ``gen_ai.tool.*`` keys are GenAI's: genai.py)."""
PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.")
"""Legacy LLM spans' flattened messages (messages.py reads them whole; here, whether a span has any)."""
VOCABULARY = frozenset({"traceloop.span.kind", "traceloop.entity.name", "llm.request.type"})


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


TOOL_CLASSES = frozenset({"DynamicStructuredTool", "DynamicTool", "StructuredTool", "Tool"})
"""LangChain.js's own tool classes (``tool()`` makes a DynamicStructuredTool): a tool span named after one of
these names no tool. An application's class (``class RefundTool extends StructuredTool``) names its tool."""
MAX_REQUESTS = 1000


def requested_calls(rec: SpanRecord) -> list[Requested]:
    """Tool calls of the AIMessages in a chain span's ``traceloop.entity.output`` (LangChain's
    ``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {"tool_calls": [{name, args, id}]}}``)."""
    raw = rec.get("traceloop.entity.output")
    if not isinstance(raw, str) or '"tool_calls"' not in raw or rec.get("traceloop.span.kind") != "workflow":
        return []
    value = load_text(raw)
    messages = value.get("messages") if isinstance(value, dict) else None
    out: list[Requested] = []
    for message in messages[:MAX_REQUESTS] if isinstance(messages, list) else ():
        kwargs = message.get("kwargs") if isinstance(message, dict) and message.get("lc") == 1 else None
        calls = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("id"), str):
                out.append(Requested(call["name"], call.get("args"), call["id"]))
    return out


def resolve_class_names(calls: list, requests: list[tuple[int, Requested]]) -> list:
    """Each call still named after a tool class (``class_name``, in start order) takes the name and call id of
    the first unused request (by call id, once each) asked before it started with the same arguments; a call
    whose arguments were not captured, or that no request matches, keeps its class name."""
    from dataclasses import replace

    used = {c.call_id for c in calls if c.call_id}
    pending: dict[str | None, tuple[int, Requested]] = {}  # a request without a call id is pending under None
    for at, req in sorted(requests, key=lambda r: r[0]):
        if req.call_id not in used:
            pending.setdefault(req.call_id, (at, req))
    out = []
    for call in sorted(calls, key=lambda c: c.key):
        if call.class_name and call.args_captured:
            match = next(
                (
                    cid
                    for cid, (at, req) in pending.items()
                    if at <= call.start_ns and args_match(call.args, call.parsed, parse_args(req.args)[0])
                ),
                None,
            )
            if match is not None:
                call = replace(call, tool=pending.pop(match)[1].name, call_id=call.call_id or match, class_name=False)
        out.append(call)
    return out


def class_names(calls: list) -> tuple[str, ...]:
    """The class names the calls are still named by, each once, but LangChain.js's own classes (they name no
    tool): grading reads each as the spec's tool it names (``Trajectory.tool_classes``)."""
    return tuple(dict.fromkeys(c.tool for c in calls if c.class_name and c.tool not in TOOL_CLASSES))

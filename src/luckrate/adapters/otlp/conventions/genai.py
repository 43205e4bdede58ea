"""OTel GenAI semantic conventions (both generations): ``gen_ai.operation.name`` keys the meaning;
MCP spans (``mcp.method.name = tools/call``; the client's named ``tools/call <tool>`` or, by the MCP
Python SDK, ``MCP send tools/call <tool>``) are tool calls too.

Traceloop's Node SDK over LangChain.js writes GenAI operation names but keeps a tool's content in its
own keys: ``traceloop.entity.input`` = ``{"args": [<the tool's input>]}``, ``traceloop.entity.output``
= the ToolMessage it returns. It names every tool span after the tool's class (``execute_tool
DynamicStructuredTool``, ``execute_tool RefundTool``); the ToolMessage names the tool the model called, so its
``name`` wins over a span name (never over ``gen_ai.tool.name``). A name read from such a span is marked as a
class name (``ToolRole.class_name``)."""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.payloads import load_text, tool_message_name
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, suffix, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.tool.call.id",
        "gen_ai.agent.name",
        "gen_ai.workflow.name",
        "mcp.method.name",
        "error.type",  # the conventions' error class, read on any span (assemble.py)
    }
)
"""The attribute keys it reads (the message lists are the standard readers': messages.py; Traceloop's entity
keys, read here on Traceloop Node's tool spans, traceloop.py's)."""
VOCABULARY = frozenset({"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.agent.name", "mcp.method.name"})
TOOL_DEFINITIONS = {
    "name": "gen_ai.tool.name",
    "description": "gen_ai.tool.description",
    "list": "gen_ai.tool.definitions",
}
"""Where tool definitions are (``luckrate suggest`` reads them, definitions.py): a tool span's name and
description, a model span's JSON list of definitions. Read from the decoded requests, not the compacted
records (which keep only ``KEYS``)."""


def classify(rec: SpanRecord) -> Role | None:
    op = rec.get("gen_ai.operation.name")
    op = op if isinstance(op, str) else None
    if rec.get("mcp.method.name") == "tools/call" or (op is None and rec.name.startswith("tools/call ")):
        return _tool(rec, "tools/call", mcp=True)
    if op == "execute_tool":
        return _tool(rec, "execute_tool")
    if op == "invoke_agent":
        name = rec.get("gen_ai.agent.name")
        return AgentRole(name if isinstance(name, str) and name else suffix(rec.name, "invoke_agent"))
    if op in MODEL_OPERATIONS:
        return ModelRole()
    if op == "invoke_workflow":
        name = rec.get("gen_ai.workflow.name")
        return ChainRole(name if isinstance(name, str) else suffix(rec.name, "invoke_workflow"))
    return None


def _tool(rec: SpanRecord, prefix: str, mcp: bool = False):
    args, result = rec.get("gen_ai.tool.call.arguments"), rec.get("gen_ai.tool.call.result")
    if args is None and result is None and rec.get("traceloop.span.kind") is not None:
        args, result = _entity_args(rec.get("traceloop.entity.input")), rec.get("traceloop.entity.output")
    name = rec.get("gen_ai.tool.name") or tool_message_name(result)
    if name:
        return tool_role(name, args, result, rec.get("gen_ai.tool.call.id"), mcp)
    name = suffix(rec.name, prefix)
    # Traceloop Node's LangChain.js tool span (a "task") is named after the tool's class, whatever its name.
    by_class = name is not None and rec.get("traceloop.span.kind") == "task"
    name = name or (_mcp_target(rec.name) if mcp else None)
    return tool_role(name, args, result, rec.get("gen_ai.tool.call.id"), mcp, class_name=by_class)


def _entity_args(raw: Any) -> Any:
    """The tool's input inside Traceloop Node's ``{"args": [<input>]}``; any other value as it is."""
    value = load_text(raw) if isinstance(raw, str) and raw.startswith('{"args"') else None
    if (
        isinstance(value, dict)
        and set(value) == {"args"}
        and isinstance(value["args"], list)
        and len(value["args"]) == 1
    ):
        return value["args"][0]
    return raw


def _mcp_target(span_name: str) -> str | None:
    """The tool in an MCP client span's name: the MCP Python SDK names it ``MCP send tools/call <tool>``
    and records no ``gen_ai.tool.name`` (its server span does)."""
    at = span_name.find(" tools/call ")
    return suffix(span_name[at + 1 :], "tools/call") if at >= 0 else None

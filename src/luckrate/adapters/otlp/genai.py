"""OTel GenAI semantic conventions (both generations): ``gen_ai.operation.name`` keys the meaning;
MCP spans (``mcp.method.name = tools/call``; the client's named ``tools/call <tool>`` or, by the MCP
Python SDK, ``MCP send tools/call <tool>``) are tool calls too."""

from __future__ import annotations

from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, suffix, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


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
    name = rec.get("gen_ai.tool.name") or suffix(rec.name, prefix) or (_mcp_target(rec.name) if mcp else None)
    return tool_role(
        name, rec.get("gen_ai.tool.call.arguments"), rec.get("gen_ai.tool.call.result"),
        rec.get("gen_ai.tool.call.id"), mcp,
    )


def _mcp_target(span_name: str) -> str | None:
    """The tool in an MCP client span's name: the MCP Python SDK names it ``MCP send tools/call <tool>``
    and records no ``gen_ai.tool.name`` (its server span does)."""
    at = span_name.find(" tools/call ")
    return suffix(span_name[at + 1:], "tools/call") if at >= 0 else None

"""What a span means to the adapter, whatever convention it follows: a tool call, an agent, a model
call, a chain, or nothing of interest. Each convention reads its own keys into these roles; the
registry in conventions.py lists them and asks them in turn. This module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from luckrate.adapters.otlp.payloads import captured, tool_message_call_id
from luckrate.core.frozen import fast_init


@fast_init
@dataclass(frozen=True)
class ToolRole:
    name: str | None
    """The tool's name; None when the span names none (an error for the trajectory)."""
    args: Any = None
    """Raw arguments as recorded; None when not captured."""
    result: Any = None
    """Raw result as recorded; None when not captured."""
    call_id: str | None = None
    mcp: bool = False
    """An MCP client ``tools/call`` span (merged into an enclosing framework tool span)."""
    error: str | None = None
    """A failure the span reports in its content rather than its status (e.g. LlamaIndex ``is_error``)."""
    answer: bool = False
    """The framework's answer channel (smolagents' ``final_answer``): the run's output, not a step."""
    class_name: bool = False
    """``name`` is the class implementing the tool, not the tool's name (Traceloop's LangChain.js tool spans)."""


@fast_init
@dataclass(frozen=True)
class AgentRole:
    name: str | None


@dataclass(frozen=True)
class ModelRole:
    pass


@fast_init
@dataclass(frozen=True)
class ChainRole:
    name: str | None = None


Role = Union[ToolRole, AgentRole, ModelRole, ChainRole]


def tool_role(name: Any, args: Any, result: Any, call_id: Any, mcp: bool = False, class_name: bool = False) -> ToolRole:
    """A ToolRole with absent/redacted content as None and the call id trimmed (or found in a ToolMessage)."""
    args = args if captured(args) else None
    result = result if captured(result) else None
    cid = call_id.strip() if isinstance(call_id, str) and call_id.strip() else tool_message_call_id(result)
    name = name if isinstance(name, str) and name else None
    return ToolRole(name, args, result, cid, mcp, class_name=class_name and name is not None)


def suffix(span_name: str, prefix: str) -> str | None:
    """``execute_tool lookup_order`` -> ``lookup_order`` (the span name pattern of the conventions)."""
    if span_name.startswith(prefix + " "):
        rest = span_name[len(prefix) + 1 :].strip()
        return rest or None
    return None

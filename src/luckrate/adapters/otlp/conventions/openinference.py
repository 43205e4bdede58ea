"""OpenInference (Arize): ``openinference.span.kind`` TOOL / AGENT / LLM / CHAIN.

The LangChain instrumentation marks any run whose name contains "agent" as AGENT, tools included;
a span with ``tool.name`` is a tool whatever its kind. ``tool.parameters`` is ambiguous (a schema in
some instrumentations, the arguments in others), so ``input.value`` is preferred.

The LangChain.js instrumentation differs: no run is marked AGENT (a compiled LangGraph graph is a
CHAIN whose ``metadata`` says ``ls_integration: langgraph`` and names no ``langgraph_node``: the agent),
and LLM spans flatten no ``tool_calls`` into ``llm.output_messages`` (they are only in ``output.value``,
the serialized generations)."""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.payloads import Requested, load_text
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset(
    {
        "openinference.span.kind",
        "tool.name",
        "tool.id",
        "tool_call.id",
        "tool_call.function.arguments",
        "input.value",
        "output.value",
        "agent.name",
        "graph.node.id",
        "metadata",
    }
)
"""The attribute keys it reads (the flattened message lists are the standard readers': messages.py)."""
VOCABULARY = frozenset({"openinference.span.kind", "tool.name"})
TOOL_DEFINITIONS = {
    "name": "tool.name",
    "description": "tool.description",
    "schema": "tool.parameters",
    "prefix": "llm.tools.",
}
"""A tool span's definition, and a model span's flattened ``llm.tools.N.tool.json_schema`` (definitions.py;
as genai.TOOL_DEFINITIONS)."""
MAX_CALLS = 1000


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
    if kind == "AGENT":  # no agent.name: the graph node it runs as (AutoGen's ``<agent>.on_messages_stream``)
        name = rec.get("agent.name")
        node = rec.get("graph.node.id")
        return AgentRole(
            name if isinstance(name, str) and name else node if isinstance(node, str) and node else rec.name
        )
    if kind == "LLM":
        return ModelRole()
    if kind == "CHAIN":
        return AgentRole(rec.name) if _graph_run(rec) else ChainRole(rec.name)
    return None


def _graph_run(rec: SpanRecord) -> bool:
    """A whole LangGraph graph run (not one of its nodes), as LangChain.js records it."""
    raw = rec.get("metadata")
    if not isinstance(raw, str) or '"langgraph"' not in raw or "langgraph_node" in raw:
        return False
    meta = load_text(raw)
    return isinstance(meta, dict) and meta.get("ls_integration") == "langgraph"


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """An LLM span's requested tool calls from its serialized generations, when the flattened output
    messages carry none (LangChain.js); None otherwise (the standard readers then read the span)."""
    if direction != "output" or rec.get("openinference.span.kind") not in ("LLM", "llm"):
        return None
    raw = rec.get("output.value")
    if not isinstance(raw, str) or '"tool_calls"' not in raw:
        return None
    if any(k.startswith("llm.output_messages.") and ".tool_calls." in k for k in rec.layout):
        return None
    value = load_text(raw)
    generations = value.get("generations") if isinstance(value, dict) else None
    found = [m for group in _listed(generations) for g in _listed(group) if (m := _generation(g)) is not None]
    return found or None


def _generation(g: Any) -> Message | None:
    message = g.get("message") if isinstance(g, dict) else None
    fields = message.get("kwargs", message.get("data")) if isinstance(message, dict) else None
    if not isinstance(fields, dict):
        return None
    calls = tuple(
        Requested(c["name"], c.get("args"), c["id"] if isinstance(c.get("id"), str) else None)
        for c in _listed(fields.get("tool_calls"))[:MAX_CALLS]
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    )
    content = fields.get("content")
    return Message("assistant", (content,) if isinstance(content, str) and content else (), calls)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

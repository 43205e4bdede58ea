"""Haystack's own tracer (``haystack.tracing``, sent to OpenTelemetry by its ``OpenTelemetryTracer``).

- Span names carry the roles; attributes are Haystack's tags: ``haystack.agent.run`` (an Agent's run,
  no agent name), ``haystack.agent.step`` (one model call and the tools it asked for),
  ``haystack.agent.step.llm`` (the model call), ``haystack.agent.step.tool`` (``haystack.tool.name``,
  ``haystack.agent.step.tool.input`` / ``.output``). Pipeline components are ``haystack.component.run``
  spans with ``haystack.component.name`` / ``.type``: an ``Agent`` component names the agent it runs, a
  ``*ChatGenerator`` component is a model call.
- Content tags (inputs, outputs) are recorded only with ``HAYSTACK_CONTENT_TRACING_ENABLED=true``; with
  it off a model span has no attributes at all, so spans are recognised by name, not by a key.
- A failing tool keeps status UNSET: the only sign is ``haystack.tool.error = true`` (kept with content
  off too), its output then ``{"error": "<message>"}``.
- No span carries a call id: the model's tool calls do (``haystack.agent.step.llm.output``).
- Messages are Haystack ``ChatMessage`` dicts ``{role, content: [{text} | {tool_call: {tool_name,
  arguments, id}} | {tool_call_result: {result, origin: {id...}, error}}]}`` as JSON, except the model
  span's input: the tools beside the messages cannot be serialised, so Haystack records ``str()`` of the
  whole input, a Python repr of ``ChatMessage(...)`` objects. That repr is parsed, never evaluated.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from luckrate.adapters.otlp.messages import MAX_MESSAGES, Message
from luckrate.adapters.otlp.payloads import MAX_LITERAL, Requested, load_text
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, ToolRole, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset(
    {
        "haystack.tool.name",
        "haystack.tool.error",
        "haystack.agent.step.tool.input",
        "haystack.agent.step.tool.output",
        "haystack.agent.input",
        "haystack.agent.output",
        "haystack.agent.step.llm.input",
        "haystack.agent.step.llm.output",
        "haystack.component.name",
        "haystack.component.type",
        "haystack.component.input",
        "haystack.component.output",
    }
)
PREFIX = "haystack."
_AGENT, _LLM, _TOOL, _COMPONENT = (
    "haystack.agent.run",
    "haystack.agent.step.llm",
    "haystack.agent.step.tool",
    "haystack.component.run",
)


def classify(rec: SpanRecord) -> Role | None:
    name = rec.name
    if not name.startswith(PREFIX):
        return None
    if name == _TOOL:
        role = tool_role(
            rec.get("haystack.tool.name"),
            rec.get("haystack.agent.step.tool.input"),
            rec.get("haystack.agent.step.tool.output"),
            None,
        )
        return ToolRole(role.name, role.args, role.result, error=_error(role.result)) if _failed(rec) else role
    if name == _AGENT:
        return AgentRole(None)
    if name == _LLM:
        return ModelRole()
    if name == _COMPONENT:
        kind = rec.get("haystack.component.type")
        component = rec.get("haystack.component.name")
        if kind == "Agent":
            return AgentRole(component if isinstance(component, str) and component else None)
        if isinstance(kind, str) and kind.endswith("ChatGenerator"):
            return ModelRole()
        return ChainRole(component if isinstance(component, str) else None)
    return ChainRole(None)  # haystack.agent.step, haystack.pipeline.run and the rest


def _failed(rec: SpanRecord) -> bool:
    return rec.get("haystack.tool.error") is True


def _error(result: Any) -> str:
    value = load_text(result) if isinstance(result, str) else result
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, str) and error else "error"


_INPUT_KEYS = {
    _AGENT: "haystack.agent.input",
    _LLM: "haystack.agent.step.llm.input",
    _COMPONENT: "haystack.component.input",
}
_OUTPUT_KEYS = {
    _AGENT: "haystack.agent.output",
    _LLM: "haystack.agent.step.llm.output",
    _COMPONENT: "haystack.component.output",
}


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """The agent's, a model call's or a chat generator component's messages; None elsewhere."""
    key = (_INPUT_KEYS if direction == "input" else _OUTPUT_KEYS).get(rec.name)
    if key is None:
        return None
    if rec.name == _COMPONENT and not str(rec.get("haystack.component.type") or "").endswith("ChatGenerator"):
        return None
    raw = rec.get(key)
    if not isinstance(raw, str) or not raw:
        return None
    value = load_text(raw) if raw.lstrip().startswith('{"') else _from_repr(raw)
    if not isinstance(value, dict):
        return None
    listed = value.get("messages") if direction == "input" or rec.name == _AGENT else value.get("replies")
    if not isinstance(listed, list):
        return None
    return [m for m in map(_message, listed[:MAX_MESSAGES]) if m is not None]


def _message(obj: Any) -> Message | None:
    if not isinstance(obj, dict):
        return None
    role = obj.get("role", obj.get("_role"))
    content = obj.get("content", obj.get("_content"))
    if not isinstance(role, str) or not isinstance(content, list):
        return None
    texts, calls, responses, failed = [], [], [], []
    for part in content:
        if not isinstance(part, dict):
            continue
        call = part.get("tool_call") if "tool_call" in part else part if part.get("__type") == "ToolCall" else None
        result = (
            part.get("tool_call_result")
            if "tool_call_result" in part
            else part
            if part.get("__type") == "ToolCallResult"
            else None
        )
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(call, dict) and isinstance(call.get("tool_name"), str):
            calls.append(Requested(call["tool_name"], call.get("arguments"), _id(call.get("id"))))
        elif isinstance(result, dict):
            origin = result.get("origin")
            call_id = _id(origin.get("id")) if isinstance(origin, dict) else None
            responses.append((call_id, result.get("result")))
            if result.get("error") is True and call_id:
                failed.append(call_id)
    return Message(role, tuple(texts), tuple(calls), tuple(responses), frozenset(failed))


def _id(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


_ENUM = re.compile(r"<[A-Za-z_][\w.]*: ('[^'\\]*')>")
"""An enum's repr, ``<ChatRole.USER: 'user'>``: its value stands in for it."""
_TOOLS = "], 'tools': ["


def _from_repr(text: str) -> Any:
    """The ``str()`` of a model call's input, ``{'messages': [ChatMessage(...), ...], 'tools': [...]}``,
    as plain values: each ``Name(key=value, ...)`` a dict with ``__type``. The tools are cut off first (a
    function's repr is no expression). Parsed with ``ast.parse``, never evaluated; None when it does not parse."""
    cut = text.find(_TOOLS)
    if cut >= 0:
        text = text[: cut + 1] + "}"
    if len(text) > MAX_LITERAL * 4:
        return None
    try:
        tree = ast.parse(_ENUM.sub(r"\1", text), mode="eval")
        return _plain(tree.body)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):  # a list as a key, -"x"
        return None


def _plain(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value: Any = node.operand.value  # any constant: negating one that is no number raises, as it did
        return -value
    if isinstance(node, ast.List | ast.Tuple):
        return [_plain(n) for n in node.elts]
    if isinstance(node, ast.Dict):
        return {_plain(k) if k is not None else None: _plain(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        out = {"__type": node.func.id}
        out.update((kw.arg, _plain(kw.value)) for kw in node.keywords if kw.arg)
        return out
    raise ValueError("not a plain value")

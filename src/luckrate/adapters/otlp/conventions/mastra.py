"""Mastra's spans through its OpenTelemetry exporter (``@mastra/otel-exporter``): GenAI operation names
beside ``mastra.span.type``, content in Mastra's own keys.

- ``agent_run`` (``invoke_agent <agent>``): the run's input as ``mastra.agent_run.input`` (the text, or a
  message list) and its answer as ``mastra.agent_run.output`` (``{"text": ...}``); no
  ``gen_ai.input.messages`` anywhere, so the user's words were never read.
- ``model_step`` (``agent_step <agent>``): one model call of the loop, its output ``mastra.model_step.output``
  = ``{"text", "toolCalls": [{toolCallId, toolName, args}]}``: the model's requested calls. Its input
  abbreviates earlier turns to placeholders (``"[tool: lookup_order]"``), which are no messages: not read.
- ``model_inference`` (``chat <model>``), ``model_generation`` and ``model_chunk`` spans repeat parts of
  the step's content (the chat span's output messages keep only text, empty beside tool calls): read as
  chains, so each model call counts once.
- ``tool_call`` spans are plain GenAI ``execute_tool`` spans with call ids (genai.py reads them).
"""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.messages import MAX_MESSAGES, Message
from luckrate.adapters.otlp.payloads import Requested, captured, load_text
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role
from luckrate.adapters.otlp.spans import SpanRecord

TYPE = "mastra.span.type"
KEYS = frozenset({TYPE, "mastra.agent_run.input", "mastra.agent_run.output", "mastra.model_step.output"})
_CHAINS = frozenset({"model_inference", "model_generation", "model_chunk"})


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get(TYPE)
    if kind == "model_step":
        return ModelRole()
    if kind == "agent_run":
        name = rec.get("gen_ai.agent.name")
        return AgentRole(name if isinstance(name, str) and name else None)
    if kind in _CHAINS:
        return ChainRole(None)
    return None


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    kind = rec.get(TYPE)
    if kind == "agent_run":
        raw = rec.get("mastra.agent_run.input" if direction == "input" else "mastra.agent_run.output")
        return _run_input(raw) if direction == "input" else _step_output(raw)
    if kind == "model_step" and direction == "output":
        return _step_output(rec.get("mastra.model_step.output"))
    return None


def _run_input(raw: Any) -> list[Message] | None:
    if not isinstance(raw, str) or not captured(raw) or not raw.strip():
        return None
    value = load_text(raw) if raw.lstrip().startswith(("[", "{")) else raw
    if isinstance(value, str):
        return [Message("user", (value,))]
    listed = value if isinstance(value, list) else [value]
    out = [m for m in map(_message, listed[:MAX_MESSAGES]) if m is not None]
    return out or None


def _message(obj: Any) -> Message | None:
    """An AI SDK message: ``{role, content: text | [{type: "text", text}, ...]}``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
        return None
    content = obj.get("content")
    if isinstance(content, str):
        return Message(obj["role"], (content,))
    texts = (
        tuple(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
        if isinstance(content, list)
        else ()
    )
    return Message(obj["role"], texts)


def _step_output(raw: Any) -> list[Message] | None:
    value = load_text(raw) if isinstance(raw, str) and captured(raw) else None
    if not isinstance(value, dict):
        return None
    text = value.get("text")
    calls = value.get("toolCalls")
    requested = tuple(
        Requested(c["toolName"], c.get("args"), c["toolCallId"] if isinstance(c.get("toolCallId"), str) else None)
        for c in (calls if isinstance(calls, list) else [])[:MAX_MESSAGES]
        if isinstance(c, dict) and isinstance(c.get("toolName"), str)
    )
    texts = (text,) if isinstance(text, str) and text else ()
    return [Message("assistant", texts, requested)] if texts or requested else None

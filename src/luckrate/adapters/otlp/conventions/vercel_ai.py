"""The Vercel AI SDK (npm ``ai``, ``experimental_telemetry``): ``ai.*`` spans keyed by ``ai.operationId``.

- ``ai.toolCall``: ``ai.toolCall.name`` / ``.id`` / ``.args`` (JSON) / ``.result`` (JSON-encoded: a
  string result arrives quoted).
- ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject``: the call the
  user made, an agent named by ``ai.telemetry.functionId``; its input in ``ai.prompt``
  (``{"system", "prompt"}`` or ``{"messages"}``).
- ``ai.<fn>.doGenerate`` / ``.doStream``: one model call; input in ``ai.prompt.messages`` (the SDK's
  own message shape: parts ``text``, ``tool-call`` {toolCallId, toolName, input|args}, ``tool-result``
  {toolCallId, output: {type, value}|result}), output in ``ai.response.toolCalls`` and
  ``ai.response.text``.
These spans also carry ``gen_ai.system`` and ``gen_ai.request.*`` but no ``gen_ai.operation.name``.
"""

from __future__ import annotations

import json
from typing import Any

from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.payloads import Requested, load_text
from luckrate.adapters.otlp.roles import AgentRole, ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

MAX_MESSAGES = 1000
KEYS = frozenset(
    {
        "ai.operationId",
        "ai.toolCall.name",
        "ai.toolCall.id",
        "ai.toolCall.args",
        "ai.toolCall.result",
        "ai.telemetry.functionId",
        "ai.prompt",
        "ai.prompt.messages",
        "ai.response.toolCalls",
        "ai.response.text",
    }
)
TOOL_DEFINITIONS = {"list": "ai.prompt.tools"}
"""A model span's list of JSON definitions (definitions.py; as genai.TOOL_DEFINITIONS)."""
_CALLS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_MODEL_CALLS = frozenset(f"{c}.{d}" for c in _CALLS for d in ("doGenerate", "doStream"))


def classify(rec: SpanRecord) -> Role | None:
    op = rec.get("ai.operationId")
    if not isinstance(op, str):
        return None
    if op == "ai.toolCall":
        return tool_role(
            rec.get("ai.toolCall.name"),
            rec.get("ai.toolCall.args"),
            unquoted(rec.get("ai.toolCall.result")),
            rec.get("ai.toolCall.id"),
        )
    if op in _CALLS:
        name = rec.get("ai.telemetry.functionId")
        return AgentRole(name if isinstance(name, str) and name else None)
    if op in _MODEL_CALLS:
        return ModelRole()
    return None


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    op = rec.get("ai.operationId")
    if not isinstance(op, str):
        return None
    if direction == "output":
        return _response(rec) if op in _MODEL_CALLS else None
    if op in _MODEL_CALLS:
        raw = rec.get("ai.prompt.messages")
        return _messages(load_text(raw) if isinstance(raw, str) else raw)
    if op in _CALLS:
        return _prompt(rec.get("ai.prompt"))
    return None


def unquoted(raw: Any) -> Any:
    """``"\\"sent\\""`` -> ``sent``: the SDK JSON-encodes every result, strings included."""
    if isinstance(raw, str) and raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return value if isinstance(value, str) else raw
    return raw


def _prompt(raw: Any) -> list[Message] | None:
    value = load_text(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("messages"), list):
        return _messages(value["messages"])
    prompt = value.get("prompt")
    if isinstance(prompt, str):
        return [Message("user", texts=(prompt,))]
    return _messages(prompt)


def _messages(value: Any) -> list[Message] | None:
    if not isinstance(value, list):
        return None
    return [m for m in map(_message, value[:MAX_MESSAGES]) if m is not None]


def _message(obj: Any) -> Message | None:
    if not isinstance(obj, dict):
        return None
    role = str(obj.get("role") or "")
    content = obj.get("content")
    if isinstance(content, str):
        return Message(role, texts=(content,))
    texts, calls, responses = [], [], []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "tool-call" and isinstance(part.get("toolName"), str):
            args = part["input"] if "input" in part else part.get("args")
            calls.append(Requested(part["toolName"], args, _id(part.get("toolCallId"))))
        elif kind == "tool-result":
            responses.append((_id(part.get("toolCallId")), _output(part)))
    return Message(role, tuple(texts), tuple(calls), tuple(responses))


def _output(part: dict[str, Any]) -> Any:
    output = part.get("output")  # AI SDK 5+: {"type": "text" | "json" | "error-text" | ..., "value": ...}
    if isinstance(output, dict) and "value" in output:
        return output["value"]
    return part.get("result")  # AI SDK 4


def _response(rec: SpanRecord) -> list[Message] | None:
    raw = rec.get("ai.response.toolCalls")
    value = load_text(raw) if isinstance(raw, str) else raw
    text = rec.get("ai.response.text")
    if not isinstance(value, list) and not isinstance(text, str):
        return None
    calls = tuple(
        Requested(c["toolName"], c["input"] if "input" in c else c.get("args"), _id(c.get("toolCallId")))
        for c in (value if isinstance(value, list) else ())[:MAX_MESSAGES]
        if isinstance(c, dict) and isinstance(c.get("toolName"), str)
    )
    return [Message("assistant", (text,) if isinstance(text, str) and text else (), calls)]


def _id(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None

"""Strands Agents' native tracing (``gen_ai.system = strands-agents``), where it leaves GenAI.

Spans: ``invoke_agent <agent>`` → ``execute_event_loop_cycle`` → ``chat`` and ``execute_tool <tool>``,
with ``gen_ai.operation.name``, ``gen_ai.agent.name``, ``gen_ai.tool.name`` and ``gen_ai.tool.call.id``.
Content depends on ``OTEL_SEMCONV_STABILITY_OPT_IN``:

- default: only in span events, and in Bedrock's content-block shape: ``gen_ai.user.message`` /
  ``gen_ai.assistant.message`` / ``gen_ai.tool.message`` ``content`` and ``gen_ai.choice`` ``message``
  are JSON lists of ``{"text"}``, ``{"toolUse": {toolUseId, name, input}}`` and ``{"toolResult":
  {toolUseId, status, content}}`` blocks. A tool span's arguments are its ``gen_ai.tool.message``
  event's ``content``, its result its ``gen_ai.choice`` event's ``message``.
- ``gen_ai_latest_experimental``: ``gen_ai.provider.name`` instead of ``gen_ai.system``;
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (on the span or its
  ``gen_ai.client.inference.operation.details`` event) and ``gen_ai.tool.call.arguments`` / ``.result``
  (the result still a content-block list).
- ``gen_ai_unredacted_attributes=<list>`` redacts every other content value to ``[REDACTED]``.
"""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.messages import Message, parts_message
from luckrate.adapters.otlp.payloads import load_text
from luckrate.adapters.otlp.roles import Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"gen_ai.system", "gen_ai.provider.name"})
TOOL_DEFINITIONS = {"schema": "gen_ai.tool.json_schema"}
"""A tool span's parameter schema (definitions.py; as genai.TOOL_DEFINITIONS)."""
SYSTEM = "strands-agents"
REDACTED = "[REDACTED]"
MAX_BLOCKS = 1000
_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _strands(rec: SpanRecord) -> bool:
    # gen_ai.system by default, gen_ai.provider.name under the latest conventions
    return rec.get("gen_ai.system") == SYSTEM or rec.get("gen_ai.provider.name") == SYSTEM


def classify(rec: SpanRecord) -> Role | None:
    if rec.get("gen_ai.operation.name") != "execute_tool" or not _strands(rec):
        return None
    args = rec.get("gen_ai.tool.call.arguments")
    result = rec.get("gen_ai.tool.call.result")
    if args is None:
        args = next((e.get("content") for e in rec.events if e.name == "gen_ai.tool.message"), None)
    if result is None:
        result = next((e.get("message") for e in rec.events if e.name == "gen_ai.choice"), None)
    return tool_role(
        rec.get("gen_ai.tool.name"), _shown(args), _blocks_text(_shown(result)), rec.get("gen_ai.tool.call.id")
    )


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """Messages of Strands' ``chat`` and ``invoke_agent`` spans; an empty list when every one was
    redacted (so no other reader takes ``[REDACTED]`` for text)."""
    if rec.get("gen_ai.operation.name") not in ("chat", "invoke_agent") or not _strands(rec):
        return None
    key = "gen_ai.input.messages" if direction == "input" else "gen_ai.output.messages"
    latest = [v for v in [rec.get(key)] + [e.get(key) for e in rec.events] if v is not None]
    if latest:
        return [] if all(v == REDACTED for v in latest) else None  # else GenAI's own reader
    names = _ROLES if direction == "input" else {"gen_ai.choice": "assistant"}
    found = []
    for event in rec.events:
        role = names.get(event.name)
        raw = event.get("content" if direction == "input" else "message")
        if role is None or raw is None:
            continue
        message = _message(role, raw)
        if message is not None:
            found.append(message)
    return found if found or any(e.name in names for e in rec.events) else None


def _message(role: str, raw: Any) -> Message | None:
    if raw == REDACTED:
        return None
    blocks = load_text(raw) if isinstance(raw, str) else raw
    if not isinstance(blocks, list):
        return Message(role, texts=(str(blocks),))
    return parts_message(role, blocks[:MAX_BLOCKS], ("toolUse", "input", "toolUseId"), "toolResult", _result)


def _result(result: dict[str, Any]) -> tuple[str | None, Any]:
    return _id(result.get("toolUseId")), _blocks_text(result.get("content"))


def _shown(raw: Any) -> Any:
    return None if raw == REDACTED else raw


def _blocks_text(raw: Any) -> Any:
    """``[{"text": "sent"}]`` -> ``sent``: a tool result as Strands records it."""
    blocks = load_text(raw) if isinstance(raw, str) and raw.startswith("[") else raw
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) and "text" in b for b in blocks):
        return raw
    return "".join(str(b["text"]) for b in blocks[:MAX_BLOCKS])


def _id(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None

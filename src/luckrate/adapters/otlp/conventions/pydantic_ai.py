"""pydantic-ai's own instrumentation, data format versions 1 and 2 (``InstrumentationSettings(version=...)``).

Version 1 (pydantic-ai 1.x, ``event_mode="attributes"``) keeps a model call's messages as one span
attribute, ``events``: a JSON list of GenAI ≤1.36 event bodies, each naming itself in ``event.name``
(``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``; ``gen_ai.choice`` for the output) in the chat-completions shape.

Version 2 names its tool spans ``running tool`` and keeps the call's content in ``tool_arguments`` and
``tool_response`` rather than the GenAI keys (``gen_ai.operation.name = execute_tool``, the tool name
and call id are GenAI's). Versions 3 to 6 use ``gen_ai.tool.call.arguments`` / ``.result`` and read as
plain GenAI, as do every version's agent (``invoke_agent``) and model (``chat``) spans. With content
off, version 2's tool spans carry neither key and read as plain GenAI too.
"""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.payloads import Requested, load_text
from luckrate.adapters.otlp.roles import Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"tool_arguments", "tool_response", "events"})
MAX_EVENTS = 1000
_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def classify(rec: SpanRecord) -> Role | None:
    if rec.get("gen_ai.operation.name") != "execute_tool":
        return None
    args, result = rec.get("tool_arguments"), rec.get("tool_response")
    if args is None and result is None:
        return None
    return tool_role(rec.get("gen_ai.tool.name"), args, result, rec.get("gen_ai.tool.call.id"))


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """Version 1's ``events`` attribute on a model span: input events in, ``gen_ai.choice`` out."""
    raw = rec.get("events")
    if not isinstance(raw, str) or '"event.name"' not in raw or rec.get("gen_ai.operation.name") != "chat":
        return None
    events = load_text(raw)
    if not isinstance(events, list):
        return None
    found = []
    for event in events[:MAX_EVENTS]:
        name = event.get("event.name") if isinstance(event, dict) else None
        if direction == "output" and name == "gen_ai.choice" and isinstance(event.get("message"), dict):
            found.append(_message({**event["message"], "role": "assistant"}))
        elif direction == "input" and name in _ROLES:
            found.append(_message({**event, "role": event.get("role") or _ROLES[name]}))
    return found


def _message(body: dict[str, Any]) -> Message:
    role = str(body.get("role"))
    content = body.get("content")
    texts = (content,) if isinstance(content, str) and content and role != "tool" else ()
    calls = tuple(
        Requested(tc["function"]["name"], tc["function"].get("arguments"), tc.get("id"))
        for tc in body.get("tool_calls") or ()
        if isinstance(tc, dict) and isinstance(tc.get("function"), dict) and isinstance(tc["function"].get("name"), str)
    )
    responses = ((body.get("id"), content),) if role == "tool" else ()
    return Message(role, texts, calls, responses)

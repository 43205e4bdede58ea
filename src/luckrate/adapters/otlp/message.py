"""One model or agent message, as every reader of messages builds it (``Message``), and what all its forms share:
a chat-completions message, a call id, a result a convention marks failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.payloads import Requested, load_text
from luckrate.core.frozen import fast_init

MAX_MESSAGES = 1000


@fast_init
@dataclass(frozen=True)
class Message:
    role: str
    texts: tuple[str, ...] = ()
    calls: tuple[Requested, ...] = ()
    """Tool calls an assistant message asks for."""
    responses: tuple[tuple[str | None, Any], ...] = field(default=())
    """(call id, result) pairs a tool message answers; the call id is None when the message gave none."""
    failed: frozenset[str] = frozenset()
    """Call ids of the responses the message marks failed by the convention's own marker (``is_error``/
    ``isError: true``, ``status: "error"``, an ``error`` field), never by the words of the result."""
    named: tuple[frames.NamedResult, ...] = ()
    """Results a framework's own text gives with the tool they answer and no call id (frames.py): (tool,
    result, failed by the framework's own report of the tool raising)."""
    framed: tuple[str, ...] = ()
    """The user's words as a framework merged them into text a tool's result could also have written
    (frames.merged_task): the user's only where the run records them as the user's elsewhere (turns.py)."""


def marked_failed(value: Any, envelope: bool = True) -> bool:
    """Whether a tool result says it failed by a field a convention defines. On the message or part
    carrying the result (``envelope``): ``is_error``/``isError: true``, ``status: "error"`` (LangChain
    ToolMessage, Bedrock/Strands ``toolResult``) or a non-empty ``error``. On the result itself, only
    ``is_error``/``isError: true`` (an Anthropic ``tool_result`` block, MCP's ``CallToolResult``): a
    tool's own output may hold ``status`` or ``error`` keys of its own. Text is never read: "Error: ..."
    in a result is what the tool said, not a marker."""
    if isinstance(value, str):
        if not value.lstrip().startswith("{") or ("is_error" not in value and "isError" not in value):
            return False
        value = load_text(value)
    if not isinstance(value, dict):
        return False
    if value.get("is_error") is True or value.get("isError") is True:
        return True
    if not envelope:
        return False
    error = value.get("error")
    return value.get("status") == "error" or (error is not None and error is not False and error != "")


def failed_ids(ids: list[str | None]) -> frozenset[str]:
    return frozenset(i for i in ids if i)


def chat_message(obj: dict[str, Any]) -> Message:
    """An OpenAI chat-completions message: {role, content, tool_calls: [{id, function: {name, arguments}}]}."""
    calls = []
    tool_calls = obj.get("tool_calls")
    for tc in tool_calls if isinstance(tool_calls, list) else ():
        fn = tc.get("function") if isinstance(tc, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            calls.append(Requested(fn["name"], fn.get("arguments"), id_of(tc.get("id"))))
    content = obj.get("content")
    texts = (content,) if isinstance(content, str) and content else ()
    role = frames.role(obj.get("role"))
    call_id = id_of(obj.get("tool_call_id") or obj.get("id"))
    responses = ((call_id, content),) if role == "tool" else ()
    marked = role == "tool" and (marked_failed(obj) or marked_failed(content, envelope=False))
    failed = failed_ids([call_id]) if marked else frozenset()
    return Message(role, texts, tuple(calls), responses, failed)


def id_of(value: Any) -> str | None:
    # The registry example has a stray leading space in an id; trim, and treat empty as absent.
    return value.strip() or None if isinstance(value, str) else None

"""Messages in the older forms: flattened into attributes (OpenInference ``llm.input_messages.<i>.message.*``,
Traceloop ≤0.54 ``gen_ai.prompt.<i>.*``) or one per GenAI ≤1.36 event (``gen_ai.user.message``, ``gen_ai.choice``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.message import MAX_MESSAGES, Message, chat_message, failed_ids, id_of, marked_failed
from luckrate.adapters.otlp.payloads import Requested, captured, load_text
from luckrate.adapters.otlp.spans import Layout, layout_fact

INPUT_EVENTS = {"gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"}
OUTPUT_EVENTS = {"gen_ai.choice"}


def from_flat(entry: Any) -> Message | None:
    """One flattened message: OpenInference's ``{"message": {...}}`` or Traceloop's bare fields."""
    if not isinstance(entry, dict):
        return None
    msg = entry.get("message", entry)
    if not isinstance(msg, dict):
        return None
    role = str(msg.get("role") or "")
    texts = [msg["content"]] if isinstance(msg.get("content"), str) and captured(msg["content"]) else []
    for part in _listed(msg.get("contents")):
        content = part.get("message_content", {}) if isinstance(part, dict) else {}
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            texts.append(content["text"])
    calls = [c for c in map(_flat_call, _listed(msg.get("tool_calls"))) if c is not None]
    responses: tuple[tuple[str | None, Any], ...] = ()
    failed: frozenset[str] = frozenset()
    if role == "tool":
        responses = ((id_of(msg.get("tool_call_id")), msg.get("content")),)
        failed = failed_ids([responses[0][0]]) if marked_failed(msg) else failed
    blocks = _tool_results(msg.get("content")) if role != "tool" else None
    if blocks is not None:  # Anthropic content blocks as JSON text: tool results (and text) of a user turn
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        responses = tuple((id_of(b.get("tool_use_id")), b.get("content")) for b in results)
        failed = failed_ids([id_of(b.get("tool_use_id")) for b in results if marked_failed(b, envelope=False)])
    return Message(role, tuple(texts), tuple(calls), responses, failed)


def _tool_results(content: Any) -> list[dict[str, Any]] | None:
    """Anthropic content blocks holding a ``tool_result``, from the JSON text Traceloop ≤0.54 flattens
    into ``gen_ai.prompt.<i>.content``; None for any other content."""
    if not isinstance(content, str) or '"tool_result"' not in content or not content.lstrip().startswith("["):
        return None
    value = load_text(content)
    if not isinstance(value, list):
        return None
    blocks = [b for b in value[:MAX_MESSAGES] if isinstance(b, dict)]
    return blocks if any(b.get("type") == "tool_result" for b in blocks) else None


def _flat_call(entry: Any) -> Requested | None:
    if not isinstance(entry, dict):
        return None
    tc = entry.get("tool_call", entry)  # OpenInference nests under tool_call; Traceloop does not
    if not isinstance(tc, dict):
        return None
    fn = tc.get("function")
    if not isinstance(fn, dict):
        fn = tc
    name = fn.get("name")
    if not isinstance(name, str) or not name:  # a call naming no tool is no call (not a step with tool '')
        return None
    return Requested(name, fn.get("arguments"), id_of(tc.get("id")))


MESSAGE_EVENTS = frozenset(INPUT_EVENTS | OUTPUT_EVENTS)
"""The GenAI ≤1.36 message events, wherever they are recorded (model spans, agent spans)."""


def event_message(name: str, attributes: tuple[tuple[str, Any], ...]) -> Message | None:
    """One GenAI ≤1.36 message event as a Message; None for an event of another name."""
    return from_event(name, attributes) if name in MESSAGE_EVENTS else None


def from_event(name: str, attributes: tuple[tuple[str, Any], ...]) -> Message:
    body = dict(attributes)
    content = body.get("gen_ai.event.content")
    if isinstance(content, str):
        content = load_text(content)
    if isinstance(content, dict):
        body.update(content)
    if name == "gen_ai.choice":
        message = body.get("message")
        message = load_text(message) if isinstance(message, str) else message
        if isinstance(message, dict):
            # The calls are the message's (contrib instrumentations), or beside it in the body (Traceloop's).
            beside = {"tool_calls": body["tool_calls"]} if "tool_calls" in body else {}
            body = {**beside, **message, "role": "assistant"}
    if isinstance(body.get("tool_calls"), str):  # an SDK span event holds no nested values: JSON text
        body["tool_calls"] = load_text(body["tool_calls"])
    role = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.tool.message": "tool"}.get(
        name, "assistant"
    )
    role = frames.role(body.get("role") or role)
    if isinstance(body.get("content"), list):  # Anthropic content blocks (Traceloop's events)
        return _blocks_message(role, body["content"])
    return chat_message({**body, "role": role})


def _blocks_message(role: str, content: list[Any]) -> Message:
    """A message whose content is Anthropic content blocks: ``text``, ``tool_use`` (a call the assistant
    asks for: ``id``, ``name``, ``input``) and ``tool_result`` (the answer to one: ``tool_use_id``,
    ``content``, ``is_error``)."""
    blocks = [b for b in content[:MAX_MESSAGES] if isinstance(b, dict)]
    texts = tuple(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    calls = tuple(
        Requested(b["name"], b.get("input"), id_of(b.get("id")))
        for b in blocks
        if b.get("type") == "tool_use" and isinstance(b.get("name"), str)
    )
    results = [b for b in blocks if b.get("type") == "tool_result"]
    responses = tuple((id_of(b.get("tool_use_id")), b.get("content")) for b in results)
    failed = failed_ids([id_of(b.get("tool_use_id")) for b in results if marked_failed(b, envelope=False)])
    return Message(role, texts, calls, responses, failed)


_FLAT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion.")
PREFIXES = _FLAT_PREFIXES
"""Flattened message lists (OpenInference, Traceloop <= 0.54), read whole by ``unflatten``."""


@layout_fact
def flat_prefixes(layout: Layout) -> frozenset[str]:
    """The flattened message lists a layout holds keys of: most spans hold none, and skip two walks over
    their attributes."""
    return frozenset(p for p in _FLAT_PREFIXES if any(key.startswith(p) for key in layout))


def unflatten(attributes: Iterable[tuple[str, Any]], prefix: str) -> list[Any]:
    """``prefix.<i>.a.b = v`` attributes as a list of nested dicts (indexes sorted, gaps skipped)."""
    root: dict[str, Any] = {}
    for key, value in attributes:
        if not key.startswith(prefix):
            continue
        node = root
        *path, leaf = key[len(prefix) :].split(".")
        for part in path:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return _listed(root) if root else []


def _listed(value: Any) -> list[Any]:
    """A dict keyed by indexes as a list in index order (nested levels too); lists pass through."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return []
    items = sorted(((int(k), v) for k, v in value.items() if _index(k)), key=lambda kv: kv[0])
    return [_nested(v) for _, v in items[:MAX_MESSAGES]]


def _nested(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (_listed(v) if isinstance(v, dict) and v and all(map(_index, v)) else _nested(v))
            for k, v in value.items()
        }
    return value


def _index(key: str) -> bool:
    return key.isascii() and key.isdigit() and len(key) < 10

"""Model and agent messages in every form instrumentations record them, normalized to ``Message``.

- GenAI ≥1.37: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON string or structured),
  ``{role, parts: [{type: text|tool_call|tool_call_response, ...}]}``; also inside the
  ``gen_ai.client.inference.operation.details`` event. The contrib openai-agents-v2 instrumentation
  writes the model's chat-completions message as a Python repr inside a text part: read that too.
- GenAI ≤1.36 events: ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
  ``gen_ai.choice`` (body fields as event attributes or JSON in ``gen_ai.event.content``).
- OpenInference: flattened ``llm.input_messages.<i>.message.*`` / ``llm.output_messages.<i>.message.*``.
- Traceloop ≤0.54 (Anthropic: ≤0.53): flattened ``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*``
  (an Anthropic user turn's content blocks as JSON text in ``content``: its ``tool_result`` blocks are
  responses).

A tool message's result is marked failed only by the fields a convention defines (``marked_failed``).

A framework's own encoding inside GenAI messages (roles as an enum's text, earlier calls and results repeated
as text, DSPy's field sections) is read back by frames.py; tool results with no call id answer the calls
before them by order (``by_order``), and call ids an instrumentation reuses are numbered apart
(``distinct_ids``).

The record and what every form shares (a chat-completions message, call ids, the failure markers) are
message.py's; the flattened and per-event forms are read by flat_messages.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.flat_messages import (
    INPUT_EVENTS,
    OUTPUT_EVENTS,
    flat_prefixes,
    from_event,
    from_flat,
    unflatten,
)
from luckrate.adapters.otlp.message import MAX_MESSAGES, Message, chat_message, failed_ids, id_of, marked_failed
from luckrate.adapters.otlp.payloads import Requested, captured, load_text
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"gen_ai.input.messages", "gen_ai.output.messages"})
"""The attribute keys the standard readers read (the convention registry adds them to those compaction keeps)."""
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def input_messages(rec: SpanRecord) -> list[Message] | None:
    """The span's input messages; None when it recorded none (capture off, or not a model span)."""
    return _messages(rec, "gen_ai.input.messages", "llm.input_messages.", "gen_ai.prompt.", INPUT_EVENTS)


def output_messages(rec: SpanRecord) -> list[Message] | None:
    return _messages(rec, "gen_ai.output.messages", "llm.output_messages.", "gen_ai.completion.", OUTPUT_EVENTS)


def _messages(rec: SpanRecord, key: str, oi_prefix: str, tl_prefix: str, events: set[str]) -> list[Message] | None:
    raw = rec.get(key)
    if raw is None:
        raw = next((e.get(key) for e in rec.events if e.name == _DETAILS_EVENT and e.get(key) is not None), None)
    if captured(raw):
        return _from_semconv(raw)
    for prefix in (oi_prefix, tl_prefix):
        if prefix not in flat_prefixes(rec.layout):
            continue
        flat = unflatten(zip(rec.layout, rec.values), prefix)
        if flat:
            return [m for m in map(from_flat, flat) if m is not None]
    found = [from_event(e.name, e.attributes) for e in rec.events if e.name in events]
    return found or None


def _from_semconv(raw: Any) -> list[Message]:
    value = load_text(raw) if isinstance(raw, str) else raw
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [Message("user", texts=(str(value),))]  # a plain non-JSON string
    out: list[Message] = []
    unnamed = False
    ids: list[str] = []
    for obj in value[:MAX_MESSAGES]:
        m = _semconv_message(obj)
        if m is None:
            continue
        out.append(m)
        for call_id, _ in m.responses:
            unnamed = unnamed or call_id is None
        for c in m.calls:
            if c.call_id:
                ids.append(c.call_id)
    if unnamed:
        out = by_order(out)
    return distinct_ids(out) if len(ids) != len(set(ids)) else out


def distinct_ids(messages: list[Message]) -> list[Message]:
    """The messages with a call id that comes back for a later call made distinct by order: the ``k``-th call
    asking with an id already used (and the ``k``-th result naming it) gets ``<id>#<k>``. An instrumentation
    that makes ids up per message (``<tool>_<n>``) names every first call of a tool the same; without this
    each later call would be joined to the first one's result. ``join.requests_from`` numbers the model's
    requests the same way."""
    ids = [c.call_id for m in messages for c in m.calls if c.call_id]
    if len(ids) == len(set(ids)):
        return messages
    seen_calls: dict[str, int] = {}
    seen_results: dict[str, int] = {}
    out = []
    for m in messages:
        calls = tuple(Requested(c.name, c.args, numbered(c.call_id, seen_calls)) if c.call_id else c for c in m.calls)
        renamed = {}
        responses = []
        for call_id, result in m.responses:
            if call_id:
                renamed[call_id] = new = numbered(call_id, seen_results)
                call_id = new
            responses.append((call_id, result))
        failed = frozenset(renamed.get(i, i) for i in m.failed)
        out.append(Message(m.role, m.texts, calls, tuple(responses), failed, m.named, m.framed))
    return out


def numbered(call_id: str, seen: dict[str, int]) -> str:
    """``call_id`` the first time ``seen`` counts it, ``<call_id>#<k>`` the ``k``-th time after."""
    k = seen.get(call_id, 0)
    seen[call_id] = k + 1
    return call_id if k == 0 else f"{call_id}#{k}"


def by_order(messages: list[Message]) -> list[Message]:
    """The messages with each tool result that names no call id given the id of the call it answers by order
    within the list: the earliest call (with an id) asked for before it that no result has answered yet. A
    result that names its id answers that call."""
    for m in messages:
        if m.responses and any(call_id is None for call_id, _ in m.responses):
            break
    else:
        return messages
    pending: list[str] = []
    out = []
    for m in messages:
        pending.extend(c.call_id for c in m.calls if c.call_id)
        if not m.responses:
            out.append(m)
            continue
        responses, failed = [], set(m.failed)
        for call_id, result in m.responses:
            if call_id is None and pending:
                call_id = pending.pop(0)
            elif call_id in pending:
                pending.remove(call_id)
            responses.append((call_id, result))
        out.append(Message(m.role, m.texts, m.calls, tuple(responses), frozenset(failed), m.named, m.framed))
    return out


def _semconv_message(obj: Any) -> Message | None:
    if not isinstance(obj, dict):
        return None
    raw = obj.get("role")
    role = raw if raw.__class__ is str and raw in frames.PLAIN_ROLES else frames.role(raw)
    parts = obj.get("parts")
    if not isinstance(parts, list):
        return chat_message({**obj, "role": role})  # an OpenAI chat-completions dict instead of parts
    texts: list[str] = []
    calls: list[Requested] = []
    responses: list[tuple[str | None, Any]] = []
    failed: list[str | None] = []
    named: list[frames.NamedResult] = []
    framed: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            content = part["content"]
            if role == "system" or (role != "tool" and not frames.framed(content)):
                texts.append(content)  # most text: no framework framing to read (one scan)
                continue
            if role in _ASKING:
                embedded = _embedded_chat_message(content)
                listed = frames.text_calls(content) if embedded is None else None
                if embedded is not None:
                    calls.extend(embedded.calls)
                    texts.extend(embedded.texts)
                elif listed is not None:
                    calls.extend(listed)
                else:
                    said = frames.reply_fields(content)
                    texts.append(content if said is None else said)
                continue
            observed = frames.observation(content) if role in ("user", "tool") else None
            if observed is not None:
                result, task = frames.merged_task(observed[1])
                responses.append((observed[0], result))
                framed.extend([task] if task else [])
            elif role == "tool":
                responses.append((None, content))
            elif role == "user":
                content, failures = frames.failed_calls(content)
                named.extend(failures)
                named.extend(frames.trajectory_results(content))
                texts.append(frames.user_fields(frames.task_text(content)))
            else:
                texts.append(content)
        elif kind == "tool_call" and isinstance(part.get("name"), str):
            calls.append(Requested(part["name"], part.get("arguments"), id_of(part.get("id"))))
        elif kind == "tool_call_response":
            result = _blocks_result(part["response"] if "response" in part else part.get("result"))
            responses.append((id_of(part.get("id")), result))
            if marked_failed(part) or marked_failed(result, envelope=False):
                failed.append(id_of(part.get("id")))
    if role == "tool-call" or (role == "user" and calls and not texts):
        role = "assistant"
    elif role == "user" and responses and not any(t.strip() for t in texts):
        role = "tool"  # a framework's tool results framed as user text: not the user's words
    return Message(role, tuple(texts), tuple(calls), tuple(responses), failed_ids(failed), tuple(named), tuple(framed))


_ASKING = frozenset({"assistant", "ai", "model", "tool-call"})
"""Roles whose text may hold the calls a framework repeats as text (frames.py)."""


_RESULT_BLOCKS = frozenset({"text", "json"})


def _blocks_result(result: Any) -> Any:
    """A tool result given as Bedrock Converse content blocks (``[{"text": ...}]``, ``[{"json": {...}}]``) as
    what the blocks hold: their texts joined, or a lone JSON block's value, so a result that is nothing but
    an error object reads as one. Any other result as it is."""
    if not isinstance(result, list) or not result or len(result) > MAX_MESSAGES:
        return result
    if not all(isinstance(b, dict) and len(b) == 1 and next(iter(b)) in _RESULT_BLOCKS for b in result):
        return result
    if len(result) == 1 and "json" in result[0]:
        return result[0]["json"]
    texts = [b.get("text") for b in result]
    return "".join(t for t in texts if isinstance(t, str)) if all(isinstance(t, str) for t in texts) else result


def _embedded_chat_message(text: str) -> Message | None:
    # contrib openai-agents-v2 puts str(chat message dict) in a text part: "{'role': 'assistant', 'tool_calls': [...]}"
    if not text.startswith("{") or "tool_calls" not in text:
        return None
    value = load_text(text)
    return chat_message(value) if isinstance(value, dict) and "tool_calls" in value else None


def user_texts(messages: list[Message]) -> tuple[str, ...]:
    return tuple(t for m in messages if m.role in ("user", "human") for t in m.texts if captured(t))


def parts_message(
    role: str,
    parts: Iterable[Any],
    call: tuple[str, str, str],
    result: str,
    result_of: Callable[[dict[str, Any]], tuple[str | None, Any]],
) -> Message:
    """One message from a list of content parts, each a text, a tool call or a tool result, as Google ADK
    (``parts``) and Strands (content blocks) write them: ``call`` names the call part's key, its arguments'
    key and its id's key; ``result_of(part[result])`` gives a result's ``(call id, result)``. Other parts
    are passed over."""
    call_key, args_key, id_key = call
    texts, calls, responses = [], [], []
    for part in parts:
        if not isinstance(part, dict):
            continue
        requested, returned = part.get(call_key), part.get(result)
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(requested, dict) and isinstance(requested.get("name"), str):
            calls.append(Requested(requested["name"], requested.get(args_key), id_of(requested.get(id_key))))
        elif isinstance(returned, dict):
            responses.append(result_of(returned))
    return Message(role, tuple(texts), tuple(calls), tuple(responses))

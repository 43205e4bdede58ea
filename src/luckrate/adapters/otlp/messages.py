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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.payloads import Requested, captured, load_text
from luckrate.adapters.otlp.spans import Layout, SpanRecord, layout_fact
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


def input_messages(rec: SpanRecord) -> list[Message] | None:
    """The span's input messages; None when it recorded none (capture off, or not a model span)."""
    return _messages(rec, "gen_ai.input.messages", "llm.input_messages.", "gen_ai.prompt.", _INPUT_EVENTS)


def output_messages(rec: SpanRecord) -> list[Message] | None:
    return _messages(rec, "gen_ai.output.messages", "llm.output_messages.", "gen_ai.completion.", _OUTPUT_EVENTS)


_INPUT_EVENTS = {"gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"}
_OUTPUT_EVENTS = {"gen_ai.choice"}
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def _messages(rec: SpanRecord, key: str, oi_prefix: str, tl_prefix: str, events: set[str]) -> list[Message] | None:
    raw = rec.get(key)
    if raw is None:
        raw = next((e.get(key) for e in rec.events if e.name == _DETAILS_EVENT and e.get(key) is not None), None)
    if captured(raw):
        return _from_semconv(raw)
    for prefix in (oi_prefix, tl_prefix):
        if prefix not in _flat_prefixes(rec.layout):
            continue
        flat = unflatten(zip(rec.layout, rec.values), prefix)
        if flat:
            return [m for m in map(_from_flat, flat) if m is not None]
    found = [_from_event(e.name, e.attributes) for e in rec.events if e.name in events]
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
        return _chat_message({**obj, "role": role})  # an OpenAI chat-completions dict instead of parts
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
            calls.append(Requested(part["name"], part.get("arguments"), _id(part.get("id"))))
        elif kind == "tool_call_response":
            result = _blocks_result(part["response"] if "response" in part else part.get("result"))
            responses.append((_id(part.get("id")), result))
            if marked_failed(part) or marked_failed(result, envelope=False):
                failed.append(_id(part.get("id")))
    if role == "tool-call" or (role == "user" and calls and not texts):
        role = "assistant"
    elif role == "user" and responses and not any(t.strip() for t in texts):
        role = "tool"  # a framework's tool results framed as user text: not the user's words
    return Message(role, tuple(texts), tuple(calls), tuple(responses), _failed(failed), tuple(named), tuple(framed))


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


def _failed(ids: list[str | None]) -> frozenset[str]:
    return frozenset(i for i in ids if i)


def _embedded_chat_message(text: str) -> Message | None:
    # contrib openai-agents-v2 puts str(chat message dict) in a text part: "{'role': 'assistant', 'tool_calls': [...]}"
    if not text.startswith("{") or "tool_calls" not in text:
        return None
    value = load_text(text)
    return _chat_message(value) if isinstance(value, dict) and "tool_calls" in value else None


def _chat_message(obj: dict[str, Any]) -> Message:
    """An OpenAI chat-completions message: {role, content, tool_calls: [{id, function: {name, arguments}}]}."""
    calls = []
    tool_calls = obj.get("tool_calls")
    for tc in tool_calls if isinstance(tool_calls, list) else ():
        fn = tc.get("function") if isinstance(tc, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            calls.append(Requested(fn["name"], fn.get("arguments"), _id(tc.get("id"))))
    content = obj.get("content")
    texts = (content,) if isinstance(content, str) and content else ()
    role = frames.role(obj.get("role"))
    call_id = _id(obj.get("tool_call_id") or obj.get("id"))
    responses = ((call_id, content),) if role == "tool" else ()
    marked = role == "tool" and (marked_failed(obj) or marked_failed(content, envelope=False))
    failed = _failed([call_id]) if marked else frozenset()
    return Message(role, texts, tuple(calls), responses, failed)


def _from_flat(entry: Any) -> Message | None:
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
        responses = ((_id(msg.get("tool_call_id")), msg.get("content")),)
        failed = _failed([responses[0][0]]) if marked_failed(msg) else failed
    blocks = _tool_results(msg.get("content")) if role != "tool" else None
    if blocks is not None:  # Anthropic content blocks as JSON text: tool results (and text) of a user turn
        texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        responses = tuple((_id(b.get("tool_use_id")), b.get("content")) for b in results)
        failed = _failed([_id(b.get("tool_use_id")) for b in results if marked_failed(b, envelope=False)])
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
    return Requested(name, fn.get("arguments"), _id(tc.get("id")))


MESSAGE_EVENTS = frozenset(_INPUT_EVENTS | _OUTPUT_EVENTS)
"""The GenAI ≤1.36 message events, wherever they are recorded (model spans, agent spans)."""


def event_message(name: str, attributes: tuple[tuple[str, Any], ...]) -> Message | None:
    """One GenAI ≤1.36 message event as a Message; None for an event of another name."""
    return _from_event(name, attributes) if name in MESSAGE_EVENTS else None


def _from_event(name: str, attributes: tuple[tuple[str, Any], ...]) -> Message:
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
    return _chat_message({**body, "role": role})


def _blocks_message(role: str, content: list[Any]) -> Message:
    """A message whose content is Anthropic content blocks: ``text``, ``tool_use`` (a call the assistant
    asks for: ``id``, ``name``, ``input``) and ``tool_result`` (the answer to one: ``tool_use_id``,
    ``content``, ``is_error``)."""
    blocks = [b for b in content[:MAX_MESSAGES] if isinstance(b, dict)]
    texts = tuple(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    calls = tuple(
        Requested(b["name"], b.get("input"), _id(b.get("id")))
        for b in blocks
        if b.get("type") == "tool_use" and isinstance(b.get("name"), str)
    )
    results = [b for b in blocks if b.get("type") == "tool_result"]
    responses = tuple((_id(b.get("tool_use_id")), b.get("content")) for b in results)
    failed = _failed([_id(b.get("tool_use_id")) for b in results if marked_failed(b, envelope=False)])
    return Message(role, texts, calls, responses, failed)


_FLAT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion.")
KEYS = frozenset({"gen_ai.input.messages", "gen_ai.output.messages"})
"""The attribute keys the standard readers read (the convention registry adds them to those compaction keeps)."""
PREFIXES = _FLAT_PREFIXES
"""Flattened message lists (OpenInference, Traceloop <= 0.54), read whole by ``unflatten``."""


@layout_fact
def _flat_prefixes(layout: Layout) -> frozenset[str]:
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


def _id(value: Any) -> str | None:
    # The registry example has a stray leading space in an id; trim, and treat empty as absent.
    return value.strip() or None if isinstance(value, str) else None


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
            calls.append(Requested(requested["name"], requested.get(args_key), _id(requested.get(id_key))))
        elif isinstance(returned, dict):
            responses.append(result_of(returned))
    return Message(role, tuple(texts), tuple(calls), tuple(responses))

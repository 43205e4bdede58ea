"""What the checks ``confirm`` and ``max_parallel`` need from a trace, beside the steps.

- **Model turns.** A tool call belongs to the model call whose output messages requested it (the join
  records which). A tool span no request names (output messages not captured) answers the last model
  call that ended before it started: tool spans answering one model span were issued in its turn.
  Model calls are numbered in the order they finished.
- **The conversation.** Each model call's input messages hold the conversation so far. Walking the model
  calls in start order, the user messages and the agent's messages (assistant text with no tool calls)
  that a call's input adds to the conversation are placed before the steps that started after that call
  started; an assistant reply with text and no tool calls is placed where the call ended. A call whose
  input does not extend the conversation (another agent's own context, such as an agent used as a tool,
  whose "user" is the orchestrating agent) adds nothing: an orchestrator's instruction is not the user's
  consent. With no model input messages recorded, the GenAI ≤1.36 message events on other spans
  (``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.choice``: an agent span that records
  the conversation itself) are placed by their timestamps; the same message recorded on two spans at
  the same time counts once.
- **Turns from events.** With no model spans, each assistant event that asks for tool calls is one
  model turn: a call belongs to the event naming its call id, else to the last such event before it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.join import Call
from luckrate.adapters.otlp.messages import Message as ModelMessage
from luckrate.adapters.otlp.messages import event_message
from luckrate.adapters.otlp.conventions import ANSWER_TOOLS
from luckrate.adapters.otlp.payloads import captured, parse_args
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.step import AGENT, USER, Message

Spoken = tuple[str, str]
"""(role, text) of one conversation message."""


def model_turns(calls: Sequence[Call], models: Sequence[SpanRecord]) -> tuple[int | None, ...]:
    """For each call (in step order) the number of the model call that issued it; empty without model spans."""
    if not models:
        return ()
    order = sorted(models, key=lambda r: (r.end_ns, r.start_ns, r.span_id))
    number = {r.span_id: i for i, r in enumerate(order)}
    ends = [r.end_ns for r in order]
    out: list[int | None] = []
    for call in calls:
        if call.model is not None and call.model in number:
            out.append(number[call.model])
        else:
            i = bisect_right(ends, call.start_ns) - 1
            out.append(i if i >= 0 else None)
    return tuple(out)


Recorded = Sequence[tuple[SpanRecord, list[ModelMessage] | None, list[ModelMessage] | None]]
"""Spans with their input and output messages (None: not recorded)."""


def conversation(
    models: Recorded, starts: Sequence[int], others: Sequence[SpanRecord], agents: Callable[[], Recorded] | None = None
) -> tuple[Message, ...]:
    """The user's and the agent's messages placed among steps starting at ``starts`` (ascending).

    ``models`` holds each model span with its input and output messages; ``others`` are the remaining
    spans, read for GenAI message events only when no model recorded its input; ``agents`` (called only
    then: agent spans with their messages) are read the way model calls are, last: a framework whose model spans hold no
    content may record the run's input and reply on its agent span (Semantic Kernel)."""
    vouched = _Vouched(agents)
    out = _placed(models, starts, vouched)
    if not out:
        out = _event_messages(others, starts)
    if not out and agents is not None:
        out = _placed(agents(), starts)
    return tuple(out)


class _Vouched:
    """The user's words the agent spans record as a run's input: what vouches for words a framework merged into
    a tool's result (``Message.framed``). Read from the agent spans only when such words come up."""

    def __init__(self, agents: Callable[[], Recorded] | None):
        self._agents = agents
        self._texts: frozenset[str] | None = None

    def __contains__(self, text: object) -> bool:
        if self._texts is None:
            recorded = self._agents() if self._agents is not None else ()
            self._texts = frozenset(
                t.strip()
                for _, inputs, _ in recorded
                for m in inputs or ()
                if m.role in ("user", "human")
                for t in m.texts
            )
        return text in self._texts


_NOBODY = _Vouched(None)


def _placed(models: Recorded, starts: Sequence[int], vouched: _Vouched | frozenset[str] = _NOBODY) -> list[Message]:
    said: list[Spoken] = []
    out: list[Message] = []
    for rec, inputs, outputs in sorted(models, key=lambda m: (m[0].start_ns, m[0].end_ns, m[0].span_id)):
        if inputs is None:
            continue
        history = _spoken(inputs, vouched)
        if not _extends(history, said):
            continue  # not this conversation: another agent's own context
        at = bisect_left(starts, rec.start_ns)
        for role, text in history[len(said) :]:
            if text is not UNSEEN:
                out.append(Message(role, text, at))
        said = said + [s for s in history[len(said) :]]
        reply = [s for s in _spoken(outputs or []) if s[0] == AGENT]
        for role, text in reply:
            out.append(Message(role, text, bisect_left(starts, rec.end_ns)))
        said = said + reply
    return out


UNSEEN = "\x00unseen"
"""The text of an agent message a framework resent without its words (DSPy's history for a step whose
output fields it left ``None``): it matches whatever the agent said there, and is never placed."""


def _extends(history: list[Spoken], said: list[Spoken]) -> bool:
    """Whether a call's conversation continues the one so far: it starts with what was said, message by
    message, an unseen agent message matching any agent message."""
    if len(history) < len(said):
        return False
    for (role, text), (was_role, was) in zip(history, said):
        if role != was_role or (text != was and text is not UNSEEN and was is not UNSEEN):
            return False
    return True


def _answer_text(args: Any) -> str:
    parsed = args if isinstance(args, dict) else parse_args(args)[0]
    values = [v for v in parsed.values() if isinstance(v, str)] if isinstance(parsed, dict) else []
    return "\n".join(values)


def _spoken(messages: Sequence[ModelMessage], vouched: _Vouched | frozenset[str] = _NOBODY) -> list[Spoken]:
    out: list[Spoken] = []
    for m in messages:
        if m.framed:
            out.extend((USER, t.strip()) for t in m.framed if t.strip() in vouched)
        text = "\n".join(t for t in m.texts if captured(t))
        if m.role in ("assistant", "ai", "model") and m.calls and all(c.name in ANSWER_TOOLS for c in m.calls):
            # A framework that answers by a tool call: its arguments are the message (the text beside it,
            # often empty, is narration).
            answer = "\n".join(_answer_text(c.args) for c in m.calls)
            if answer.strip():
                out.append((AGENT, answer))
        elif not text.strip():
            continue
        elif m.role in ("user", "human"):
            out.append((USER, text))
        elif m.role in ("assistant", "ai", "model") and not m.calls:
            out.append((AGENT, UNSEEN if frames.unsaid(text) else text))
    return out


def _event_messages(spans: Sequence[SpanRecord], starts: Sequence[int]) -> list[Message]:
    """The user's and the agent's messages recorded as events, in time order (ties keep span order)."""
    found: list[tuple[int, str, str]] = []
    for rec in spans:
        for event in rec.events:
            message = event_message(event.name, event.attributes)
            if message is not None:
                found.extend((event.time_ns, role, text) for role, text in _spoken([message]))
    out, seen = [], set()
    for time_ns, role, text in sorted(found, key=lambda f: f[0]):
        if (time_ns, role, text) not in seen:
            seen.add((time_ns, role, text))
            out.append(Message(role, text, bisect_left(starts, time_ns)))
    return out


def event_turns(calls: Sequence[Call], spans: Sequence[SpanRecord]) -> tuple[int | None, ...]:
    """Model turns read from assistant message events that ask for tool calls; empty when none do."""
    asks = sorted(
        (
            (e.time_ns, m)
            for rec in spans
            for e in rec.events
            if (m := event_message(e.name, e.attributes)) is not None and m.role == "assistant" and m.calls
        ),
        key=lambda a: a[0],
    )
    if not asks:
        return ()
    by_id = {c.call_id: n for n, (_, m) in enumerate(asks) for c in m.calls if c.call_id}
    times = [t for t, _ in asks]
    out: list[int | None] = []
    for call in calls:
        if call.call_id and call.call_id in by_id:
            out.append(by_id[call.call_id])
        else:
            i = bisect_right(times, call.start_ns) - 1
            out.append(i if i >= 0 else None)
    return tuple(out)

"""The registry of span conventions the adapter reads, in the order they are asked.

Adding a convention is one module and one line in ``CONVENTIONS``. The module reads its keys into
roles (``classify(rec) -> Role | None``), may read messages kept where messages.py does not look
(``messages(rec, "input" | "output") -> list[Message] | None``, asked before the standard readers),
and names the attribute keys it reads (``KEYS``; compaction drops every other key). The most explicit
markers come first: a span is what the first convention that recognises it says it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from luckrate.adapters.otlp import (
    compaction,
    crewai_openinference,
    genai,
    google_adk,
    haystack,
    llamaindex,
    mastra,
    openinference,
    pydantic_ai,
    smolagents,
    spans,
    strands,
    traceloop,
    traceloop_ai_sdk,
    unmarked,
    vercel_ai,
)
from luckrate.adapters.otlp import messages as standard
from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.roles import Role
from luckrate.adapters.otlp.spans import SpanRecord

Direction = Literal["input", "output"]


@dataclass(frozen=True)
class Convention:
    name: str
    classify: Callable[[SpanRecord], Role | None]
    messages: Callable[[SpanRecord, Direction], list[Message] | None] | None = None
    """Messages kept where the standard readers (messages.py) do not look; None: none of its own."""
    keys: frozenset[str] = frozenset()
    """Attribute keys it reads beyond those compaction.py keeps for the first three conventions."""
    markers: tuple[str, ...] = ()
    """Attribute keys one of which every span it reads carries: spans with none are not offered to it
    (so each span costs a few dict probes, not a call per convention). Empty: offered every span."""
    answer_tool: str | None = None
    """The tool a framework's agent calls to answer (smolagents' ``final_answer``): its call is the agent
    speaking, not an action."""


_OI = ("openinference.span.kind",)
CONVENTIONS: tuple[Convention, ...] = (
    Convention("LlamaIndex", llamaindex.classify, markers=_OI),  # before OpenInference: its tool spans' shapes
    Convention(
        "smolagents",
        smolagents.classify,
        smolagents.messages,
        smolagents.KEYS,
        _OI,  # likewise
        answer_tool=smolagents.ANSWER_TOOL,
    ),
    Convention(
        "CrewAI",
        crewai_openinference.classify,
        crewai_openinference.messages,  # before OpenInference
        crewai_openinference.KEYS,
        crewai_openinference.MARKERS,
    ),
    Convention("OpenInference", openinference.classify, openinference.messages, openinference.KEYS, _OI),
    Convention(
        "pydantic-ai",
        pydantic_ai.classify,
        pydantic_ai.messages,
        pydantic_ai.KEYS,  # before GenAI: v1, v2
        tuple(pydantic_ai.KEYS),
    ),
    Convention(
        "Google ADK",
        google_adk.classify,
        google_adk.messages,
        google_adk.KEYS,  # before GenAI: v1 keys
        tuple(google_adk.KEYS),
    ),
    Convention(
        "Strands Agents",
        strands.classify,
        strands.messages,
        strands.KEYS,  # before GenAI: events
        tuple(strands.KEYS),
    ),
    Convention("Mastra", mastra.classify, mastra.messages, mastra.KEYS, (mastra.TYPE,)),  # before GenAI: chat spans
    # Before GenAI: the AI SDK's tool spans as Traceloop's Node SDK rewrites them carry GenAI keys, result quoted.
    Convention("Vercel AI SDK", traceloop_ai_sdk.classify, markers=traceloop_ai_sdk.MARKERS),
    Convention("GenAI", genai.classify),
    Convention("Traceloop", traceloop.classify),
    Convention("Vercel AI SDK", vercel_ai.classify, vercel_ai.messages, vercel_ai.KEYS, ("ai.operationId",)),
    # Last: recognised by span name (a model span has no attributes with content off), so offered every span.
    Convention("Haystack", haystack.classify, haystack.messages, haystack.KEYS),
)
ANSWER_TOOLS = frozenset(c.answer_tool for c in CONVENTIONS if c.answer_tool)
"""Tools whose call is an agent's reply to the user (turns.py reads it as the agent speaking)."""
_CLASSIFIERS = tuple((c.markers, c.classify) for c in CONVENTIONS)
_READERS = tuple((c.markers, c.messages) for c in CONVENTIONS if c.messages is not None)
KEYS = frozenset(key for c in CONVENTIONS for key in c.keys)
"""The attribute keys the registered conventions read beyond those compaction keeps for the first three."""


def interning() -> compaction.Interning:
    """Fresh compaction tables that keep every registered convention's keys: one per buffer's owner."""
    return compaction.Interning(KEYS)


def classify(rec: SpanRecord) -> Role | None:
    """What the first convention that recognises the span says it is; else, for a span that only
    looks like a tool call, a tool call read as far as it can be (unmarked.py); else None."""
    for read in _plan(rec.layout)[0]:
        role = read(rec)
        if role is not None:
            return role
    return unmarked.classify(rec)


def _carries(layout: dict[str, int], markers: tuple[str, ...]) -> bool:
    for key in markers:
        if key in layout:
            return True
    return False


def _admitted(layout: dict[str, int]) -> tuple[tuple[Callable, ...], tuple[Callable, ...]]:
    """The classifiers and message readers whose markers the layout carries, in registry order."""
    return (
        tuple(read for markers, read in _CLASSIFIERS if not markers or _carries(layout, markers)),
        tuple(read for markers, read in _READERS if not markers or _carries(layout, markers)),
    )


_plan = spans.layout_fact(_admitted)


def input_messages(rec: SpanRecord) -> list[Message] | None:
    """The span's input messages in any convention; None when it recorded none."""
    found = _read(rec, "input")
    return found if found is not None else standard.input_messages(rec)


def output_messages(rec: SpanRecord) -> list[Message] | None:
    found = _read(rec, "output")
    return found if found is not None else standard.output_messages(rec)


def _read(rec: SpanRecord, direction: Direction) -> list[Message] | None:
    for read in _plan(rec.layout)[1]:
        found = read(rec, direction)
        if found is not None:
            return found
    return None

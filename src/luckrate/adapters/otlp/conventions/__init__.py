"""The registry of span conventions the adapter reads, in the order they are asked.

Adding a convention is one module in this package and one line in ``CONVENTIONS``. The module reads its
keys into roles (``classify(rec) -> Role | None``), may read messages kept where messages.py does not look
(``messages(rec, "input" | "output") -> list[Message] | None``, asked before the standard readers),
and declares the attribute keys of its convention that it reads (``KEYS``; ``PREFIXES`` for flattened
lists read whole, ``VOCABULARY`` for keys whose values are a small vocabulary). Each key is declared once,
by the convention that defines it: a framework's reader that builds on another convention (smolagents on
OpenInference, Strands on GenAI) reads that one's keys without declaring them again. The registry collects
them, with the standard message readers' (messages.py), into the tables compaction keeps keys by
(``interning()``); compaction drops every other key. Where tool definitions are (``TOOL_DEFINITIONS``) is
collected the same way, for ``luckrate suggest`` (definitions.py). The most explicit markers come first: a
span is what the first convention that recognises it says it is. No reader module imports this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from luckrate.adapters.otlp import spans
from luckrate.adapters.otlp.conventions import (
    crewai_openinference,
    genai,
    google_adk,
    haystack,
    llamaindex,
    mastra,
    openinference,
    pydantic_ai,
    smolagents,
    strands,
    traceloop,
    traceloop_ai_sdk,
    unmarked,
    vercel_ai,
)
from luckrate.adapters.otlp import messages as standard
from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.roles import Role
from luckrate.adapters.otlp.sharing import Interning
from luckrate.adapters.otlp.spans import SpanRecord

Direction = Literal["input", "output"]


@dataclass(frozen=True)
class Convention:
    name: str
    classify: Callable[[SpanRecord], Role | None]
    messages: Callable[[SpanRecord, Direction], list[Message] | None] | None = None
    """Messages kept where the standard readers (messages.py) do not look; None: none of its own."""
    keys: frozenset[str] = frozenset()
    """Attribute keys it reads (compaction keeps the registered conventions' keys, and drops the rest)."""
    markers: tuple[str, ...] = ()
    """Attribute keys one of which every span it reads carries: spans with none are not offered to it
    (so each span costs a few dict probes, not a call per convention). Empty: offered every span."""
    answer_tool: str | None = None
    """The tool a framework's agent calls to answer (smolagents' ``final_answer``): its call is the agent
    speaking, not an action."""
    prefixes: tuple[str, ...] = ()
    """Key prefixes it reads whole (flattened lists): every key starting with one is kept."""
    vocabulary: frozenset[str] = frozenset()
    """Keys it reads whose string values are a small vocabulary (an operation, a kind, a tool's name):
    kept, and their values shared between buffered records like the keys themselves."""


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
    Convention(
        "OpenInference",
        openinference.classify,
        openinference.messages,
        openinference.KEYS,
        _OI,
        vocabulary=openinference.VOCABULARY,
    ),
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
    Convention("GenAI", genai.classify, keys=genai.KEYS, vocabulary=genai.VOCABULARY),
    Convention(
        "Traceloop",
        traceloop.classify,
        keys=traceloop.KEYS,
        prefixes=traceloop.PREFIXES,
        vocabulary=traceloop.VOCABULARY,
    ),
    Convention("Vercel AI SDK", vercel_ai.classify, vercel_ai.messages, vercel_ai.KEYS, ("ai.operationId",)),
    # Last: recognised by span name (a model span has no attributes with content off), so offered every span.
    Convention("Haystack", haystack.classify, haystack.messages, haystack.KEYS),
)
ANSWER_TOOLS = frozenset(c.answer_tool for c in CONVENTIONS if c.answer_tool)
"""Tools whose call is an agent's reply to the user (turns.py reads it as the agent speaking)."""
_CLASSIFIERS = tuple((c.markers, c.classify) for c in CONVENTIONS)
_READERS = tuple((c.markers, c.messages) for c in CONVENTIONS if c.messages is not None)
KEYS = frozenset(key for c in CONVENTIONS for key in c.keys) | standard.KEYS
"""The attribute keys the registered conventions and the standard message readers read: all compaction keeps
(with ``PREFIXES``, ``VOCABULARY`` and a rule's output attribute)."""
PREFIXES = tuple(dict.fromkeys((*standard.PREFIXES, *(p for c in CONVENTIONS for p in c.prefixes))))
"""Key prefixes read whole (flattened message lists): every key starting with one is kept."""
VOCABULARY = frozenset(key for c in CONVENTIONS for key in c.vocabulary)
"""Keys whose values are a small vocabulary: kept, their values shared between buffered records."""

_DEFINERS = (genai, strands, openinference, vercel_ai)
"""The conventions that say where tool definitions are, in the order their keys are asked (GenAI's first)."""
TOOL_DEFINITION_KEYS: dict[str, tuple[str, ...]] = {
    part: tuple(m.TOOL_DEFINITIONS[part] for m in _DEFINERS if part in m.TOOL_DEFINITIONS)
    for part in ("name", "description", "schema", "list", "prefix")
}
"""Attribute keys of a tool's ``name``, ``description`` and parameter ``schema``, of a JSON ``list`` of
definitions, and the ``prefix`` of flattened definitions: what ``luckrate suggest`` reads (definitions.py)."""


def interning() -> Interning:
    """Fresh compaction tables that keep every registered convention's keys: one per buffer's owner."""
    return Interning(KEYS, PREFIXES, VOCABULARY)


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

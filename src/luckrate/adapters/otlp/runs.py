"""Which traces of a file make one run.

A run is one agent's work on one request, from the user's message to its answer. Most instrumentations
record it as one trace; some spread it over several: AutoGen's runtime tracing starts a trace per message
delivery and ties them only by span links, a hand-off may put each agent's tree in its own trace, and a
chat front end may start a trace per user turn of one conversation (``gen_ai.conversation.id``).

- ``trace``: each trace is a run (the service's rule).
- ``links`` (default for files): traces tied by span links, in either direction and through any chain,
  are one run. A link to a trace the file does not hold is counted (``links_missing``), not followed.
- ``conversation``: as ``links``, and traces whose spans carry the same ``gen_ai.conversation.id`` are
  one run too. Opt in: a conversation may be long-lived, and not every deployment means one run by it.

Bounded: at most ``MAX_LINKS`` links read per span and ``MAX_TRACES_PER_RUN`` traces per run (a larger
group, such as a conversation that never ends, is graded as consecutive runs of that many traces in
start order); every link or trace beyond a bound is counted. Link cycles are harmless: grouping is a
union of sets, never a walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

MODES = ("trace", "links", "conversation")
DEFAULT_MODE = "links"
MAX_LINKS = 128
"""Links read per span (the OTel SDK's default span link limit)."""
MAX_TRACES_PER_RUN = 256
MAX_CONVERSATION_ID = 256
CONVERSATION_KEY = "gen_ai.conversation.id"


@dataclass
class Assembly:
    """What grouping did, counted: every key is a closed name, every value a count."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, n: int = 1) -> None:
        if n:
            self.counts[key] = self.counts.get(key, 0) + n


@dataclass(frozen=True)
class Ties:
    """Span links and conversation ids read from a request, before any grouping."""

    links: tuple[tuple[bytes, bytes, bytes, bytes], ...]
    """(trace, span, linked trace, linked span) of each link kept."""
    conversations: tuple[tuple[bytes, str], ...]
    """(trace, conversation id) of each span that carries one."""


def ties(req: ExportTraceServiceRequest, assembly: Assembly, conversation: bool = True) -> Ties:
    """The request's links, and (``conversation``) its spans' conversation ids: only ``conversation`` mode
    groups by them, and reading them means reading every attribute of every span."""
    links: list[tuple[bytes, bytes, bytes, bytes]] = []
    conversations: dict[tuple[bytes, str], None] | None = {} if conversation else None
    for resource in req.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                _read_span(span, links, conversations, assembly)
    return Ties(tuple(links), tuple(conversations or ()))


def _read_span(span, links: list, conversations: dict | None, assembly: Assembly) -> None:
    """The span's links into ``links``, and (unless None) its conversation id into ``conversations``."""
    assembly.add("links_dropped", max(0, len(span.links) - MAX_LINKS))
    for link in list(span.links)[:MAX_LINKS]:
        if len(link.trace_id) == 16 and any(link.trace_id) and link.trace_id != span.trace_id:
            links.append((bytes(span.trace_id), bytes(span.span_id), bytes(link.trace_id), bytes(link.span_id)))
    if conversations is None:
        return
    for kv in span.attributes:
        if kv.key == CONVERSATION_KEY and kv.value.WhichOneof("value") == "string_value":
            value = kv.value.string_value
            if value and len(value) <= MAX_CONVERSATION_ID:
                conversations[(bytes(span.trace_id), value)] = None
            elif value:
                assembly.add("conversation_ids_too_long")


def group(
    traces: Sequence[bytes], start: dict[bytes, int], found: Ties, mode: str, assembly: Assembly
) -> list[list[bytes]]:
    """The file's traces (first-seen order) as runs: lists of trace ids, each in start order, the runs in
    the order of their first trace's start."""
    if mode == "trace":
        return [[t] for t in traces]
    parent = {t: t for t in traces}

    def root(t: bytes) -> bytes:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    def union(a: bytes, b: bytes) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for trace, _span, linked, _linked_span in found.links:
        if linked in parent:
            union(trace, linked)
        else:
            assembly.add("links_missing")
    if mode == "conversation":
        first: dict[str, bytes] = {}
        for trace, conversation in found.conversations:
            union(trace, first.setdefault(conversation, trace))
    runs: dict[bytes, list[bytes]] = {}
    for t in traces:
        runs.setdefault(root(t), []).append(t)
    out: list[list[bytes]] = []
    for members in runs.values():
        members.sort(key=lambda t: (start[t], t))
        assembly.add("traces_joined", len(members) - 1)
        chunks = [members[i : i + MAX_TRACES_PER_RUN] for i in range(0, len(members), MAX_TRACES_PER_RUN)]
        assembly.add("runs_split", len(chunks) - 1)
        out.extend(chunks)
    out.sort(key=lambda run: (start[run[0]], run[0]))
    return out


def adopted_parents(found: Ties, order: dict[bytes, int]) -> dict[tuple[bytes, bytes], bytes]:
    """For a root span with a link into a trace that started earlier in the same run, the linked span as
    its parent: the tree of a run spread over traces, so a tool span finds the agent that ran it. Only
    earlier traces are adopted, so no cycle can form. Keyed by (trace, span)."""
    out: dict[tuple[bytes, bytes], bytes] = {}
    for trace, span, linked, linked_span in found.links:
        if linked in order and trace in order and order[linked] < order[trace]:
            out.setdefault((trace, span), linked_span)
    return out


MAX_LINKED_PER_TRACE = MAX_TRACES_PER_RUN
"""Distinct traces one trace's spans may link to (more cannot join one run anyway); beyond, counted."""
MAX_CONVERSATIONS_PER_TRACE = 4


@dataclass
class TraceTies:
    """What ties one trace to others, gathered as its spans arrive (the service's run assembly)."""

    linked: dict[bytes, tuple[bytes, bytes]] = field(default_factory=dict)
    """Linked trace -> (span, linked span) of the first link to it."""
    conversations: list[str] = field(default_factory=list)

    def link(self, linked: bytes, pair: tuple[bytes, bytes], assembly: Assembly) -> None:
        if linked in self.linked:
            return
        if len(self.linked) >= MAX_LINKED_PER_TRACE:
            assembly.add("links_dropped")
            return
        self.linked[linked] = pair

    def converse(self, conversation: str) -> None:
        if conversation not in self.conversations and len(self.conversations) < MAX_CONVERSATIONS_PER_TRACE:
            self.conversations.append(conversation)

    def merge(self, other: TraceTies, assembly: Assembly) -> None:
        for linked, pair in other.linked.items():
            self.link(linked, pair, assembly)
        for c in other.conversations:
            self.converse(c)


def ties_by_trace(
    req: ExportTraceServiceRequest, keep: Callable[[bytes], bool], conversation: bool, assembly: Assembly
) -> dict[bytes, TraceTies]:
    """The ties of each trace of ``req`` that ``keep`` picks (those whose spans were accepted), only for
    traces that have any: span links to other traces, and (``conversation``) conversation ids."""
    out: dict[bytes, TraceTies] = {}
    for resource in req.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                if not span.links and not conversation:
                    continue
                trace = bytes(span.trace_id)
                if not keep(trace):
                    continue
                links: list[tuple[bytes, bytes, bytes, bytes]] = []
                convs: dict[tuple[bytes, str], None] | None = {} if conversation else None
                _read_span(span, links, convs, assembly)
                if not links and not convs:
                    continue
                tied = out.setdefault(trace, TraceTies())
                for _t, sid, linked, linked_span in links:
                    tied.link(linked, (sid, linked_span), assembly)
                for _t, c in convs or ():
                    tied.converse(c)
    return out


def run_ties(members: Sequence[tuple[bytes, TraceTies | None]]) -> Ties:
    """The members' ties as ``Ties`` (for ``adopted_parents``)."""
    links = tuple(
        (trace, sid, linked, linked_span)
        for trace, tied in members
        if tied is not None
        for linked, (sid, linked_span) in tied.linked.items()
    )
    return Ties(links, ())

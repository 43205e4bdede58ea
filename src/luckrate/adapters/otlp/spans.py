"""Compact the spans of decoded OTLP requests (requests.py) into records to buffer per trace.

Span data is attacker-influenced: a record keeps only the attribute keys and events the adapter reads,
bounds every string, list and count, and never raises on content. Spans whose ids make them unusable
are counted by reason (``Rejected``) so the receiver can answer with a partial success.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from operator import itemgetter
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


DEFAULT_OUTPUT_ATTRIBUTE = "luckrate.output_ok"

MAX_STRING = 64 * 1024
"""Longest string value kept (characters); longer ones are cut."""
MAX_SPAN_TEXT = 512 * 1024
"""Total string characters kept per span; once spent, further strings are cut to what is left."""
MAX_ATTRIBUTES = 512
"""Attributes kept per span (flattened OpenInference message lists are the big ones)."""
MAX_EVENTS = 64
"""Events kept per span."""
MAX_EVENT_ATTRIBUTES = 32
MAX_ITEMS = 256
"""Items kept per array or kvlist value."""
MAX_DEPTH = 8
"""Nesting kept inside array/kvlist values; deeper values become None."""
MAX_STATUS_MESSAGE = 4 * 1024

REJECT_REASONS = ("bad_trace_id", "bad_span_id", "bad_parent_id")
"""The closed set of reasons a span is not kept (safe as a metric attribute)."""

# Only the attributes the adapter reads are kept (tests/adapters/test_otlp_spans.py checks every key the
# convention readers ask for is here): anything else costs compaction time and buffer memory for nothing.
_KEEP_KEYS = frozenset({
    # OTel GenAI (genai.py, messages.py)
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
    "gen_ai.tool.call.id", "gen_ai.agent.name", "gen_ai.workflow.name", "gen_ai.input.messages",
    "gen_ai.output.messages", "mcp.method.name", "error.type",
    # OpenInference (openinference.py)
    "openinference.span.kind", "tool.name", "tool.id", "tool_call.id", "tool_call.function.arguments",
    "input.value", "output.value", "agent.name",
    # Traceloop (traceloop.py)
    "traceloop.span.kind", "traceloop.entity.name", "traceloop.entity.input", "traceloop.entity.output",
    "traceloop.workflow.name",
})
_KEEP_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion.")
"""Flattened message lists (OpenInference, Traceloop <= 0.54), read whole by ``messages.unflatten``."""
# Keys whose string values are a small vocabulary (operation, tool, agent, kind): their values are shared
# between records like the keys themselves.
_VOCABULARY_KEYS = frozenset({
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.agent.name", "openinference.span.kind", "tool.name",
    "traceloop.span.kind", "traceloop.entity.name", "mcp.method.name",
})
SHARED_MAX = 8192
"""Distinct strings and pairs shared between buffered records (keys, span names, vocabulary values).
Bounded because span data is attacker-influenced: once full, new ones are kept unshared, never evicted."""
SHARED_LENGTH = 128
"""Longest string shared."""
_shared: dict[Any, Any] = {}
LAYOUTS_MAX = 4096
"""Distinct attribute layouts (key sequences) remembered for sharing. When full the table starts afresh
(records keep the layouts they hold): attacker-chosen key sequences can cost sharing for a while, never
memory beyond the bound, and never sharing for good."""
LAYOUT_KEYS = 32
"""Layouts of more keys are not shared (flattened message lists differ per span anyway)."""
_layouts: dict[tuple[str, ...], "Layout"] = {}
_KEEP_EVENT_PREFIXES = ("gen_ai.",)
_KEEP_EVENTS = frozenset({"exception"})

Attributes = tuple[tuple[str, Any], ...]
Layout = dict[str, int]
"""Attribute key -> its position in a record's ``values``; in the order sent, each key once."""


def _item(index: int) -> Any:
    """A C-level accessor for one item of a tuple subclass (what ``namedtuple`` uses), else a property."""
    try:
        from collections import _tuplegetter  # CPython
    except ImportError:  # pragma: no cover
        return property(itemgetter(index))
    return _tuplegetter(index, None)


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event the adapter reads (GenAI message events, evaluation results, exceptions)."""

    name: str
    time_ns: int
    """Event time, Unix nanoseconds (0 when not recorded)."""
    attributes: Attributes
    """Bounded attributes, values converted to Python types."""

    def get(self, key: str, default: Any = None) -> Any:
        return _lookup(self.attributes, key, default)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """The part of one OTLP span the adapter reads; small enough to buffer many per trace."""

    trace_id: bytes
    """16 bytes, never all zero."""
    span_id: bytes
    """8 bytes, never all zero."""
    parent_id: bytes
    """8 bytes, or b"" for a root span."""
    name: str
    kind: int
    """OTLP ``Span.SpanKind`` (1 internal, 2 server, 3 client, 4 producer, 5 consumer)."""
    start_ns: int
    end_ns: int
    status_code: int
    """OTLP ``Status.StatusCode``: 0 unset, 1 ok, 2 error."""
    status_message: str
    layout: Layout
    """The attribute keys kept (only those the adapter reads, the first of a repeated key), in the order
    sent. One dict shared by every record with the same keys, so a record pays only for ``values``."""
    values: tuple[Any, ...]
    """The attribute values, by ``layout`` position: str/int/float/bool/list/dict/None."""
    events: tuple[SpanEvent, ...] = ()

    @classmethod
    def build(cls, *, attributes: Iterable[tuple[str, Any]] = (), **fields: Any) -> "SpanRecord":
        """A record from ``(key, value)`` pairs (the first of a repeated key wins) and the other fields."""
        layout: Layout = {}
        values: list[Any] = []
        for key, value in attributes:
            if key not in layout:
                layout[key] = len(values)
                values.append(value)
        return cls(layout=_shared_layout(layout), values=tuple(values), **fields)

    def get(self, key: str, default: Any = None) -> Any:
        """The attribute's value (the first one sent, if a key repeats)."""
        i = self.layout.get(key)
        return default if i is None else self.values[i]

    @property
    def attributes(self) -> Attributes:
        """``(key, value)`` pairs in the order sent."""
        return tuple(zip(self.layout, self.values))

    @property
    def trace_hex(self) -> str:
        return self.trace_id.hex()

    @property
    def span_hex(self) -> str:
        return self.span_id.hex()


@dataclass(frozen=True, slots=True)
class Rejected:
    """Spans of one request not kept, for one reason from ``REJECT_REASONS``."""

    reason: str
    count: int


class LayoutMemo:
    """``compute(layout)``, worked out once per shared layout rather than once per span: every record with
    the same attribute keys holds the same layout dict (``_shared_layout``), so a fact about the keys alone
    (which conventions may read the span, whether it holds flattened messages) is a dict probe. Bounded
    like the layouts table; a layout too large to be shared is computed each time."""

    def __init__(self, compute: Callable[[Layout], Any]):
        self._compute = compute
        self._held: dict[int, tuple[Layout, Any]] = {}

    def __call__(self, layout: Layout) -> Any:
        held = self._held.get(id(layout))
        if held is not None and held[0] is layout:  # the id of a layout since freed may be reused
            return held[1]
        value = self._compute(layout)
        if len(layout) <= LAYOUT_KEYS:
            if len(self._held) >= LAYOUTS_MAX:
                self._held.clear()
            self._held[id(layout)] = (layout, value)
        return value


def _shared_layout(layout: Layout) -> Layout:
    """The shared copy of a layout with these keys in this order (a new one is shared while room is left)."""
    if len(layout) > LAYOUT_KEYS:
        return layout
    keys = tuple(layout)
    found = _layouts.get(keys)
    if found is not None:
        return found
    if len(_layouts) >= LAYOUTS_MAX:
        _layouts.clear()
    _layouts[keys] = layout
    return layout


def _lookup(attributes: Attributes, key: str, default: Any) -> Any:
    for k, v in attributes:
        if k == key:
            return v
    return default


def records_from_request(
    req: ExportTraceServiceRequest, *, keep_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE, packed: bool = False,
) -> tuple[list[Any], list[Rejected]]:
    """Compact every usable span of the request; count the others by reason. Never raises on content.
    ``packed``: ``PackedSpan``s, for a buffer that holds them until their trace completes."""
    picks, rejected = route_spans(req, 1)
    return records_at(req, picks[0], keep_attribute=keep_attribute, packed=packed), rejected


def records_at(req: ExportTraceServiceRequest, picks: Iterable[int], *,
               keep_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE, packed: bool = False) -> list[Any]:
    """Compact the spans at these positions (ascending, counted over the request's spans in order), already
    judged usable (``route_spans``): a grading process reaches its share without a Python step over the
    spans it does not own. ``packed`` as in ``records_from_request``."""
    records: list[Any] = []
    ids: dict[bytes, bytes] = {}
    wanted = iter(picks)
    pick = next(wanted, None)
    first = 0
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            if pick is None:
                return records
            spans = ss.spans
            end = first + len(spans)
            while pick is not None and pick < end:
                records.append(_record(spans[pick - first], keep_attribute, ids, packed))
                pick = next(wanted, None)
            first = end
    return records


def route(trace_id: bytes, n: int) -> int:
    """The owner (0..n-1) of a trace among ``n`` grading processes: what the Collector's load-balancing
    exporter does with ``routing_key: traceID``."""
    return zlib.crc32(trace_id) % n


def route_spans(req: ExportTraceServiceRequest, n: int) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the usable spans each of ``n`` owners takes (``route``, inlined: it runs once per
    span a receiver gets), and the others by reason."""
    picks: list[list[int]] = [[] for _ in range(n)]
    adds = [p.append for p in picks]
    rejected: dict[str, int] = {}
    crc32 = zlib.crc32
    position = 0
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                reason = _reject_reason(span)
                if reason is not None:
                    rejected[reason] = rejected.get(reason, 0) + 1
                elif n == 1:
                    adds[0](position)
                else:
                    adds[crc32(span.trace_id) % n](position)
                position += 1
    return picks, [Rejected(r, c) for r, c in rejected.items()]


_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)


def _reject_reason(span: Any) -> str | None:
    # Each upb field read builds a new bytes object, so each id is read once and compared whole (this runs
    # on every span a receiver gets, before anything else).
    trace_id = span.trace_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE_ID:
        return "bad_trace_id"
    span_id = span.span_id
    if len(span_id) != 8 or span_id == _ZERO_SPAN_ID:
        return "bad_span_id"
    parent = span.parent_span_id
    # An all-zero parent is a root in some SDKs' eyes; it is treated as one rather than rejected.
    return "bad_parent_id" if parent and len(parent) != 8 else None


def _record(span: Any, keep_attribute: str, ids: dict[bytes, bytes], packed: bool = False) -> Any:
    # The budget is spent in field order: name, status message, attributes, events. Common cases (a
    # shared name, no status message, no events) skip the helper calls.
    budget = _Budget(MAX_SPAN_TEXT)
    name = span.name
    shared_name = _shared.get(name)
    if shared_name is not None:
        budget.left -= len(shared_name)
        name = shared_name
    else:
        name = _shared_text(budget.text(name, 1024))
    status = span.status
    message = status.message
    message = budget.text(message, MAX_STATUS_MESSAGE) if message else ""
    layout, values = _attributes(span.attributes, keep_attribute, budget)
    events = span.events
    events = _events(events, budget) if events else ()
    parent = span.parent_span_id
    # An all-zero parent is a root's (see _reject_reason); other lengths than 8 were rejected there.
    parent = ids.setdefault(parent, parent) if parent and parent != _ZERO_SPAN_ID else b""
    trace_id = span.trace_id
    trace_id = ids.setdefault(trace_id, trace_id)
    kind, code = span.kind, status.code
    if packed:  # PackedSpan's layout, built inline (a call per span costs more than the work)
        state = (kind, code, message, events) if message or events or kind >> 6 or code >> 2 else kind << 2 | code
        return _NEW_TUPLE(PackedSpan, (trace_id, span.span_id, parent, name,
                                       span.start_time_unix_nano << 64 | span.end_time_unix_nano, state, layout,
                                       *values))
    return _new_record(trace_id, span.span_id, parent, name, kind, span.start_time_unix_nano,
                       span.end_time_unix_nano, code, message, layout, values, events)


class _Unfrozen:
    """``SpanRecord``'s slots, in its order, without the frozen ``__setattr__``: ``_new_record`` fills one
    with plain attribute stores and relabels it a ``SpanRecord`` (CPython allows ``__class__`` assignment
    between classes of the same slots)."""

    __slots__ = tuple(f.name for f in fields(SpanRecord))


_NEW = object.__new__


def _new_record(trace_id: bytes, span_id: bytes, parent_id: bytes, name: str, kind: int, start_ns: int,
                end_ns: int, status_code: int, status_message: str, layout: Layout, values: Iterable[Any],
                events: tuple[SpanEvent, ...]) -> SpanRecord:
    """``SpanRecord(...)`` for the hot path. A frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__`` (Python 3.11): 1.7 µs for these 12 fields. The slots' own setters took 0.7 µs;
    plain stores into an unfrozen twin and a ``__class__`` assignment take 0.2 µs. The record is as
    frozen as any other (tests/adapters/test_otlp_spans.py compares the two)."""
    rec = _NEW(_Unfrozen)
    rec.trace_id = trace_id
    rec.span_id = span_id
    rec.parent_id = parent_id
    rec.name = name
    rec.kind = kind
    rec.start_ns = start_ns
    rec.end_ns = end_ns
    rec.status_code = status_code
    rec.status_message = status_message
    rec.layout = layout
    rec.values = tuple(values)
    rec.events = events
    rec.__class__ = SpanRecord
    return rec


class PackedSpan(tuple):
    """A span record as a buffer holds it until its trace completes, in one tuple: trace id, span id,
    parent id, name; both times as ``start_ns << 64 | end_ns`` (OTLP's are unsigned 64-bit); the kind and
    status code as ``kind << 2 | code`` when the status has no message, the span no events and both fit (a
    small int Python preallocates), else ``(kind, code, message, events)``; the layout; then the values.

    About 100 bytes less per buffered tool span than a ``SpanRecord`` with its values tuple and two time
    ints (the README's memory section). A buffer reads only the ids; ``unpacked`` builds the records the
    adapters read, once, when the grading thread takes the trace (``assembler.CompletedTrace.spans``):
    reading fields from a tuple on every access instead cost the adapter more than building the records."""

    __slots__ = ()
    trace_id: bytes = _item(0)
    span_id: bytes = _item(1)
    parent_id: bytes = _item(2)


_NEW_TUPLE = tuple.__new__


def unpacked(spans: Iterable[Any]) -> tuple[SpanRecord, ...]:
    """The ``SpanRecord`` of each ``PackedSpan`` (records pass through as they are)."""
    out: list[SpanRecord] = []
    append = out.append
    new, unfrozen, packed, record = _NEW, _Unfrozen, PackedSpan, SpanRecord
    for p in spans:
        if p.__class__ is not packed:
            append(p)
            continue
        trace_id, span_id, parent_id, name, times, status, layout = p[:7]
        rec = new(unfrozen)  # as in _new_record, inline: a call per span costs more than the stores
        rec.trace_id = trace_id
        rec.span_id = span_id
        rec.parent_id = parent_id
        rec.name = name
        if status.__class__ is int:
            rec.kind = status >> 2
            rec.status_code = status & 3
            rec.status_message = ""
            rec.events = ()
        else:
            rec.kind, rec.status_code, rec.status_message, rec.events = status
        rec.start_ns = times >> 64
        rec.end_ns = times & 0xFFFF_FFFF_FFFF_FFFF
        rec.layout = layout
        rec.values = p[7:]
        rec.__class__ = record
        append(rec)
    return tuple(out)


def _share(value: str) -> str:
    """The shared copy of a short string (one object for every record that holds it)."""
    found = _shared.get(value)
    if found is not None:
        return found
    if len(_shared) < SHARED_MAX:  # callers pass only strings up to SHARED_LENGTH
        _shared[value] = value
    return value


def _shared_text(text: str) -> str:
    return _share(text) if len(text) <= SHARED_LENGTH else text


_SCALARS = frozenset({"bool_value", "int_value", "double_value"})
_DROP = (None, False)
_key_rules: dict[str, tuple[str | None, bool]] = {}


def keep(keys: Iterable[str] = (), prefixes: Iterable[str] = (), vocabulary: Iterable[str] = ()) -> None:
    """Keep these attribute keys (and keys under these prefixes) too: how a convention registered in
    conventions.py, at import, has the keys it reads kept. ``vocabulary`` keys get their values shared."""
    global _KEEP_KEYS, _KEEP_PREFIXES, _VOCABULARY_KEYS
    _KEEP_KEYS = _KEEP_KEYS | frozenset(keys) | frozenset(vocabulary)
    _KEEP_PREFIXES = tuple(dict.fromkeys(_KEEP_PREFIXES + tuple(prefixes)))
    _VOCABULARY_KEYS = _VOCABULARY_KEYS | frozenset(vocabulary)
    _key_rules.clear()  # decisions made before may have dropped a key now kept
"""Attribute key as sent -> (its shared copy, or None when the adapter does not read it; whether its
values are vocabulary). One probe instead of the prefix, key-set and sharing tests per attribute.
Bounded like the shared table: once full, further keys are decided each time, not remembered."""


def _key_rule(key: str) -> tuple[str | None, bool]:
    rule = _key_rules.get(key)
    if rule is not None:
        return rule
    if key in _KEEP_KEYS or key.startswith(_KEEP_PREFIXES):
        rule = (_shared_text(key[:256]), key in _VOCABULARY_KEYS)
    else:
        rule = _DROP
    if len(_key_rules) < SHARED_MAX and len(key) <= SHARED_LENGTH:
        _key_rules[key] = rule
    return rule


def _attributes(kvs: Iterable[Any], keep_attribute: str, budget: "_Budget") -> tuple[Layout, list[Any]]:
    """``layout`` and ``values`` for a record: the kept attributes, the first of a repeated key."""
    # The hot loop of compaction: one pass, one probe per key (``_key_rules``), strings within budget and
    # shared-table hits handled inline, the budget in a local (a helper call or attribute access per
    # attribute cost as much as upb's own access, the README's Benchmarks section).
    layout: Layout = {}
    values: list[Any] = []
    shared, rules = _shared, _key_rules
    left = budget.left
    for kv in kvs:
        raw = kv.key
        key, vocabulary = rules.get(raw) or _key_rule(raw)
        if key is None:
            if raw != keep_attribute:
                continue
            key = _shared_text(raw[:256])
        elif len(values) >= MAX_ATTRIBUTES and raw != keep_attribute:
            continue
        if key in layout:
            continue
        layout[key] = len(values)
        value = kv.value
        text = value.string_value
        # A non-empty string_value is the oneof's value; only an empty one needs asking which it is (most
        # values are strings, and asking took 60 ns each).
        if not text and (which := value.WhichOneof("value")) != "string_value":
            if which in _SCALARS:
                values.append(getattr(value, which))
                continue
            budget.left = left
            values.append(budget.value(value, 0))
            left = budget.left
            continue
        n = len(text)
        if n <= MAX_STRING and n <= left:
            left -= n
        else:
            budget.left = left
            text = budget.text(text)
            left = budget.left
        if vocabulary and len(text) <= SHARED_LENGTH:
            text = shared.get(text) or _share(text)
        values.append(text)
    budget.left = left
    return _shared_layout(layout), values


def _events(events: Iterable[Any], budget: "_Budget") -> tuple[SpanEvent, ...]:
    out: list[SpanEvent] = []
    for ev in events:
        if len(out) >= MAX_EVENTS:
            break
        if ev.name in _KEEP_EVENTS or ev.name.startswith(_KEEP_EVENT_PREFIXES):
            attrs = tuple(
                (kv.key[:256], budget.value(kv.value, 0)) for kv in list(ev.attributes)[:MAX_EVENT_ATTRIBUTES]
            )
            out.append(SpanEvent(ev.name[:256], int(ev.time_unix_nano), attrs))
    return tuple(out)


class _Budget:
    """Converts AnyValue to Python while spending a per-span allowance of string characters."""

    __slots__ = ("left",)  # one per span compacted: a slot is quicker to make and to update than a __dict__

    def __init__(self, chars: int):
        self.left = chars

    def text(self, s: str, limit: int = MAX_STRING) -> str:
        cut = s[: max(0, min(limit, self.left))]
        self.left -= len(cut)
        return cut

    def value(self, v: AnyValue, depth: int) -> Any:
        which = v.WhichOneof("value")
        if which == "string_value":
            return self.text(v.string_value)
        if which in _SCALARS:
            return getattr(v, which)
        if which == "bytes_value":
            return self.text(bytes(v.bytes_value[: MAX_STRING // 2]).hex())
        if depth >= MAX_DEPTH:
            return None
        if which == "array_value":
            return [self.value(x, depth + 1) for x in v.array_value.values[:MAX_ITEMS]]
        if which == "kvlist_value":
            return {kv.key[:256]: self.value(kv.value, depth + 1) for kv in v.kvlist_value.values[:MAX_ITEMS]}
        return None  # unset, or profiles-only string_value_strindex

"""Compact the spans of decoded OTLP requests (requests.py) into records to buffer per trace (spans.py).

Span data is attacker-influenced: a record keeps only the attribute keys and events the adapter reads,
bounds every string, list and count, and never raises on content. Spans whose ids make them unusable
are counted by reason (``Rejected``) so the receiver can answer with a partial success (``usable_spans``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from luckrate.adapters.otlp.conventions import interning
from luckrate.adapters.otlp.sharing import SHARED_LENGTH, Interning
from luckrate.adapters.otlp.spans import (
    DEFAULT_OUTPUT_ATTRIBUTE,
    Layout,
    PackedSpan,
    SpanEvent,
    new_record,
    shared_layout,
)

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

# The attribute keys kept are those the convention readers declare (each in its own module), collected by the
# registry (conventions/__init__.py) into the ``Interning`` tables it makes (sharing.py): anything else costs
# compaction time and buffer memory for nothing. Events are kept by name (``keeps_event``).
_KEEP_EVENT_PREFIXES = ("gen_ai.",)
_KEEP_EVENTS = frozenset({"exception"})


@dataclass(frozen=True, slots=True)
class Rejected:
    """Spans of one request not kept, for one reason from ``REJECT_REASONS``."""

    reason: str
    count: int


def records_from_request(
    req: ExportTraceServiceRequest,
    *,
    keep_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE,
    packed: bool = False,
    tables: Interning | None = None,
) -> tuple[list[Any], list[Rejected]]:
    """Compact every usable span of the request; count the others by reason. Never raises on content.
    ``packed``: ``PackedSpan``s, for a buffer that holds them until their trace completes. ``tables``: the
    caller's ``Interning`` (records of one buffer share through one); None for fresh ones."""
    [usable], rejected = usable_spans(req)
    return records_at(req, usable, keep_attribute=keep_attribute, packed=packed, tables=tables), rejected


def records_at(
    req: ExportTraceServiceRequest,
    picks: Iterable[int],
    *,
    keep_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE,
    packed: bool = False,
    tables: Interning | None = None,
) -> list[Any]:
    """Compact the spans at these positions (ascending, counted over the request's spans in order), already
    judged usable (``reject_reason``): a grading process reaches its share without a Python step over the
    spans it does not own. ``packed`` and ``tables`` as in ``records_from_request``."""
    if tables is None:
        tables = interning()
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
                records.append(_record(spans[pick - first], keep_attribute, ids, packed, tables))
                pick = next(wanted, None)
            first = end
    return records


def usable_spans(
    req: ExportTraceServiceRequest, owners: int = 1, owner: Callable[[bytes], int] | None = None
) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the request's usable spans (counted over its spans in order), in ``owners`` lists, each
    span in the list ``owner(trace id)`` names (all in one without an ``owner``), and the others by reason. Which
    process owns a trace is the service's decision (``service.assemble.routing``); this is the one pass over
    the request's ids that tells it too (it runs on every span a receiver gets)."""
    picks: list[list[int]] = [[] for _ in range(owners)]
    adds = [p.append for p in picks]
    rejected: dict[str, int] = {}
    position = 0
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                reason = reject_reason(span)
                if reason is not None:
                    rejected[reason] = rejected.get(reason, 0) + 1
                elif owner is None:
                    adds[0](position)
                else:
                    adds[owner(span.trace_id)](position)
                position += 1
    return picks, [Rejected(r, c) for r, c in rejected.items()]


_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)


def reject_reason(span: Any) -> str | None:
    """Why the span cannot be kept (one of ``REJECT_REASONS``), or None when it can."""
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


def _record(span: Any, keep_attribute: str, ids: dict[bytes, bytes], packed: bool, tables: Interning) -> Any:
    # The budget is spent in field order: name, status message, attributes, events. Common cases (a
    # shared name, no status message, no events) skip the helper calls.
    budget = Budget(MAX_SPAN_TEXT)
    name = span.name
    shared_name = tables.strings.get(name)
    if shared_name is not None:
        budget.left -= len(shared_name)
        name = shared_name
    else:
        name = tables.shared_text(budget.text(name, 1024))
    status = span.status
    message = status.message
    message = budget.text(message, MAX_STATUS_MESSAGE) if message else ""
    layout, values = _attributes(span.attributes, keep_attribute, budget, tables)
    events = span.events
    events = _events(events, budget) if events else ()
    parent = span.parent_span_id
    # An all-zero parent is a root's (see reject_reason); other lengths than 8 were rejected there.
    parent = ids.setdefault(parent, parent) if parent and parent != _ZERO_SPAN_ID else b""
    trace_id = span.trace_id
    trace_id = ids.setdefault(trace_id, trace_id)
    kind, code = span.kind, status.code
    if packed:  # PackedSpan's layout, built inline (a call per span costs more than the work)
        state = (kind, code, message, events) if message or events or kind >> 6 or code >> 2 else kind << 2 | code
        return _NEW_TUPLE(
            PackedSpan,
            (
                trace_id,
                span.span_id,
                parent,
                name,
                span.start_time_unix_nano << 64 | span.end_time_unix_nano,
                state,
                layout,
                *values,
            ),
        )
    return new_record(
        trace_id,
        span.span_id,
        parent,
        name,
        kind,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        code,
        message,
        layout,
        values,
        events,
    )


_NEW_TUPLE = tuple.__new__


_SCALARS = frozenset({"bool_value", "int_value", "double_value"})


def _attributes(kvs: Iterable[Any], keep_attribute: str, budget: Budget, tables: Interning) -> tuple[Layout, list[Any]]:
    """``layout`` and ``values`` for a record: the kept attributes, the first of a repeated key."""
    # The hot loop of compaction: one pass, one probe per key (``key_rules``), strings within budget and
    # shared-table hits handled inline, the budget in a local (a helper call or attribute access per
    # attribute cost as much as upb's own access, benchmarks/README.md).
    layout: Layout = {}
    values: list[Any] = []
    shared, rules = tables.strings, tables.key_rules
    left = budget.left
    for kv in kvs:
        raw = kv.key
        key, vocabulary = rules.get(raw) or tables.key_rule(raw)
        if key is None:
            if raw != keep_attribute:
                continue
            key = tables.shared_text(raw[:256])
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
            text = shared.get(text) or tables.share(text)
        values.append(text)
    budget.left = left
    return shared_layout(layout, tables.layouts), values


def keeps_event(name: str) -> bool:
    """Whether an event of this name is one the adapters read (span events here, log records in logs.py)."""
    return name in _KEEP_EVENTS or name.startswith(_KEEP_EVENT_PREFIXES)


def _events(events: Iterable[Any], budget: "Budget") -> tuple[SpanEvent, ...]:
    out: list[SpanEvent] = []
    for ev in events:
        if len(out) >= MAX_EVENTS:
            break
        if keeps_event(ev.name):
            attrs = tuple(
                (kv.key[:256], budget.value(kv.value, 0)) for kv in list(ev.attributes)[:MAX_EVENT_ATTRIBUTES]
            )
            out.append(SpanEvent(ev.name[:256], int(ev.time_unix_nano), attrs))
    return tuple(out)


class Budget:
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

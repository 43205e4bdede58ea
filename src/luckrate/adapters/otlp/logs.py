"""OTLP log records → the span events the adapters already read (messages.py), and their join to a trace.

GenAI instrumentations put model messages into log records instead of (or beside) span events: the GenAI
≤1.36 events (``gen_ai.user.message``, ``gen_ai.choice``... content in a kvlist body) and, in the newer
conventions, one ``gen_ai.client.inference.operation.details`` record per model call (messages as structured
attributes). A record with a trace id becomes a ``LogEvent``: its trace, the span it names (or none) and the
``SpanEvent`` the same event on a span would be. ``joined`` puts each on its span when the trace is read, so
nothing downstream knows where an event came from.

Log data is attacker-influenced like span data: a record keeps only events the adapters read, bounded as
span events are (compaction.py); a record that cannot be kept is counted by reason (``LOG_REJECT_REASONS``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from luckrate.adapters.otlp.compaction import (
    MAX_DEPTH,
    MAX_EVENT_ATTRIBUTES,
    MAX_ITEMS,
    MAX_SPAN_TEXT,
    MAX_STRING,
    Budget,
    Rejected,
    keeps_event,
)
from luckrate.adapters.otlp.spans import SpanEvent, SpanRecord, new_record

LOG_REJECT_REASONS = ("not_read", "no_trace_id")
"""Why a log record is not kept (closed set, safe as a metric attribute): it is no event the adapters read
(not ``gen_ai.*`` or ``exception``), or it is one and names no trace (a 16-byte, non-zero trace id)."""
EVENT_NAME = "event.name"
"""The attribute older SDKs name an event with, before LogRecord.event_name (field 12) existed."""
BODY_CONTENT = "gen_ai.event.content"
"""Where a body that is not a kvlist goes (what span events of the same conventions carried it as)."""

_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)


class LogEvent(NamedTuple):
    """One kept log record, waiting to be joined to its trace. A named tuple rather than a frozen dataclass:
    one is made per record a receiver takes, and a tuple is built in a third of the time (and smaller)."""

    trace_id: bytes
    """16 bytes, never all zero."""
    span_id: bytes
    """8 bytes, or b"" when the record names no span (or an unusable one)."""
    event: SpanEvent
    """What the same event on a span is: its name, time and attributes (a kvlist body flattened into them)."""


def usable_records(
    req: ExportLogsServiceRequest, owners: int = 1, owner: Callable[[bytes], int] | None = None
) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the request's usable records (counted over its records in order), in ``owners`` lists as
    ``compaction.usable_spans`` splits spans (by ``owner(trace id)``), and the others by reason."""
    picks: list[list[int]] = [[] for _ in range(owners)]
    rejected: dict[str, int] = {}
    for position, record in enumerate(log_records(req)):
        reason = reject_reason(record)
        if reason is not None:
            rejected[reason] = rejected.get(reason, 0) + 1
        else:
            picks[0 if owner is None else owner(record.trace_id)].append(position)
    return picks, [Rejected(r, c) for r, c in rejected.items()]


def events_at(req: ExportLogsServiceRequest, picks: Iterable[int]) -> list[LogEvent]:
    """The ``LogEvent`` of each record at these positions (ascending, counted over the request's records in
    order, already judged usable), as ``compaction.records_at`` reaches its spans."""
    events: list[LogEvent] = []
    wanted = iter(picks)
    pick = next(wanted, None)
    first = 0
    for rl in req.resource_logs:
        for sl in rl.scope_logs:
            if pick is None:
                return events
            records = sl.log_records
            end = first + len(records)
            while pick is not None and pick < end:
                events.append(_event(records[pick - first]))
                pick = next(wanted, None)
            first = end
    return events


def events_from_request(req: ExportLogsServiceRequest) -> tuple[list[LogEvent], list[Rejected]]:
    """Every usable record's ``LogEvent``; the others counted by reason. Never raises on content."""
    [usable], rejected = usable_records(req)
    return events_at(req, usable), rejected


def joined(spans: Sequence[SpanRecord], logs: Sequence[LogEvent]) -> tuple[SpanRecord, ...]:
    """The trace's spans with each log event added to the events of the span it belongs to, in arrival
    order after the span's own: the innermost span open at the record's time within the span it names
    (that span itself, unless one of its descendants was open then), or, when it names no span of the
    trace, within the whole trace, else the root. The spans as they are when there are no log events or no
    spans.

    Within: the contrib instrumentations name the model span that produced a record, which has no
    children; Traceloop's name the application span around the model call, and the record belongs to the
    model span open inside it when it was emitted."""
    spans = tuple(spans)
    if not logs or not spans:
        return spans
    position = {s.span_id: i for i, s in enumerate(spans)}
    children: dict[bytes, list[int]] = {}
    for i, s in enumerate(spans):
        if s.parent_id:
            children.setdefault(s.parent_id, []).append(i)
    extra: dict[int, list[SpanEvent]] = {}
    for log in logs:
        named = position.get(log.span_id) if log.span_id else None
        if named is None:
            at = _enclosing(spans, log.event.time_ns)
        elif log.span_id in children:
            at = _innermost_under(spans, named, log.event.time_ns, children)
        else:
            at = named
        extra.setdefault(at, []).append(log.event)
    return tuple(_with_events(s, extra[i]) if i in extra else s for i, s in enumerate(spans))


def _with_events(s: SpanRecord, events: list[SpanEvent]) -> SpanRecord:
    """``dataclasses.replace(s, events=...)``, at ``new_record``'s speed (a third of replace's time)."""
    return new_record(
        s.trace_id,
        s.span_id,
        s.parent_id,
        s.name,
        s.kind,
        s.start_ns,
        s.end_ns,
        s.status_code,
        s.status_message,
        s.layout,
        s.values,
        s.events + tuple(events),
    )


def _innermost_under(spans: tuple[SpanRecord, ...], i: int, time_ns: int, children: dict[bytes, list[int]]) -> int:
    """From span ``i`` down to the latest-starting descendant open at ``time_ns`` (``i`` when none is)."""
    seen = {i}  # a parent cycle in attacker-sent spans must not loop
    while time_ns:
        open_at = [
            k
            for k in children.get(spans[i].span_id, ())
            if k not in seen and spans[k].start_ns <= time_ns <= spans[k].end_ns
        ]
        if not open_at:
            break
        i = max(open_at, key=lambda k: (spans[k].start_ns, -k))
        seen.add(i)
    return i


def _enclosing(spans: tuple[SpanRecord, ...], time_ns: int) -> int:
    """The latest-starting span open at ``time_ns`` (the innermost, for properly nested spans), else the
    earliest root (a span without a parent in the trace), else the earliest span."""
    open_at = [i for i, s in enumerate(spans) if time_ns and s.start_ns <= time_ns <= s.end_ns]
    if open_at:
        return max(open_at, key=lambda i: (spans[i].start_ns, -i))
    ids = {s.span_id for s in spans}
    roots = [i for i, s in enumerate(spans) if not s.parent_id or s.parent_id not in ids] or list(range(len(spans)))
    return min(roots, key=lambda i: (spans[i].start_ns, i))


def log_records(req: ExportLogsServiceRequest) -> Iterable[Any]:
    """The request's log records, in order (what record positions count over)."""
    for rl in req.resource_logs:
        for sl in rl.scope_logs:
            yield from sl.log_records


def reject_reason(record: Any) -> str | None:
    # Not read first: an application's own log lines (no trace id, or any) are not ours to join.
    if not keeps_event(_name(record)):
        return "not_read"
    trace_id = record.trace_id
    return "no_trace_id" if len(trace_id) != 16 or trace_id == _ZERO_TRACE_ID else None


def _name(record: Any) -> str:
    if record.event_name:
        return record.event_name
    for kv in record.attributes:
        if kv.key == EVENT_NAME:
            return kv.value.string_value
    return ""


def _event(record: Any) -> LogEvent:
    # A record whose encoding is within the per-span text allowance cannot spend it (a character takes at
    # least a byte), so its values are converted without counting (``_plain``): the newer conventions'
    # structured messages are trees of small values, and counting each cost the logs path more than the
    # whole rest of a graded run (benchmarks/logs_path.py). A larger record is converted counting.
    value = _plain if record.ByteSize() <= MAX_SPAN_TEXT else Budget(MAX_SPAN_TEXT).value
    name = record.event_name
    attributes: list[tuple[str, Any]] = []
    add = attributes.append
    for kv in record.attributes:
        key = kv.key
        if key == EVENT_NAME:
            name = name or kv.value.string_value
        elif len(attributes) < MAX_EVENT_ATTRIBUTES:
            add((key[:256], value(kv.value, 0)))
    body = record.body
    which = body.WhichOneof("value")
    if which == "kvlist_value":  # its fields beside the attributes, as a span event of the same conventions
        for kv in body.kvlist_value.values:
            if len(attributes) >= MAX_EVENT_ATTRIBUTES:
                break
            add((kv.key[:256], value(kv.value, 1)))
    elif which is not None:
        add((BODY_CONTENT, value(body, 0)))
    span_id = record.span_id
    if len(span_id) != 8 or span_id == _ZERO_SPAN_ID:
        span_id = b""
    return LogEvent(
        record.trace_id,
        span_id,
        SpanEvent(name[:256], record.time_unix_nano or record.observed_time_unix_nano, tuple(attributes)),
    )


_SCALARS = frozenset({"bool_value", "int_value", "double_value"})


def _plain(v: Any, depth: int) -> Any:
    """``compaction.Budget.value`` for a value that cannot exceed the allowance: the same result, the same
    bounds on strings, items and depth, without the count."""
    text = v.string_value
    if text:  # most values; asking which field is set costs more than reading this one
        return text if len(text) <= MAX_STRING else text[:MAX_STRING]
    which = v.WhichOneof("value")
    if which in _SCALARS:
        return getattr(v, which)
    if which == "string_value":
        return ""
    if which == "bytes_value":
        return bytes(v.bytes_value[: MAX_STRING // 2]).hex()
    if depth >= MAX_DEPTH:
        return None
    if which == "kvlist_value":
        items = v.kvlist_value.values
        if len(items) > MAX_ITEMS:
            items = items[:MAX_ITEMS]
        depth += 1
        return {kv.key[:256]: _plain(kv.value, depth) for kv in items}
    if which == "array_value":
        items = v.array_value.values
        if len(items) > MAX_ITEMS:
            items = items[:MAX_ITEMS]
        depth += 1
        return [_plain(x, depth) for x in items]
    return None

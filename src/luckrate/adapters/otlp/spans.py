"""Span records: the part of an OTLP span the adapters read, as buffered per trace until it completes.

``SpanRecord`` is what the adapters read; ``PackedSpan`` is how a buffer holds one (``unpacked`` turns
them back into records). Records with the same attribute keys share one layout (``SharedLayout``, from
the table of the compaction ``Interning`` that made them), so a fact about the keys alone is worked out
once per layout and kept in it (``layout_fact``). Compaction (compaction.py) builds them from decoded
requests.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from operator import itemgetter
from typing import Any, TypeVar

DEFAULT_OUTPUT_ATTRIBUTE = "luckrate.output_ok"

LAYOUTS_MAX = 4096
"""Distinct attribute layouts (key sequences) remembered for sharing. When full the table starts afresh
(records keep the layouts they hold): attacker-chosen key sequences can cost sharing for a while, never
memory beyond the bound, and never sharing for good."""
LAYOUT_KEYS = 32
"""Layouts of more keys are not shared (flattened message lists differ per span anyway)."""

T = TypeVar("T")

Attributes = tuple[tuple[str, Any], ...]
Layout = dict[str, int]
"""Attribute key -> its position in a record's ``values``; in the order sent, each key once."""


def _item(index: int) -> Any:
    """A C-level accessor for one item of a tuple subclass (what ``namedtuple`` uses), else a property."""
    getter = getattr(collections, "_tuplegetter", None)  # CPython's, private (typeshed does not declare it)
    if getter is None:  # pragma: no cover
        return property(itemgetter(index))
    return getter(index, None)


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
        """A record from ``(key, value)`` pairs (the first of a repeated key wins) and the other fields; its
        layout is its own (compaction shares layouts through its ``Interning``)."""
        layout: Layout = {}
        values: list[Any] = []
        for key, value in attributes:
            if key not in layout:
                layout[key] = len(values)
                values.append(value)
        return cls(layout=layout, values=tuple(values), **fields)

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


RECORD_FIELDS = tuple(f.name for f in fields(SpanRecord))
"""``SpanRecord``'s fields in order, the one declaration the fast forms below follow: ``_Unfrozen``'s
slots are made from it; ``new_record``, ``unpacked``, ``PackedSpan`` and compaction's ``_record`` are
written out positionally for speed and checked against it (tests/adapters/test_otlp_record_forms.py)."""


class SharedLayout(dict[str, int]):
    """A layout as its owner's table shares it (``shared_layout``: one for every record with these keys, in
    this order), holding the facts worked out about its keys (``layout_fact``). They live and go with the
    layout, and so with the table of the ``Interning`` that made it: no module holds them."""

    __slots__ = ("facts",)

    def __init__(self, layout: Layout):
        super().__init__(layout)
        self.facts: dict[Callable[[Layout], Any], Any] = {}
        """``compute`` -> ``compute(self)``."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedLayout, (dict(self),))  # the facts are worked out again where it is unpickled


def layout_fact(compute: Callable[[Layout], T]) -> Callable[[Layout], T]:
    """``compute(layout)``, worked out once per shared layout and kept in it rather than once per span: a
    fact about the keys alone (which conventions may read the span, whether it holds flattened messages)
    is then a dict probe. ``compute`` must depend on the layout's keys only. A layout not shared (more
    than ``LAYOUT_KEYS`` keys, or one ``SpanRecord.build`` made) is computed each time."""

    def fact(layout: Layout) -> T:
        if type(layout) is SharedLayout:
            facts = layout.facts
            found = facts.get(compute, facts)  # the dict itself stands for "not worked out yet"
            if found is facts:
                found = facts[compute] = compute(layout)
            return found
        return compute(layout)

    fact.__doc__ = compute.__doc__
    return fact


def shared_layout(layout: Layout, layouts: dict[tuple[str, ...], Layout]) -> Layout:
    """The shared copy in ``layouts`` (its owner's table) of a layout with these keys in this order: a
    ``SharedLayout``, made from the first layout of these keys seen."""
    if len(layout) > LAYOUT_KEYS:
        return layout
    keys = tuple(layout)
    found = layouts.get(keys)
    if found is not None:
        return found
    if len(layouts) >= LAYOUTS_MAX:
        layouts.clear()
    shared = layouts[keys] = SharedLayout(layout)
    return shared


def _lookup(attributes: Attributes, key: str, default: Any) -> Any:
    for k, v in attributes:
        if k == key:
            return v
    return default


class _Unfrozen:
    """``SpanRecord``'s slots, in its order, without the frozen ``__setattr__``: ``new_record`` fills one
    with plain attribute stores and relabels it a ``SpanRecord`` (CPython allows ``__class__`` assignment
    between classes of the same slots)."""

    __slots__ = RECORD_FIELDS


_NEW: Callable[[type], Any] = object.__new__
"""Typed to return Any: what it makes is an ``_Unfrozen`` that becomes a ``SpanRecord`` by ``__class__``
assignment, which mypy cannot follow (tests/adapters/test_otlp_record_forms.py checks the forms instead)."""


def new_record(
    trace_id: bytes,
    span_id: bytes,
    parent_id: bytes,
    name: str,
    kind: int,
    start_ns: int,
    end_ns: int,
    status_code: int,
    status_message: str,
    layout: Layout,
    values: Iterable[Any],
    events: tuple[SpanEvent, ...],
) -> SpanRecord:
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
    ints (docs/benchmarks.md, memory). A buffer reads only the ids; ``unpacked`` builds the records the
    adapters read, once, when the grading thread takes the trace (``assembler.CompletedTrace.spans``):
    reading fields from a tuple on every access instead cost the adapter more than building the records."""

    __slots__ = ()
    trace_id: bytes = _item(RECORD_FIELDS.index("trace_id"))  # the ids sit where the record has them
    span_id: bytes = _item(RECORD_FIELDS.index("span_id"))
    parent_id: bytes = _item(RECORD_FIELDS.index("parent_id"))


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
        rec = new(unfrozen)  # as in new_record, inline: a call per span costs more than the stores
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

"""The span record's fields are declared once, by ``SpanRecord``; the hand-written fast forms follow them.

``new_record`` (the compaction hot path), ``_Unfrozen`` (its mutable twin), ``PackedSpan`` (how a buffer
holds a record) with ``unpacked`` and ``compaction._record`` (which pack and unpack it) are positional
for speed (benchmarks/stages.py). ``form_problems`` compares each with the fields by name and order, and a
record that went through every form field by field (a field a form forgot to set is an unset slot); adding
or reordering a field of ``SpanRecord`` without them fails here. The checker itself is tested with planted
forms that swap two fields or forget one.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from luckrate.adapters.otlp import compaction, records_from_request, request_from_json
from luckrate.adapters.otlp.spans import (
    RECORD_FIELDS,
    PackedSpan,
    SpanEvent,
    SpanRecord,
    _Unfrozen,
    new_record,
    unpacked,
)
from tests.builders import otlp_json_spans

FIELDS = tuple(f.name for f in dataclasses.fields(SpanRecord))


def _every_field_set() -> dict[str, Any]:
    """A value for every field, each distinct from the others of its type (a swap shows)."""
    return dict(
        trace_id=b"\x01" * 16,
        span_id=b"\x02" * 8,
        parent_id=b"\x03" * 8,
        name="execute_tool t",
        kind=3,
        start_ns=5,
        end_ns=9,
        status_code=2,
        status_message="boom",
        layout={"k": 0},
        values=("v",),
        events=(SpanEvent("gen_ai.choice", 7, (("a", 1),)),),
    )


def _packed(want: dict[str, Any]) -> PackedSpan:
    """``want`` in ``PackedSpan``'s layout, the (kind, code, message, events) tuple form of its status."""
    status = (want["kind"], want["status_code"], want["status_message"], want["events"])
    head = (*[want[f] for f in FIELDS[:4]], want["start_ns"] << 64 | want["end_ns"], status, want["layout"])
    return PackedSpan((*head, *want["values"]))


_SPAN = {
    "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
    "spanId": "00f067aa0ba902b7",
    "parentSpanId": "00f067aa0ba902b8",
    "name": "execute_tool lookup",
    "kind": 3,
    "startTimeUnixNano": "5",
    "endTimeUnixNano": "9",
    "status": {"code": 2, "message": "boom"},
    "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}}],
    "events": [{"name": "gen_ai.choice", "timeUnixNano": "7", "attributes": []}],
}


def _fields_of(record: Any) -> dict[str, Any]:
    return {f: getattr(record, f, "<unset>") for f in FIELDS}


def form_problems(
    new: Callable[..., Any] = new_record,
    unpack: Callable[[Iterable[Any]], tuple[Any, ...]] = unpacked,
    compact: Callable[..., tuple[list[Any], Any]] = records_from_request,
) -> list[str]:
    """What each form gets wrong against ``SpanRecord``'s fields; empty when they all agree."""
    problems = []
    if RECORD_FIELDS != FIELDS or _Unfrozen.__slots__ != FIELDS or SpanRecord.__slots__ != FIELDS:
        problems.append(f"slots {_Unfrozen.__slots__} or RECORD_FIELDS {RECORD_FIELDS} are not {FIELDS}")
    params = tuple(inspect.signature(new).parameters)
    if params != FIELDS:
        problems.append(f"new_record takes {params}, the record declares {FIELDS}")
    want = _every_field_set()
    if _fields_of(new(*want.values())) != want:
        problems.append(f"new_record builds {_fields_of(new(*want.values()))}")
    (back,) = unpack([_packed(want)])
    if _fields_of(back) != want:
        problems.append(f"unpacked builds {_fields_of(back)}")
    req = request_from_json(otlp_json_spans(_SPAN))
    (record,), _ = compact(req)
    (packed,), _ = compact(req, packed=True)
    (back,) = unpack([packed])
    if _fields_of(back) != _fields_of(record):
        problems.append(f"compaction packs {_fields_of(back)}, builds {_fields_of(record)}")
    for f in ("trace_id", "span_id", "parent_id"):
        if getattr(packed, f) != packed[FIELDS.index(f)]:
            problems.append(f"PackedSpan.{f} reads another item")
    return problems


def test_the_test_value_covers_every_field():
    assert tuple(_every_field_set()) == FIELDS


def test_every_form_follows_the_records_fields():
    assert form_problems() == []


def test_the_hot_path_record_is_the_frozen_record():
    """Compaction builds records through ``new_record`` (a frozen dataclass's __init__ is several times
    slower); the result must be the record SpanRecord(...) makes, and as frozen."""
    want = _every_field_set()
    fast = new_record(*want.values())
    assert fast == SpanRecord(**want) and type(fast) is SpanRecord
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.name = "other"


def test_compaction_sets_every_field_and_packs_what_it_builds():
    req = request_from_json(otlp_json_spans(_SPAN))
    (record,), _ = records_from_request(req)
    assert all(getattr(record, f) not in (None, "", (), b"", 0) for f in FIELDS if f != "values"), record
    assert compaction.records_at(req, [0])[0] == record


# Planted forms: each gets one field wrong, as an edit to one form and not the others would.
def _new_swapping_times(
    trace_id, span_id, parent_id, name, kind, end_ns, start_ns, status_code, status_message, layout, values, events
):
    return new_record(
        trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status_code, status_message, layout, values, events
    )


def _new_forgetting_events(*args: Any) -> Any:
    rec = object.__new__(_Unfrozen)
    for f, value in zip(FIELDS[:-1], args):
        object.__setattr__(rec, f, value)
    return rec


_new_forgetting_events.__signature__ = inspect.signature(new_record)  # its names are right, one store is missing


def _unpack_swapping_kind_and_code(spans: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dataclasses.replace(r, kind=r.status_code, status_code=r.kind) for r in unpacked(spans))


def _compact_dropping_the_message(req: Any, packed: bool = False) -> tuple[list[Any], Any]:
    records, rejected = records_from_request(req, packed=packed)
    if packed:
        records = [PackedSpan((*p[:5], (*p[5][:2], "", p[5][3]), *p[6:])) for p in records]
    return records, rejected


@pytest.mark.parametrize(
    "planted, found",
    [
        (dict(new=_new_swapping_times), "new_record takes"),
        (dict(new=_new_forgetting_events), "new_record builds"),
        (dict(unpack=_unpack_swapping_kind_and_code), "unpacked builds"),
        (dict(compact=_compact_dropping_the_message), "compaction packs"),
    ],
)
def test_a_planted_mismatch_is_found(planted, found):
    problems = form_problems(**planted)
    assert any(p.startswith(found) for p in problems), problems

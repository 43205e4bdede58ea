"""The span record's fields are declared once, by ``SpanRecord``; the hand-written fast forms follow them.

``new_record`` (the compaction hot path), ``_Unfrozen`` (its mutable twin), ``PackedSpan`` (how a buffer
holds a record) with ``unpacked`` and ``compaction._record`` (which pack and unpack it) are positional
for speed (benchmarks/stages.py). Adding or reordering a field of ``SpanRecord`` without them fails here:
the signature and slots are compared with the fields by name and order, and a record that went through
every form is compared field by field (a field a form forgot to set is an unset slot, an AttributeError).
"""

from __future__ import annotations

import dataclasses
import inspect
import json

from luckrate.adapters.otlp import compaction, records_from_request, request_from_json
from luckrate.adapters.otlp.spans import PackedSpan, SpanEvent, SpanRecord, _Unfrozen, new_record, unpacked

FIELDS = tuple(f.name for f in dataclasses.fields(SpanRecord))


def test_new_record_takes_the_fields_in_their_order():
    assert tuple(inspect.signature(new_record).parameters) == FIELDS


def test_the_unfrozen_twin_has_the_records_slots():
    assert _Unfrozen.__slots__ == FIELDS == SpanRecord.__slots__


def test_packed_span_reads_its_ids_where_the_record_declares_them():
    packed = PackedSpan((b"t" * 16, b"s" * 8, b"p" * 8, "n", 1 << 64 | 2, 1 << 2 | 1, {}))
    for name in ("trace_id", "span_id", "parent_id"):
        assert getattr(packed, name) == packed[FIELDS.index(name)]


def _every_field_set() -> dict:
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


def test_the_test_value_covers_every_field():
    assert tuple(_every_field_set()) == FIELDS


def test_a_record_through_every_form_keeps_every_field():
    want = _every_field_set()
    fast = new_record(*want.values())
    assert {f: getattr(fast, f) for f in FIELDS} == want == {f: getattr(SpanRecord(**want), f) for f in FIELDS}
    status = (want["kind"], want["status_code"], want["status_message"], want["events"])  # the tuple form
    packed = PackedSpan(
        (
            *[want[f] for f in FIELDS[:4]],
            want["start_ns"] << 64 | want["end_ns"],
            status,
            want["layout"],
            *want["values"],
        )
    )
    (back,) = unpacked([packed])
    assert {f: getattr(back, f) for f in FIELDS} == want


def test_compaction_packs_what_it_would_build():
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
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
                        ]
                    }
                ]
            }
        ]
    }
    req = request_from_json(json.dumps(body))
    (record,), _ = records_from_request(req)
    (packed,), _ = records_from_request(req, packed=True)
    (back,) = unpacked([packed])
    assert {f: getattr(back, f) for f in FIELDS} == {f: getattr(record, f) for f in FIELDS}
    assert all(getattr(record, f) not in (None, "", (), b"", 0) for f in FIELDS if f != "values"), record
    assert compaction.records_at(req, [0])[0] == record

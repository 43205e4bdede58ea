"""Decoding OTLP requests into bounded span records (the service's buffer format)."""

from __future__ import annotations

import re

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import records_from_request, request_from_json, request_from_protobuf
from luckrate.adapters.otlp import compaction
from tests.builders import otlp_json_spans

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
PARENT = "a3ce929d0e0e4736"


def span(**over) -> dict:
    base = {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "execute_tool refund_order",
        "kind": 1,
        "startTimeUnixNano": "1767225600123000000",
        "endTimeUnixNano": 1767225600456000000,
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "http.url", "value": {"stringValue": "dropped: not read by the adapter"}},
            {"key": "luckrate.output_ok", "value": {"boolValue": True}},
            {
                "key": "gen_ai.tool.call.arguments",
                "value": {
                    "kvlistValue": {
                        "values": [
                            {"key": "order_id", "value": {"stringValue": "99817"}},
                            {"key": "n", "value": {"intValue": "5"}},
                            {"key": "xs", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}]}}},
                        ]
                    }
                },
            },
        ],
        "events": [
            {
                "name": "gen_ai.evaluation.result",
                "timeUnixNano": "5",
                "attributes": [{"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "pass"}}],
            },
            {"name": "some.other.event"},
        ],
        "status": {"code": 2, "message": "not allowed"},
        "unknownField": {"ignored": True},
    }
    base.update(over)
    return base


def test_json_decodes_hex_ids_camel_case_and_int_forms():
    records, rejected = records_from_request(request_from_json(otlp_json_spans(span())))
    assert rejected == []
    (r,) = records
    assert (r.trace_hex, r.span_hex, r.parent_id.hex()) == (TRACE, SPAN, PARENT)
    assert (r.start_ns, r.end_ns, r.kind, r.status_code, r.status_message) == (
        1767225600123000000,
        1767225600456000000,
        1,
        2,
        "not allowed",
    )
    assert r.get("gen_ai.tool.call.arguments") == {"order_id": "99817", "n": 5, "xs": [1.5]}
    assert r.get("luckrate.output_ok") is True
    assert r.get("http.url") is None  # not a key the adapter reads: not buffered
    assert [e.name for e in r.events] == ["gen_ai.evaluation.result"]
    assert r.events[0].get("gen_ai.evaluation.score.label") == "pass"


def test_protobuf_round_trip_matches_json():
    req = request_from_json(otlp_json_spans(span()))
    again = request_from_protobuf(req.SerializeToString())
    assert records_from_request(again) == records_from_request(req)


def test_configured_output_attribute_is_kept():
    attrs = [{"key": "my.ok", "value": {"boolValue": False}}]
    req = request_from_json(otlp_json_spans(span(attributes=attrs)))
    assert records_from_request(req)[0][0].get("my.ok") is None
    assert records_from_request(req, keep_attribute="my.ok")[0][0].get("my.ok") is False


def test_root_span_has_empty_parent_including_all_zero_parent():
    req = request_from_json(
        otlp_json_spans(span(parentSpanId=""), span(spanId="00f067aa0ba902b8", parentSpanId="0" * 16))
    )
    records, rejected = records_from_request(req)
    assert rejected == [] and [r.parent_id for r in records] == [b"", b""]


@pytest.mark.parametrize(
    "over, reason",
    [
        ({"traceId": "00" * 16}, "bad_trace_id"),
        ({"traceId": "abcd"}, "bad_trace_id"),
        ({"traceId": "not hex at all"}, "bad_trace_id"),
        ({"traceId": ""}, "bad_trace_id"),
        ({"spanId": "00" * 8}, "bad_span_id"),
        ({"spanId": "abcdef"}, "bad_span_id"),
        ({"parentSpanId": "abcdef"}, "bad_parent_id"),
    ],
)
def test_unusable_spans_are_counted_not_raised(over, reason):
    req = request_from_json(otlp_json_spans(span(**over), span(**over), span(spanId="1111111111111111")))
    records, rejected = records_from_request(req)
    assert [r.span_hex for r in records] == ["1111111111111111"]
    assert [(x.reason, x.count) for x in rejected] == [(reason, 2)]
    assert reason in compaction.REJECT_REASONS


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "undecodable OTLP/JSON (Expecting value: line 1 column 1 (char 0))"),
        (b"[]", "OTLP/JSON must be an object, got list"),
        (b"\xff{", "undecodable OTLP/JSON ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
        (
            b'{"resourceSpans": 3}',
            "invalid OTLP/JSON (Failed to parse resourceSpans field: repeated field "
            "resourceSpans must be in [] which is 3 at ExportTraceServiceRequest.)",
        ),
    ],
)
def test_undecodable_json_raises_invalid_input(body, message):
    with pytest.raises(InvalidInput) as e:
        request_from_json(body)
    assert str(e.value) == message


def test_undecodable_protobuf_raises_invalid_input():
    with pytest.raises(InvalidInput, match=r"^undecodable OTLP protobuf \("):
        request_from_protobuf(b"\xff\xff\xff")


def test_strings_lists_and_counts_are_bounded():
    huge = "x" * (compaction.MAX_STRING * 3)
    attrs = [{"key": f"gen_ai.prompt.{i}.content", "value": {"stringValue": huge}} for i in range(12)]
    attrs += [
        {"key": f"gen_ai.completion.{i}.index", "value": {"intValue": i}} for i in range(compaction.MAX_ATTRIBUTES + 50)
    ]
    attrs.append({"key": "gen_ai.prompt.list", "value": {"arrayValue": {"values": [{"intValue": 1}] * 1000}}})
    attrs.append({"key": "luckrate.output_ok", "value": {"boolValue": True}})
    events = [{"name": "exception", "attributes": [{"key": f"k{i}", "value": {"intValue": i}} for i in range(100)]}]
    req = request_from_json(otlp_json_spans(span(attributes=attrs, events=events * 200)))
    (r,) = records_from_request(req)[0]
    strings = [v for _, v in r.attributes if isinstance(v, str)]
    assert max(map(len, strings)) == compaction.MAX_STRING
    assert sum(map(len, strings)) <= compaction.MAX_SPAN_TEXT
    assert len(r.attributes) == compaction.MAX_ATTRIBUTES + 1  # the output attribute is kept past the bound
    assert r.get("luckrate.output_ok") is True
    assert len(r.events) == compaction.MAX_EVENTS
    assert len(r.events[0].attributes) == compaction.MAX_EVENT_ATTRIBUTES


def test_deep_nesting_is_cut():
    value: dict = {"stringValue": "leaf"}
    for _ in range(30):
        value = {"arrayValue": {"values": [value]}}
    req = request_from_json(otlp_json_spans(span(attributes=[{"key": "gen_ai.prompt.deep", "value": value}])))
    v = records_from_request(req)[0][0].get("gen_ai.prompt.deep")
    depth = 0
    while isinstance(v, list):
        v, depth = v[0], depth + 1
    assert v is None and depth == compaction.MAX_DEPTH


def test_empty_request_is_fine():
    assert records_from_request(ExportTraceServiceRequest()) == ([], [])
    assert records_from_request(request_from_json(b"{}")) == ([], [])


def test_only_attributes_the_adapter_reads_are_kept():
    attrs = [
        {"key": k, "value": {"stringValue": "v"}}
        for k in (
            "gen_ai.tool.name",
            "gen_ai.usage.input_tokens",
            "gen_ai.request.model",
            "server.address",
            "llm.input_messages.0.message.role",
            "session.id",
        )
    ]
    (r,), _ = records_from_request(request_from_json(otlp_json_spans(span(attributes=attrs))))
    assert [k for k, _ in r.attributes] == ["gen_ai.tool.name", "llm.input_messages.0.message.role"]


def test_every_key_the_convention_readers_ask_for_is_kept():
    # Compaction keeps an explicit list of keys; a reader asking for one that is not on it would see None
    # on every live span (and pass its unit tests, which build records by hand). Read the readers' source.
    import pathlib

    otlp = pathlib.Path(compaction.__file__).parent
    asked = {k for path in otlp.rglob("*.py") for k in re.findall(r'rec\.get\("([^"]+)"', path.read_text())}
    asked |= {"gen_ai.input.messages", "gen_ai.output.messages"}  # messages.py passes these as variables
    assert len(asked) > 20
    from luckrate.adapters.otlp.conventions import interning

    tables = interning()
    assert sorted(k for k in asked if tables.key_rule(k)[0] is None) == []


def _packed_request() -> ExportTraceServiceRequest:
    """Spans whose kind and status take either packed form, with times at both ends of their range."""
    big = 2**64 - 1
    return request_from_json(
        otlp_json_spans(
            span(),  # status message and events: the tuple form
            span(
                spanId="00f067aa0ba902b8",
                status={"code": 1},
                events=[],
                startTimeUnixNano="0",
                endTimeUnixNano=str(big),
            ),  # the small-int form
            span(spanId="00f067aa0ba902b9", kind=64, status={}, events=[]),  # a kind past the small int
            span(
                spanId="00f067aa0ba902ba",
                kind=-3,
                status={"code": 7},
                events=[],
                startTimeUnixNano=str(big),
                endTimeUnixNano="1",
            ),
            span(spanId="00f067aa0ba902bb", parentSpanId="", attributes=[], events=[]),
        )
    )


def test_packed_spans_unpack_to_the_records_compaction_builds():
    import dataclasses

    from luckrate.adapters.otlp.spans import PackedSpan, SpanRecord, unpacked

    FIELDS_OF_RECORD = [f.name for f in dataclasses.fields(SpanRecord)]
    req = _packed_request()
    records, _ = records_from_request(req)
    packed, rejected = records_from_request(req, packed=True)
    assert rejected == [] and len(packed) == len(records) == 5
    assert all(type(p) is PackedSpan for p in packed)
    assert [(p.trace_id, p.span_id, p.parent_id) for p in packed] == [
        (r.trace_id, r.span_id, r.parent_id) for r in records
    ]
    back = unpacked(packed)
    assert all(type(r) is SpanRecord for r in back)
    assert [{f: getattr(r, f) for f in FIELDS_OF_RECORD} for r in back] == [
        {f: getattr(r, f) for f in FIELDS_OF_RECORD} for r in records
    ]
    assert back == tuple(records)
    assert (back[1].start_ns, back[1].end_ns, back[3].kind, back[3].status_code) == (0, 2**64 - 1, -3, 7)
    assert unpacked(packed[1:2]) == (records[1],)
    assert unpacked(records) == tuple(records)  # records pass through


def test_a_packed_span_is_smaller_than_its_record():
    import sys

    req = _packed_request()
    (rec, *_), _ = records_from_request(req)
    (packed, *_), _ = records_from_request(req, packed=True)

    def size(r) -> int:  # the objects a span owns alone (shared names, layouts and ids aside)
        own = [r, r.values, r.start_ns, r.end_ns] if not isinstance(r, tuple) else [r, r[4]]
        return sum(map(sys.getsizeof, own))

    assert size(packed) < size(rec) - 80

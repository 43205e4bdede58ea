"""Compaction shares attribute keys, span names and vocabulary values between buffered records (it halved
resident bytes per buffered span, docs/benchmarks.md). Span data is attacker-influenced, so the shared
table must stay bounded, and sharing must never change what a record says."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from luckrate.adapters.otlp import records_from_request, sharing
from luckrate.adapters.otlp import spans as spans_module
from luckrate.adapters.otlp.conventions import interning


def _request(n_spans: int, attrs_of) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i in range(n_spans):
        span = ss.spans.add(
            trace_id=(i + 1).to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"), name=f"execute_tool t{i % 3}"
        )
        span.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs_of(i))
    return req


CASES = [
    # (what, attributes of span i)
    ("distinct keys", lambda i: [(f"gen_ai.prompt.{i}.x{j}", "v") for j in range(4)]),
    ("distinct vocabulary values", lambda i: [("gen_ai.tool.name", f"tool-{i}"), ("gen_ai.operation.name", f"op{i}")]),
    ("long vocabulary values", lambda i: [("gen_ai.tool.name", f"{i}-" + "x" * 500)]),
]


@pytest.mark.parametrize(("what", "attrs_of"), CASES, ids=[c[0] for c in CASES])
def test_shared_table_stays_bounded(what, attrs_of):
    tables = interning()
    records, _ = records_from_request(_request(3 * sharing.SHARED_MAX // 4, attrs_of), tables=tables)
    more = _request(3 * sharing.SHARED_MAX // 4, lambda i: attrs_of(i + 10**6))
    records += records_from_request(more, tables=tables)[0]
    assert len(tables.strings) <= sharing.SHARED_MAX
    assert len(tables.key_rules) <= sharing.SHARED_MAX
    shared_strings = list(tables.strings)
    assert all(len(v) <= sharing.SHARED_LENGTH for v in shared_strings)
    assert records[5].attributes == tuple(attrs_of(5))  # sharing or not, the record says what was sent


def test_records_share_keys_names_layouts_and_vocabulary_values():
    tables = interning()

    def attrs(i):
        return [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.call.arguments", f'{{"n": {i}}}')]

    a, _ = records_from_request(_request(2, attrs), tables=tables)
    b, _ = records_from_request(_request(2, attrs), tables=tables)
    assert a[1].name is b[1].name
    assert a[1].layout is b[1].layout  # one key -> position dict for every record with these keys
    assert a[1].values[0] is b[1].values[0]  # a vocabulary value
    assert a[1].values[1] is not b[1].values[1] and a[1].values[1] == b[1].values[1]  # a per-span value
    assert a[1].attributes == b[1].attributes == tuple(attrs(1))
    other, _ = records_from_request(_request(2, attrs), tables=interning())
    assert other[1].layout is not a[1].layout and other[1].layout == a[1].layout  # tables are per owner


def test_layout_table_stays_bounded_and_shares_again_after_a_flood(monkeypatch):
    # Attacker-chosen key sequences, each new: the table never passes its bound, and once the flood
    # is over the common layout is shared again (the table starts afresh rather than stay full).
    tables = interning()
    monkeypatch.setattr(spans_module, "LAYOUTS_MAX", 50)
    records, _ = records_from_request(
        _request(120, lambda i: [(f"gen_ai.prompt.{i}.content", "v"), ("gen_ai.tool.call.id", "w")]), tables=tables
    )
    assert len(tables.layouts) <= 50
    assert [r.attributes for r in records[48:52]] == [
        ((f"gen_ai.prompt.{i}.content", "v"), ("gen_ai.tool.call.id", "w")) for i in range(48, 52)
    ]
    common, _ = records_from_request(
        _request(3, lambda i: [("gen_ai.tool.name", "t"), ("gen_ai.tool.call.id", str(i))]), tables=tables
    )
    assert common[0].layout is common[1].layout is common[2].layout


def test_a_repeated_key_keeps_its_first_value():
    (rec,), _ = records_from_request(
        _request(1, lambda i: [("gen_ai.tool.name", "a"), ("gen_ai.tool.call.id", "1"), ("gen_ai.tool.name", "b")])
    )
    assert rec.get("gen_ai.tool.name") == "a"
    assert rec.attributes == (("gen_ai.tool.name", "a"), ("gen_ai.tool.call.id", "1"))


def test_a_fact_about_a_layout_is_worked_out_once_and_kept_in_the_layout():
    """Facts about a layout's keys (which conventions may read a span) live in the shared layout, so they
    go with the compaction tables that made it: no module-level cache holds layouts or their facts."""
    import pickle

    seen = []

    def keys(layout):
        seen.append(tuple(layout))
        return frozenset(layout)

    fact = spans_module.layout_fact(keys)
    tables = interning()
    records, _ = records_from_request(_request(6, lambda i: [("gen_ai.tool.name", "lookup")]), tables=tables)
    layouts = {id(r.layout) for r in records}
    assert len(layouts) == 1 and type(records[0].layout) is spans_module.SharedLayout
    assert [fact(r.layout) for r in records] == [frozenset({"gen_ai.tool.name"})] * 6
    assert seen == [("gen_ai.tool.name",)]  # once for the six records
    assert records[0].layout.facts == {keys: frozenset({"gen_ai.tool.name"})}
    plain = {"gen_ai.tool.name": 0}  # a layout no table shares: worked out each time, kept nowhere
    assert fact(plain) == fact(plain) == frozenset({"gen_ai.tool.name"}) and len(seen) == 3
    back = pickle.loads(pickle.dumps(records[0].layout))
    assert back == records[0].layout and type(back) is spans_module.SharedLayout and back.facts == {}

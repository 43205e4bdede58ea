"""Compaction shares attribute keys, span names and vocabulary values between buffered records (it halved
resident bytes per buffered span, docs/benchmarks.md). Span data is attacker-influenced, so the shared
table must stay bounded, and sharing must never change what a record says."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from luckrate.adapters.otlp import records_from_request
from luckrate.adapters.otlp import spans as spans_module


def _request(n_spans: int, attrs_of) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i in range(n_spans):
        span = ss.spans.add(trace_id=(i + 1).to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"),
                            name=f"execute_tool t{i % 3}")
        span.attributes.extend(KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs_of(i))
    return req


CASES = [
    # (what, attributes of span i)
    ("distinct keys", lambda i: [(f"gen_ai.x{i}.{j}", "v") for j in range(4)]),
    ("distinct vocabulary values", lambda i: [("gen_ai.tool.name", f"tool-{i}"), ("gen_ai.operation.name", f"op{i}")]),
    ("long vocabulary values", lambda i: [("gen_ai.tool.name", f"{i}-" + "x" * 500)]),
]


@pytest.mark.parametrize(("what", "attrs_of"), CASES, ids=[c[0] for c in CASES])
def test_shared_table_stays_bounded(monkeypatch, what, attrs_of):
    monkeypatch.setattr(spans_module, "_shared", {})
    records, _ = records_from_request(_request(3 * spans_module.SHARED_MAX // 4, attrs_of))
    records += records_from_request(_request(3 * spans_module.SHARED_MAX // 4, lambda i: attrs_of(i + 10**6)))[0]
    assert len(spans_module._shared) <= spans_module.SHARED_MAX
    shared_strings = [v for entry in spans_module._shared for v in (entry if isinstance(entry, tuple) else (entry,))]
    assert all(len(v) <= spans_module.SHARED_LENGTH for v in shared_strings)
    assert records[5].attributes == tuple(attrs_of(5))  # sharing or not, the record says what was sent


def test_records_share_keys_names_and_vocabulary_pairs():
    attrs = lambda i: [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.call.arguments", f'{{"n": {i}}}')]
    a, _ = records_from_request(_request(2, attrs))
    b, _ = records_from_request(_request(2, attrs))
    assert a[1].name is b[1].name
    assert a[1].attributes[0] is b[1].attributes[0]  # the whole (key, vocabulary value) pair
    assert a[1].attributes[1][0] is b[1].attributes[1][0]  # the key of a per-span value
    assert a[1].attributes == b[1].attributes

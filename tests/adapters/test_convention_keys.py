"""The attribute keys the convention readers read are declared once, each in the module of the convention
that defines it; the registry (``conventions/__init__.py``) collects them, and compaction keeps exactly those.

Compaction once kept its own list of the GenAI, OpenInference and Traceloop keys beside the other readers'
``KEYS`` and a third list in definitions.py: a key added to a reader and not to compaction's list read None
on every live span."""

from __future__ import annotations

import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from luckrate.adapters.otlp import conventions, messages, records_from_request
from luckrate.adapters.otlp.conventions import unmarked

READERS = sorted(
    {sys.modules[c.classify.__module__] for c in conventions.CONVENTIONS} | {messages, unmarked},
    key=lambda m: m.__name__,
)


def _declared(name: str) -> dict[str, list[str]]:
    """Each key some reader module declares under ``name``, with the modules that declare it."""
    owners: dict[str, list[str]] = {}
    for module in READERS:
        for key in getattr(module, name, ()):
            owners.setdefault(key, []).append(module.__name__.rsplit(".", 1)[1])
    return owners


def test_each_key_is_declared_by_one_reader():
    assert {k: owners for k, owners in _declared("KEYS").items() if len(owners) > 1} == {}


def test_the_registry_collects_what_the_readers_declare():
    assert conventions.KEYS == set(_declared("KEYS"))
    assert set(conventions.PREFIXES) == set(_declared("PREFIXES"))
    assert conventions.VOCABULARY == set(_declared("VOCABULARY"))
    assert conventions.VOCABULARY <= conventions.KEYS
    definitions = {key for m in READERS for key in getattr(m, "TOOL_DEFINITIONS", {}).values()}
    assert {k for keys in conventions.TOOL_DEFINITION_KEYS.values() for k in keys} == definitions


def _span_with(keys: list[str]) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    span = (
        req.resource_spans.add()
        .scope_spans.add()
        .spans.add(trace_id=bytes(range(1, 17)), span_id=bytes(range(1, 9)), name="s")
    )
    span.attributes.extend(KeyValue(key=k, value=AnyValue(string_value="v")) for k in keys)
    return req


def test_compaction_keeps_every_declared_key_and_no_other():
    declared = sorted(conventions.KEYS)
    flattened = [f"{prefix}0.message.role" for prefix in conventions.PREFIXES]
    sent = declared + flattened + ["not.read.by.any.convention", "gen_ai.usage.input_tokens"]
    (rec,), _ = records_from_request(_span_with(sent))
    assert [k for k, _ in rec.attributes] == declared + flattened

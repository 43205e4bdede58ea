"""Decode OTLP trace and logs export requests: protobuf (upb) and OTLP/JSON, with a clear error for a body
that is neither. What the spans in a request mean is compaction.py's business; this is only the wire."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format, unknown_fields
from google.protobuf.message import DecodeError
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput


def request_from_protobuf(body: bytes) -> ExportTraceServiceRequest:
    """Decode a binary ``ExportTraceServiceRequest``; InvalidInput when it is not one."""
    return _from_protobuf(body, ExportTraceServiceRequest())


def logs_request_from_protobuf(body: bytes) -> ExportLogsServiceRequest:
    """Decode a binary ``ExportLogsServiceRequest``; InvalidInput when it is not one."""
    return _from_protobuf(body, ExportLogsServiceRequest())


def _from_protobuf(body: bytes, req: Any) -> Any:
    try:
        req.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise InvalidInput(f"undecodable OTLP protobuf ({e or type(e).__name__})") from None
    if not req.ListFields() and len(unknown_fields.UnknownFieldSet(req)):
        field = req.DESCRIPTOR.fields[0].name
        raise InvalidInput(f"not an OTLP {_SIGNAL[field]} export: no {field} (field 1), only unknown fields")
    return req


_SIGNAL = {"resource_spans": "trace", "resource_logs": "logs"}


def request_from_json(body: bytes | str) -> ExportTraceServiceRequest:
    """Decode OTLP/JSON: hex ids, integer enums, lowerCamelCase keys, 64-bit ints as strings or
    numbers, unknown fields ignored. An id that is not hex decodes to empty bytes so the span is
    rejected (counted) instead of failing the whole request."""
    return _from_json(body, ExportTraceServiceRequest(), _hex_ids_to_base64)


def logs_request_from_json(body: bytes | str) -> ExportLogsServiceRequest:
    """Decode an OTLP/JSON logs request, as ``request_from_json`` does a traces one; a record whose trace
    id is not hex has none (and is counted as such)."""
    return _from_json(body, ExportLogsServiceRequest(), _log_hex_ids_to_base64)


def _from_json(body: bytes | str, req: Message, convert_ids: Any) -> Any:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:  # ValueError: also an integer over 4300 digits
        raise InvalidInput(f"undecodable OTLP/JSON ({str(e)[:200]})") from None
    if not isinstance(doc, dict):
        raise InvalidInput(f"OTLP/JSON must be an object, got {type(doc).__name__}")
    _check_top_level(doc, req.DESCRIPTOR.fields[0])
    try:
        convert_ids(doc)
        json_format.ParseDict(doc, req, ignore_unknown_fields=True)
    except (
        json_format.ParseError,
        TypeError,
        AttributeError,
        RecursionError,
        ValueError,
        OverflowError,
        SystemError,
    ) as e:
        # SystemError: protobuf's upb raises it for a field name holding a lone surrogate ("\ud800").
        raise InvalidInput(f"invalid OTLP/JSON ({str(e)[:200]})") from None
    return req


def _check_top_level(doc: dict[str, Any], field: Any) -> None:
    """Refuse an object that is not an export at all (``{"hello": "world"}``, a trajectory-form run).

    ``{}`` is a legal empty export. Unknown keys beside ``resourceSpans`` (``resourceLogs`` for logs) are
    ignored, as OTLP requires of receivers (a newer sender's fields); without it nothing says the body is
    OTLP."""
    if doc and field.json_name not in doc and field.name not in doc:
        keys = ", ".join(repr(str(k)[:40]) for k in list(doc)[:5])
        raise InvalidInput(
            f"not an OTLP {_SIGNAL[field.name]} export: unknown top-level key(s) {keys} (expected {field.json_name!r})"
        )


def _hex_ids_to_base64(doc: dict[str, Any]) -> None:
    # protobuf's JSON parser expects base64 for bytes; OTLP/JSON sends trace and span ids as hex.
    for span in _json_spans(doc):
        _convert_ids(span, ("traceId", "spanId", "parentSpanId"))
        for link in span.get("links") or ():
            if isinstance(link, dict):
                _convert_ids(link, ("traceId", "spanId"))


def _log_hex_ids_to_base64(doc: dict[str, Any]) -> None:
    for rl in _dicts(doc.get("resourceLogs")):
        for sl in _dicts(rl.get("scopeLogs")):
            for record in _dicts(sl.get("logRecords")):
                _convert_ids(record, ("traceId", "spanId"))


def _json_spans(doc: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for rs in _dicts(doc.get("resourceSpans")):
        for ss in _dicts(rs.get("scopeSpans")):
            yield from _dicts(ss.get("spans"))


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, list):
        return (v for v in value if isinstance(v, dict))
    return ()


def _convert_ids(obj: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            obj[key] = base64.b64encode(_hex_bytes(value)).decode("ascii")


def _hex_bytes(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        return b""

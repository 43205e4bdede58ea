"""Requests → trajectories (one trace = one run), and the CLI's file readers."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.assemble import trajectory_from_spans
from luckrate.adapters.otlp.compaction import records_from_request
from luckrate.adapters.otlp.output import OutputRule
from luckrate.adapters.otlp.requests import request_from_json, request_from_protobuf
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.step import Trajectory


def trajectories_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """Group the request's spans by trace id (first-seen order) and build one trajectory per trace.

    Spans that cannot be kept (bad ids) raise InvalidInput here: a file is not a live stream, and
    silently dropping part of it would grade a different run."""
    records, rejected = records_from_request(req, keep_attribute=rule.attribute)
    if rejected:
        detail = ", ".join(f"{r.count} {r.reason}" for r in rejected)
        raise InvalidInput(f"spans that cannot be read: {detail}")
    traces: dict[bytes, list[SpanRecord]] = {}
    for rec in records:
        traces.setdefault(rec.trace_id, []).append(rec)
    return [trajectory_from_spans(spans, rule) for spans in traces.values()]


def read_otlp(data: bytes, source: str, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """One binary ExportTraceServiceRequest per file; errors are prefixed with ``source``."""
    try:
        return _non_empty(trajectories_from_request(request_from_protobuf(data), rule))
    except InvalidInput as e:
        raise e.at(source) from None


def read_otlp_json(text: str | bytes, source: str, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """OTLP/JSON: one request per file, or one per line (the Collector's file exporter writes lines).
    Spans of one trace spread over several lines still make one trajectory."""
    merged = _json_request(text, source)
    try:
        return _non_empty(trajectories_from_request(merged, rule))
    except InvalidInput as e:
        raise e.at(source) from None


def _json_request(text: str | bytes, source: str) -> ExportTraceServiceRequest:
    body = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if not body.strip():
        raise InvalidInput("empty file", source)
    try:
        requests = [request_from_json(body)]
    except InvalidInput as whole:
        lines = [(n, line) for n, line in enumerate(body.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise whole.at(source) from None
        requests = [_line(line, f"{source}:{n}") for n, line in lines]
    merged = ExportTraceServiceRequest()
    for req in requests:
        merged.resource_spans.extend(req.resource_spans)
    return merged


def read_otlp_runs(data: bytes, source: str, fmt: str, rule: OutputRule = OutputRule()
                   ) -> tuple[list[Trajectory], list[InvalidInput]]:
    """``read_otlp`` (fmt ``otlp``) or ``read_otlp_json`` (``otlp-json``), except that a trace that makes
    no run (no agent, model or tool span: an HTTP request traced beside the agents) is returned as its
    error beside the runs instead of failing the file: what ``luckrate suggest`` reads from a day of
    mixed traffic. A file that does not decode, or spans that cannot be kept, still raise."""
    try:
        req = request_from_protobuf(data) if fmt == "otlp" else _json_request(data, source)
        records, rejected = records_from_request(req, keep_attribute=rule.attribute)
        if rejected:
            raise InvalidInput("spans that cannot be read: " + ", ".join(f"{r.count} {r.reason}" for r in rejected))
    except InvalidInput as e:
        raise e.at(source) from None
    traces: dict[bytes, list[SpanRecord]] = {}
    for rec in records:
        traces.setdefault(rec.trace_id, []).append(rec)
    runs, errors = [], []
    for spans in traces.values():
        try:
            runs.append(trajectory_from_spans(spans, rule))
        except InvalidInput as e:
            errors.append(e.at(source))
    return runs, errors


def _line(line: str, where: str) -> ExportTraceServiceRequest:
    try:
        return request_from_json(line)
    except InvalidInput as e:
        raise e.at(where) from None


def _non_empty(trajectories: list[Trajectory]) -> list[Trajectory]:
    if not trajectories:
        raise InvalidInput("no spans")
    return trajectories

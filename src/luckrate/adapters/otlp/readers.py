"""Requests → trajectories (one trace = one run), and the CLI's file readers.

A real service's export holds the traces of HTTP requests and database calls beside its agent runs: a
file reader skips every trace with no agent, model or tool span and lists it in ``Runs.skipped``; a
file with no run at all is refused."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.assemble import NoAgentSpan, trajectory_from_spans
from luckrate.adapters.otlp.compaction import records_from_request
from luckrate.adapters.otlp.output import OutputRule
from luckrate.adapters.otlp.requests import request_from_json, request_from_protobuf
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.step import Trajectory


class Runs(list[Trajectory]):
    """The trajectories read from one file, and the traces skipped because they hold no run."""

    skipped: tuple[str, ...] = ()
    """Hex ids of the traces with no agent, model or tool span, in file order."""


def trajectories_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """Group the request's spans by trace id (first-seen order) and build one trajectory per trace.

    Spans that cannot be kept (bad ids) raise InvalidInput here: a file is not a live stream, and
    silently dropping part of it would grade a different run. A trace with no agent, model or tool
    span raises too; ``runs_from_request`` skips it."""
    return [trajectory_from_spans(spans, rule) for spans in _traces(req, rule)]


def runs_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule()) -> Runs:
    """Like ``trajectories_from_request``, but traces with no agent, model or tool span are skipped and
    listed in ``skipped``; when every trace is such a trace, the first one's error is raised (for
    several, naming how many)."""
    runs, skipped, first = Runs(), [], None
    for spans in _traces(req, rule):
        try:
            runs.append(trajectory_from_spans(spans, rule))
        except NoAgentSpan as e:
            skipped.append(spans[0].trace_hex)
            first = first or e
    if first is not None and not runs:
        if len(skipped) == 1:
            raise first
        raise InvalidInput(f"none of its {len(skipped)} traces holds an agent, model or tool span "
                           f"(first: {first})")
    runs.skipped = tuple(skipped)
    return runs


def _traces(req: ExportTraceServiceRequest, rule: OutputRule) -> list[list[SpanRecord]]:
    records, rejected = records_from_request(req, keep_attribute=rule.attribute)
    if rejected:
        detail = ", ".join(f"{r.count} {r.reason}" for r in rejected)
        raise InvalidInput(f"spans that cannot be read: {detail}")
    traces: dict[bytes, list[SpanRecord]] = {}
    for rec in records:
        traces.setdefault(rec.trace_id, []).append(rec)
    return list(traces.values())


def read_otlp(data: bytes, source: str, rule: OutputRule = OutputRule()) -> Runs:
    """One binary ExportTraceServiceRequest per file; errors are prefixed with ``source``."""
    try:
        return _non_empty(runs_from_request(request_from_protobuf(data), rule))
    except InvalidInput as e:
        raise e.at(source) from None


def read_otlp_json(text: str | bytes, source: str, rule: OutputRule = OutputRule()) -> Runs:
    """OTLP/JSON: one request per file, or one per line (the Collector's file exporter writes lines).
    Spans of one trace spread over several lines still make one trajectory."""
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
    try:
        return _non_empty(runs_from_request(merged, rule))
    except InvalidInput as e:
        raise e.at(source) from None


def _line(line: str, where: str) -> ExportTraceServiceRequest:
    try:
        return request_from_json(line)
    except InvalidInput as e:
        raise e.at(where) from None


def _non_empty(trajectories: Runs) -> Runs:
    if not trajectories:
        raise InvalidInput("no spans")
    return trajectories

"""Requests → trajectories (one trace = one run), and the CLI's file readers: trace files, and logs files
whose records are joined to the traces of the trace files beside them (logs.py)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.assemble import trajectory_from_spans
from luckrate.adapters.otlp.compaction import records_from_request
from luckrate.adapters.otlp.logs import LogEvent, events_from_request, joined
from luckrate.adapters.otlp.output import OutputRule
from luckrate.adapters.otlp.requests import (
    logs_request_from_json,
    logs_request_from_protobuf,
    request_from_json,
    request_from_protobuf,
)
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.step import Trajectory


def trajectories_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule(),
                              logs: dict[bytes, list[LogEvent]] | None = None) -> list[Trajectory]:
    """Group the request's spans by trace id (first-seen order) and build one trajectory per trace, with
    ``logs`` (log events by trace id) joined to their traces' spans.

    Spans that cannot be kept (bad ids) raise InvalidInput here: a file is not a live stream, and
    silently dropping part of it would grade a different run."""
    records, rejected = records_from_request(req, keep_attribute=rule.attribute)
    if rejected:
        detail = ", ".join(f"{r.count} {r.reason}" for r in rejected)
        raise InvalidInput(f"spans that cannot be read: {detail}")
    traces: dict[bytes, list[SpanRecord]] = {}
    for rec in records:
        traces.setdefault(rec.trace_id, []).append(rec)
    logs = logs or {}
    return [trajectory_from_spans(joined(spans, logs.get(tid, ())), rule) for tid, spans in traces.items()]


def read_otlp(data: bytes, source: str, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """One binary ExportTraceServiceRequest per file; errors are prefixed with ``source``."""
    return read_otlp_files([(data, source)], rule=rule)


def read_otlp_json(text: str | bytes, source: str, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """OTLP/JSON: one request per file, or one per line (the Collector's file exporter writes lines).
    Spans of one trace spread over several lines still make one trajectory."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return read_otlp_files([(data, source)], json=True, rule=rule)


def read_otlp_files(files: Sequence[tuple[bytes, str]], logs: Sequence[tuple[bytes, str]] = (), *,
                    json: bool = False, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """The trajectories of the trace files among ``files`` (``(data, source)`` pairs), with the records of
    the logs files joined to their traces: ``logs`` are logs files, and a file among ``files`` that holds
    an ExportLogsServiceRequest is one too (told apart by content). A record naming a trace no trace file
    holds, or naming no trace, is bad input: grading without it would grade a different run."""
    traces: list[tuple[ExportTraceServiceRequest, str]] = []
    events: dict[bytes, list[LogEvent]] = {}
    for data, source in files:
        req = _decode(data, source, json, logs_only=False)
        if isinstance(req, ExportLogsServiceRequest):
            _add_events(req, source, events)
        else:
            traces.append((req, source))
    for data, source in logs:
        _add_events(_decode(data, source, json, logs_only=True), source, events)
    if not traces:
        raise InvalidInput("only log records: give the trace files they belong to", files[0][1] if files else "")
    runs: list[Trajectory] = []
    for req, source in traces:
        try:
            runs.extend(_non_empty(trajectories_from_request(req, rule, events)))
        except InvalidInput as e:
            raise e.at(source) from None
    unjoined = set(events) - {bytes.fromhex(t.id) for t in runs if _is_hex(t.id)}
    if unjoined:
        first = min(unjoined).hex()
        n = sum(len(events[t]) for t in unjoined)
        raise InvalidInput(f"{n} log record(s) of {len(unjoined)} trace(s) no trace file holds (trace {first})")
    return runs


def _add_events(req: ExportLogsServiceRequest, source: str, into: dict[bytes, list[LogEvent]]) -> None:
    found, rejected = events_from_request(req)
    unjoinable = [r for r in rejected if r.reason != "not_read"]  # others' log lines are not ours to grade
    if unjoinable:
        detail = ", ".join(f"{r.count} {r.reason}" for r in unjoinable)
        raise InvalidInput(f"log records that cannot be joined to a trace: {detail}", source)
    for event in found:
        into.setdefault(event.trace_id, []).append(event)


def _decode(data: bytes, source: str, json: bool, logs_only: bool):
    if json:
        return _decode_json(data, source, logs_only)  # locates its own errors (a line of the file)
    try:
        if logs_only or _is_logs_protobuf(data):
            return logs_request_from_protobuf(data)
        return request_from_protobuf(data)
    except InvalidInput as e:
        raise e.at(source) from None


def _is_logs_protobuf(data: bytes) -> bool:
    """Told apart by content: a binary ExportLogsServiceRequest often fails to parse as a traces request,
    and when it does parse (the two share their outer field numbers) its spans have no trace id (a
    LogRecord's field 1 is a fixed64 time). So: a logs file is one that parses as logs, holds log records,
    and has no span with a trace id when read as traces."""
    try:
        logs = logs_request_from_protobuf(data)
    except InvalidInput:
        return False
    if not any(sl.log_records for rl in logs.resource_logs for sl in rl.scope_logs):
        return False
    try:
        traces = request_from_protobuf(data)
    except InvalidInput:
        return True
    return not any(len(s.trace_id) == 16 for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans)


def _decode_json(data: bytes, source: str, logs_only: bool):
    body = data.decode("utf-8", "replace")
    if not body.strip():
        raise InvalidInput("empty file", source)
    lines = [(n, line) for n, line in enumerate(body.splitlines(), 1) if line.strip()]
    logs = logs_only or '"resourceLogs"' in lines[0][1] and '"resourceSpans"' not in lines[0][1]
    decode, field = (logs_request_from_json, "resource_logs") if logs else (request_from_json, "resource_spans")
    try:
        return decode(body)
    except InvalidInput as whole:
        if len(lines) < 2:
            raise whole.at(source) from None
    merged = ExportLogsServiceRequest() if logs else ExportTraceServiceRequest()
    for n, line in lines:
        try:
            getattr(merged, field).extend(getattr(decode(line), field))
        except InvalidInput as e:
            raise e.at(f"{source}:{n}") from None
    return merged


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
        return True
    except ValueError:
        return False


def _non_empty(trajectories: list[Trajectory]) -> list[Trajectory]:
    if not trajectories:
        raise InvalidInput("no spans")
    return trajectories


def read_otlp_runs(data: bytes, source: str, fmt: str, rule: OutputRule = OutputRule()
                   ) -> tuple[list[Trajectory], list[InvalidInput]]:
    """``read_otlp`` (fmt ``otlp``) or ``read_otlp_json`` (``otlp-json``), except that a trace that makes
    no run (no agent, model or tool span: an HTTP request traced beside the agents) is returned as its
    error beside the runs instead of failing the file: what ``luckrate suggest`` reads from a day of
    mixed traffic. A file that does not decode, or spans that cannot be kept, still raise; a logs file
    holds no runs of its own."""
    req = _decode(data, source, fmt == "otlp-json", logs_only=False)
    if isinstance(req, ExportLogsServiceRequest):
        return [], []
    try:
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

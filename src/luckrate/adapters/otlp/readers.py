"""Requests → trajectories, and the CLI's file readers: trace files, and logs files whose records are
joined to the traces of the trace files beside them (logs.py).

A real service's export holds the traces of HTTP requests and database calls beside its agent runs: a
file reader skips every trace with no agent, model or tool span and lists it in ``Runs.skipped``, a
file holding nothing else too when other files hold runs; only a batch with no run at all is refused. The traces of one run are grouped first (runs.py: by span links
unless told otherwise); what grouping did is counted in ``Runs.assembly``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import NoReturn

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import runs as grouping
from luckrate.adapters.otlp.assemble import NoAgentSpan, trajectory_from_run, trajectory_from_spans
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


class Runs(list[Trajectory]):
    """The trajectories read from one file, and the traces skipped because they hold no run."""

    skipped: tuple[str, ...] = ()
    """Hex ids of the traces with no agent, model or tool span, in file order."""
    skipped_in: Mapping[str, int] = MappingProxyType({})
    """How many of ``skipped`` each file held (``read_otlp_files``: by source)."""
    assembly: Mapping[str, int] = MappingProxyType({})
    """Counts of what grouping traces into runs did (runs.py): ``traces_joined`` (traces graded as part of
    an earlier-started trace's run), ``links_missing``, ``links_dropped``, ``runs_split``,
    ``conversation_ids_too_long``; only non-zero counts."""


def trajectories_from_request(
    req: ExportTraceServiceRequest, rule: OutputRule = OutputRule(), logs: dict[bytes, list[LogEvent]] | None = None
) -> list[Trajectory]:
    """Group the request's spans by trace id (first-seen order) and build one trajectory per trace, with
    ``logs`` (log events by trace id) joined to their traces' spans.

    Spans that cannot be kept (bad ids) raise InvalidInput here: a file is not a live stream, and
    silently dropping part of it would grade a different run. A trace with no agent, model or tool
    span raises too; ``runs_from_request`` skips it."""
    logs = logs or {}
    return [trajectory_from_spans(joined(spans, logs.get(spans[0].trace_id, ())), rule) for spans in _traces(req, rule)]


def runs_from_request(
    req: ExportTraceServiceRequest,
    rule: OutputRule = OutputRule(),
    runs_by: str = grouping.DEFAULT_MODE,
    logs: dict[bytes, list[LogEvent]] | None = None,
) -> Runs:
    """Like ``trajectories_from_request``, but the traces of one run are graded together (``runs_by``:
    runs.py) and a run with no agent, model or tool span is skipped, its traces listed in ``skipped``;
    when every run is such a run, the first one's error is raised (for several, naming how many)."""
    runs, first = _request_runs(req, rule, runs_by, logs or {})
    if first is not None and not runs:
        _refuse(first, len(runs.skipped))
    return runs


def _request_runs(
    req: ExportTraceServiceRequest, rule: OutputRule, runs_by: str, logs: dict[bytes, list[LogEvent]]
) -> tuple[Runs, NoAgentSpan | None]:
    """The request's runs (its traces with no agent, model or tool span in ``skipped``), and the first
    such trace's error (None when every trace made a run)."""
    skipped: list[str] = []
    runs, first = Runs(), None
    assembly = grouping.Assembly()
    for members, found in _runs(req, rule, runs_by, logs, assembly):
        if isinstance(found, NoAgentSpan):
            skipped.extend(t.hex() for t in members)
            first = first or found
        elif isinstance(found, InvalidInput):
            raise found
        else:
            runs.append(found)
    runs.skipped = tuple(skipped)
    runs.assembly = dict(assembly.counts)
    return runs, first


def _refuse(first: NoAgentSpan, skipped: int) -> NoReturn:
    if skipped == 1:
        raise first
    raise InvalidInput(f"none of its {skipped} traces holds an agent, model or tool span (first: {first})")


def _runs(
    req: ExportTraceServiceRequest,
    rule: OutputRule,
    runs_by: str,
    logs: dict[bytes, list[LogEvent]],
    assembly: grouping.Assembly,
) -> Iterator[tuple[list[bytes], Trajectory | InvalidInput]]:
    """Each run of the request (its trace ids, in start order) with its trajectory, or the error reading it."""
    if runs_by not in grouping.MODES:
        raise ValueError(f"runs_by must be one of {', '.join(grouping.MODES)}")
    traces = {spans[0].trace_id: joined(spans, logs.get(spans[0].trace_id, ())) for spans in _traces(req, rule)}
    found = grouping.ties(req, assembly, runs_by == "conversation") if runs_by != "trace" else grouping.Ties((), ())
    start = {t: min(r.start_ns for r in spans) for t, spans in traces.items()}
    groups = grouping.group(list(traces), start, found, runs_by, assembly)
    order = {t: i for run in groups for i, t in enumerate(run)}
    parents = grouping.adopted_parents(found, order) if found.links else {}
    for run in groups:
        try:
            if len(run) == 1:
                yield run, trajectory_from_spans(traces[run[0]], rule)
            else:
                yield run, trajectory_from_run([traces[t] for t in run], parents, rule)
        except InvalidInput as e:
            yield run, e


def _traces(req: ExportTraceServiceRequest, rule: OutputRule) -> list[list[SpanRecord]]:
    records, rejected = records_from_request(req, keep_attribute=rule.attribute)
    if rejected:
        detail = ", ".join(f"{r.count} {r.reason}" for r in rejected)
        raise InvalidInput(f"spans that cannot be read: {detail}")
    traces: dict[bytes, list[SpanRecord]] = {}
    for rec in records:
        traces.setdefault(rec.trace_id, []).append(rec)
    return list(traces.values())


def read_otlp(data: bytes, source: str, rule: OutputRule = OutputRule(), runs_by: str = grouping.DEFAULT_MODE) -> Runs:
    """One binary ExportTraceServiceRequest per file; errors are prefixed with ``source``."""
    return read_otlp_files([(data, source)], rule=rule, runs_by=runs_by)


def read_otlp_json(
    text: str | bytes, source: str, rule: OutputRule = OutputRule(), runs_by: str = grouping.DEFAULT_MODE
) -> Runs:
    """OTLP/JSON: one request per file, or one per line (the Collector's file exporter writes lines).
    Spans of one trace spread over several lines still make one trajectory."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return read_otlp_files([(data, source)], json=True, rule=rule, runs_by=runs_by)


def read_otlp_files(
    files: Sequence[tuple[bytes, str]],
    logs: Sequence[tuple[bytes, str]] = (),
    *,
    json: bool = False,
    rule: OutputRule = OutputRule(),
    runs_by: str = grouping.DEFAULT_MODE,
) -> Runs:
    """The runs of the trace files among ``files`` (``(data, source)`` pairs), with the records of the logs
    files joined to their traces: ``logs`` are logs files, and a file among ``files`` that holds an
    ExportLogsServiceRequest is one too (told apart by content). A record naming a trace no trace file
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
    skipped: list[str] = []
    assembly: Counter[str] = Counter()
    out = Runs()
    skipped_in: dict[str, int] = {}
    held: set[bytes] = set()
    refused: tuple[NoAgentSpan, str] | None = None
    for req, source in traces:
        held.update(s.trace_id for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans)
        try:
            found, no_run = _request_runs(req, rule, runs_by, events)
            if no_run is None:
                _non_empty(found)
        except InvalidInput as e:
            raise e.at(source) from None
        refused = refused or (None if no_run is None else (no_run, source))
        out.extend(found)
        skipped.extend(found.skipped)
        if found.skipped:
            skipped_in[source] = skipped_in.get(source, 0) + len(found.skipped)
        assembly.update(found.assembly)
    unjoined = set(events) - held
    if unjoined:
        first = min(unjoined).hex()
        n = sum(len(events[t]) for t in unjoined)
        raise InvalidInput(f"{n} log record(s) of {len(unjoined)} trace(s) no trace file holds (trace {first})")
    if refused is not None and not out:
        # Only a batch with no run at all is refused: a trace that is no run (an MCP server's span for a
        # notification, an HTTP request's trace) among the runs' files is skipped and counted.
        no_run, source = refused
        try:
            _refuse(no_run, len(skipped))
        except InvalidInput as e:
            raise e.at(source) from None
    out.skipped = tuple(skipped)
    out.skipped_in = skipped_in
    out.assembly = dict(assembly)
    return out


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


def is_otlp_protobuf(data: bytes) -> bool:
    """The bytes are a binary OTLP export: a traces request with a span that has a trace id, or a logs
    request (``luckrate grade`` without ``--format`` tells a file's format by this)."""
    try:
        traces = request_from_protobuf(data)
    except InvalidInput:
        traces = None
    if traces is not None and any(
        len(s.trace_id) == 16 for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans
    ):
        return True
    return _is_logs_protobuf(data)


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


def _non_empty(trajectories: Runs) -> Runs:
    if not trajectories:
        raise InvalidInput("no spans")
    return trajectories


def is_logs_file(data: bytes, source: str, json: bool) -> bool:
    """The file holds an ExportLogsServiceRequest (told apart from a traces file by its content)."""
    return isinstance(_decode(data, source, json, logs_only=False), ExportLogsServiceRequest)


def log_events(files: Sequence[tuple[bytes, str]], json: bool) -> dict[bytes, list[LogEvent]]:
    """The log events of logs files, by trace id, for ``read_otlp_runs`` to join to their traces."""
    events: dict[bytes, list[LogEvent]] = {}
    for data, source in files:
        _add_events(_decode(data, source, json, logs_only=True), source, events)
    return events


def read_otlp_runs(
    data: bytes, source: str, fmt: str, rule: OutputRule = OutputRule(), logs: dict[bytes, list[LogEvent]] | None = None
) -> tuple[list[Trajectory], list[InvalidInput]]:
    """``read_otlp`` (fmt ``otlp``) or ``read_otlp_json`` (``otlp-json``), except that a run that cannot be
    read (no agent, model or tool span: an HTTP request traced beside the agents) is returned as its
    error beside the runs instead of failing the file: what ``luckrate suggest`` reads from a day of
    mixed traffic. The traces of one run are grouped as ``luckrate grade`` groups them (by span links). A
    file that does not decode, or spans that cannot be kept, still raise; a logs file holds no runs of its
    own. ``logs``: log events by trace id (``log_events``), joined to their traces."""
    req = _decode(data, source, fmt == "otlp-json", logs_only=False)
    if isinstance(req, ExportLogsServiceRequest):
        return [], []
    runs, errors = [], []
    try:
        for _members, found in _runs(req, rule, grouping.DEFAULT_MODE, logs or {}, grouping.Assembly()):
            if isinstance(found, InvalidInput):
                errors.append(found.at(source))
            else:
                runs.append(found)
    except InvalidInput as e:
        raise e.at(source) from None
    return runs, errors

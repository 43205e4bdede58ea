"""Requests → trajectories (one trace = one run), and the CLI's file readers.

A real service's export holds the traces of HTTP requests and database calls beside its agent runs: a
file reader skips every trace with no agent, model or tool span and lists it in ``Runs.skipped``; a
file with no run at all is refused. The traces of one run are grouped first (runs.py: by span links
unless told otherwise); what grouping did is counted in ``Runs.assembly``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import runs as grouping
from luckrate.adapters.otlp.assemble import NoAgentSpan, trajectory_from_run, trajectory_from_spans
from luckrate.adapters.otlp.compaction import records_from_request
from luckrate.adapters.otlp.output import OutputRule
from luckrate.adapters.otlp.requests import request_from_json, request_from_protobuf
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.step import Trajectory


class Runs(list[Trajectory]):
    """The trajectories read from one file, and the traces skipped because they hold no run."""

    skipped: tuple[str, ...] = ()
    """Hex ids of the traces with no agent, model or tool span, in file order."""
    assembly: Mapping[str, int] = MappingProxyType({})
    """Counts of what grouping traces into runs did (runs.py): ``traces_joined`` (traces graded as part of
    an earlier-started trace's run), ``links_missing``, ``links_dropped``, ``runs_split``,
    ``conversation_ids_too_long``; only non-zero counts."""


def trajectories_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule()) -> list[Trajectory]:
    """Group the request's spans by trace id (first-seen order) and build one trajectory per trace.

    Spans that cannot be kept (bad ids) raise InvalidInput here: a file is not a live stream, and
    silently dropping part of it would grade a different run. A trace with no agent, model or tool
    span raises too; ``runs_from_request`` skips it."""
    return [trajectory_from_spans(spans, rule) for spans in _traces(req, rule)]


def runs_from_request(req: ExportTraceServiceRequest, rule: OutputRule = OutputRule(),
                      runs_by: str = grouping.DEFAULT_MODE) -> Runs:
    """Like ``trajectories_from_request``, but the traces of one run are graded together (``runs_by``:
    runs.py) and a run with no agent, model or tool span is skipped, its traces listed in ``skipped``;
    when every run is such a run, the first one's error is raised (for several, naming how many)."""
    if runs_by not in grouping.MODES:
        raise ValueError(f"runs_by must be one of {', '.join(grouping.MODES)}")
    traces = {spans[0].trace_id: spans for spans in _traces(req, rule)}
    assembly = grouping.Assembly()
    found = grouping.ties(req, assembly) if runs_by != "trace" else grouping.Ties((), ())
    start = {t: min(r.start_ns for r in spans) for t, spans in traces.items()}
    groups = grouping.group(list(traces), start, found, runs_by, assembly)
    order = {t: i for run in groups for i, t in enumerate(run)}
    parents = grouping.adopted_parents(found, order) if found.links else {}
    runs, skipped, first = Runs(), [], None
    for run in groups:
        try:
            if len(run) == 1:
                runs.append(trajectory_from_spans(traces[run[0]], rule))
            else:
                runs.append(trajectory_from_run([traces[t] for t in run], parents, rule))
        except NoAgentSpan as e:
            skipped.extend(t.hex() for t in run)
            first = first or e
    if first is not None and not runs:
        if len(skipped) == 1:
            raise first
        raise InvalidInput(f"none of its {len(skipped)} traces holds an agent, model or tool span "
                           f"(first: {first})")
    runs.skipped = tuple(skipped)
    runs.assembly = dict(assembly.counts)
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


def read_otlp(data: bytes, source: str, rule: OutputRule = OutputRule(),
              runs_by: str = grouping.DEFAULT_MODE) -> Runs:
    """One binary ExportTraceServiceRequest per file; errors are prefixed with ``source``."""
    try:
        return _non_empty(runs_from_request(request_from_protobuf(data), rule, runs_by))
    except InvalidInput as e:
        raise e.at(source) from None


def read_otlp_json(text: str | bytes, source: str, rule: OutputRule = OutputRule(),
                   runs_by: str = grouping.DEFAULT_MODE) -> Runs:
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
        return _non_empty(runs_from_request(merged, rule, runs_by))
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

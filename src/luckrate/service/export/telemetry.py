"""Every instrument the service emits, declared in one place (like a Collector component's metadata.yaml),
and the label policy that keeps their series bounded.

Span content is attacker-influenced: label values come only from closed sets (reasons, checks,
severities), from the spec (tool vocabulary, SPECS keys) or from a bounded first-N list of agent names.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider, TraceBasedExemplarFilter
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.resources import Resource

from luckrate.adapters.otlp.compaction import REJECT_REASONS
from luckrate.adapters.otlp.logs import LOG_REJECT_REASONS
from luckrate.core.grade import RunGrade
from luckrate.core.spec import FALLBACK, Spec
from luckrate.service.export.exemplars import latest_reservoir_factory, trace_context
from luckrate.service.assemble.wal_format import DAMAGE_REASONS

OTHER = "other"
"""The label value for anything outside the bounded vocabulary."""
MAX_LABEL = 128
"""Longest label value kept (agent names in first-N mode)."""

# Finer between 0.5 and 3 s: the verdict delay is the run's own length plus root_grace (2 s by default)
# plus grading, and coarse buckets there hid what grading adds (benchmarks could only say "in (0.5, 1]").
SECONDS_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    1.5,
    2.0,
    2.5,
    3.0,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)


@dataclass(frozen=True)
class Instrument:
    """One metric as declared to the OTel SDK."""

    name: str
    """OTel name; the Prometheus name is derived by ``prometheus_name``."""
    kind: str
    """``counter``, ``updown`` (UpDownCounter, a gauge in Prometheus) or ``histogram``."""
    unit: str
    description: str
    attributes: tuple[str, ...] = ()
    """The attribute keys it is recorded with; every value comes from a bounded set."""
    exemplar: bool = False
    """Carries the graded trace of its latest increment as an exemplar (``exemplars.LatestExemplar``)."""


INSTRUMENTS: tuple[Instrument, ...] = (
    Instrument(
        "luckrate.runs",
        "counter",
        "{run}",
        "Graded runs by output verdict (pass/fail/unknown) and path verdict (ok/bad)",
        ("agent", "spec", "output", "path"),
        exemplar=True,
    ),
    Instrument(
        "luckrate.violations",
        "counter",
        "{violation}",
        "Violations found in graded runs",
        ("agent", "check", "severity", "tool"),
        exemplar=True,
    ),
    Instrument(
        "luckrate.taint",
        "counter",
        "{finding}",
        "Taint findings: an untrusted tool's output reached a privileged tool's arguments",
        ("agent", "privileged_tool", "source_tool"),
        exemplar=True,
    ),
    Instrument("luckrate.spans.received", "counter", "{span}", "Spans in decoded export requests", ("transport",)),
    Instrument("luckrate.spans.accepted", "counter", "{span}", "Spans taken into the trace buffer"),
    Instrument(
        "luckrate.spans.rejected",
        "counter",
        "{span}",
        "Spans refused: unusable ids (partial success) or buffer full (client retries)",
        ("reason",),
    ),
    Instrument(
        "luckrate.spans.duplicate",
        "counter",
        "{span}",
        "Accepted spans dropped because their (trace id, span id) was already buffered",
    ),
    Instrument(
        "luckrate.spans.late", "counter", "{span}", "Accepted spans dropped because their trace was already graded"
    ),
    Instrument("luckrate.spans.assembled", "counter", "{span}", "Spans handed to the grader inside completed traces"),
    Instrument(
        "luckrate.spans.lost",
        "counter",
        "{span}",
        "Accepted spans lost before grading: the grading process holding them died",
        ("reason",),
    ),
    Instrument(
        "luckrate.spans.replayed",
        "counter",
        "{span}",
        "Spans read back from the write-ahead log and buffered again, their traces not yet graded: at start "
        "(accepted before a restart), or for a grading process that died",
    ),
    Instrument(
        "luckrate.requests.received",
        "counter",
        "{request}",
        "Trace export requests decoded, including ones with no spans",
        ("transport",),
    ),
    Instrument(
        "luckrate.requests.refused",
        "counter",
        "{request}",
        "Export requests or HTTP connections refused whole (too large, undecodable, unauthenticated, bad media "
        "type, buffer full, over the connection cap, request deadline passed, write-ahead log full or failing)",
        ("transport", "reason"),
    ),
    Instrument(
        "luckrate.log_records.received",
        "counter",
        "{record}",
        "Log records in decoded logs export requests",
        ("transport",),
    ),
    Instrument(
        "luckrate.log_records.accepted",
        "counter",
        "{record}",
        "Log records taken into the buffer, to be joined to their traces",
    ),
    Instrument(
        "luckrate.log_records.rejected",
        "counter",
        "{record}",
        "Log records refused: not an event luckrate reads, no trace id (partial success), or buffer full "
        "(client retries)",
        ("reason",),
    ),
    Instrument(
        "luckrate.log_records.dropped",
        "counter",
        "{record}",
        "Accepted log records not joined to a graded trace: its trace was already graded, no span of it "
        "arrived, over the per-trace limit, or the grading process holding them died",
        ("reason",),
    ),
    Instrument(
        "luckrate.log_records.assembled",
        "counter",
        "{record}",
        "Log records handed to the grader inside completed traces",
    ),
    Instrument(
        "luckrate.log_requests.refused",
        "counter",
        "{request}",
        "Logs export requests refused whole (too large, undecodable, unauthenticated, bad media type, buffer full)",
        ("transport", "reason"),
    ),
    Instrument("luckrate.traces.active", "updown", "{trace}", "Traces buffered and not yet complete"),
    Instrument(
        "luckrate.traces.completed", "counter", "{trace}", "Traces completed, by what completed them", ("reason",)
    ),
    Instrument(
        "luckrate.traces.ungraded",
        "counter",
        "{trace}",
        "Completed traces (or runs across traces) not graded, by reason (no spec for the agent, unreadable "
        "spans, a trace that links to a run already graded, nothing observable: no tool call and no content)",
        ("reason",),
    ),
    Instrument(
        "luckrate.runs.active",
        "updown",
        "{trace}",
        "Completed traces held for the rest of their run across traces (runs_by links or conversation)",
    ),
    Instrument(
        "luckrate.runs.completed",
        "counter",
        "{run}",
        "Runs across traces handed to the grader, by what completed them (runs_by links or conversation)",
        ("reason",),
    ),
    Instrument(
        "luckrate.runs.assembly",
        "counter",
        "{event}",
        "What run assembly across traces did: traces joined to a run, links to traces that never arrived, "
        "links beyond the bounds, conversation ids too long, late traces",
        ("outcome",),
    ),
    Instrument("luckrate.grade.errors", "counter", "{trace}", "Completed traces whose grading raised"),
    Instrument("luckrate.grade.duration", "histogram", "s", "Time to adapt and grade one trace"),
    Instrument("luckrate.verdict.delay", "histogram", "s", "Time from a trace's first received span to its verdict"),
    Instrument("luckrate.wal.bytes", "updown", "By", "Bytes in the write-ahead log's segment files (--wal)"),
    Instrument(
        "luckrate.wal.records.damaged",
        "counter",
        "{record}",
        "Write-ahead log records that could not be read back at start: cut short at a segment's end (a "
        "crash mid-write; truncated) or failing their checksum (skipped)",
        ("reason",),
    ),
    Instrument(
        "luckrate.viewer.runs.evicted",
        "counter",
        "{run}",
        "Graded runs dropped from the run viewer, oldest first, to make room for new ones (viewer_runs, "
        "viewer_max_bytes)",
    ),
    Instrument(
        "luckrate.verdict_events.dropped",
        "counter",
        "{event}",
        "Verdict log events (--otlp-logs) not delivered: queue full (endpoint slow or down), export failed, "
        "still queued at shutdown",
        ("reason",),
    ),
)
BY_NAME = {i.name: i for i in INSTRUMENTS}
_KEYS = {i.name: frozenset(i.attributes) for i in INSTRUMENTS}

COMPLETION_REASONS = ("root_ended", "idle", "max_age", "max_spans", "shutdown")
UNGRADED_REASONS = ("no_spec", "invalid", "late_for_run", "not_gradable")
WAL_REFUSALS = ("wal_full", "wal_error")
"""The write-ahead log could not take a request: full (``wal_max_bytes`` or the disk), or writing failed."""
REFUSAL_REASONS = (
    "too_large",
    "undecodable",
    "unauthenticated",
    "unsupported_media_type",
    "buffer_full",
    "connection_limit",
    "request_timeout",
    *WAL_REFUSALS,
)
TRANSPORTS = ("grpc", "http")
REJECTION_REASONS = (*REJECT_REASONS, "buffer_full", *WAL_REFUSALS)
VERDICT_EVENT_DROPS = ("queue_full", "export_failed", "shutdown")
LOSS_REASONS = ("worker_died",)
RUN_REASONS = ("quiet", "max_age", "max_traces", "shutdown")
"""Why a run across traces was handed to the grader (``run_assembly``)."""
RUN_ASSEMBLY_OUTCOMES = (
    "traces_joined",
    "links_missing",
    "links_dropped",
    "conversation_ids_too_long",
    "late_traces",
)
"""What run assembly did: the keys of ``luckrate grade``'s ``assembly`` counts, and ``late_traces``. Not
``runs_split``: a run cut at its trace limit is ``luckrate.runs.completed{reason="max_traces"}``."""
WAL_DAMAGE = DAMAGE_REASONS
LOG_REJECTION_REASONS = (*LOG_REJECT_REASONS, "buffer_full")
LOG_DROP_REASONS = ("late", "no_spans", "over_limit", "worker_died")
LOG_REFUSAL_REASONS = ("too_large", "undecodable", "unauthenticated", "unsupported_media_type", "buffer_full")

ZERO_SERIES: tuple[tuple[str, tuple[dict[str, str], ...]], ...] = (
    ("luckrate.spans.received", tuple({"transport": t} for t in TRANSPORTS)),
    ("luckrate.spans.accepted", ({},)),
    ("luckrate.spans.rejected", tuple({"reason": r} for r in REJECTION_REASONS)),
    ("luckrate.spans.duplicate", ({},)),
    ("luckrate.spans.late", ({},)),
    ("luckrate.spans.assembled", ({},)),
    ("luckrate.spans.lost", tuple({"reason": r} for r in LOSS_REASONS)),
    ("luckrate.spans.replayed", ({},)),
    ("luckrate.wal.records.damaged", tuple({"reason": r} for r in WAL_DAMAGE)),
    ("luckrate.requests.received", tuple({"transport": t} for t in TRANSPORTS)),
    ("luckrate.requests.refused", tuple({"transport": t, "reason": r} for t in TRANSPORTS for r in REFUSAL_REASONS)),
    ("luckrate.log_records.received", tuple({"transport": t} for t in TRANSPORTS)),
    ("luckrate.log_records.accepted", ({},)),
    ("luckrate.log_records.rejected", tuple({"reason": r} for r in LOG_REJECTION_REASONS)),
    ("luckrate.log_records.dropped", tuple({"reason": r} for r in LOG_DROP_REASONS)),
    ("luckrate.log_records.assembled", ({},)),
    (
        "luckrate.log_requests.refused",
        tuple({"transport": t, "reason": r} for t in TRANSPORTS for r in LOG_REFUSAL_REASONS),
    ),
    ("luckrate.traces.completed", tuple({"reason": r} for r in COMPLETION_REASONS)),
    ("luckrate.traces.ungraded", tuple({"reason": r} for r in UNGRADED_REASONS)),
    ("luckrate.grade.errors", ({},)),
    ("luckrate.runs.completed", tuple({"reason": r} for r in RUN_REASONS)),
    ("luckrate.runs.assembly", tuple({"outcome": o} for o in RUN_ASSEMBLY_OUTCOMES)),
    ("luckrate.verdict_events.dropped", tuple({"reason": r} for r in VERDICT_EVENT_DROPS)),
    ("luckrate.viewer.runs.evicted", ({},)),
)
"""Loss and health counters over closed label sets, exported at 0 from the start: a healthy service
shows 0 rather than "No data", and ``rate()``/``increase()`` alerts see the very first increment."""


def prometheus_name(inst: Instrument) -> str:
    """OTel → Prometheus naming as the OTel Prometheus exporter does it: dots to underscores, the unit
    ``s`` as ``_seconds``, ``{annotations}`` dropped, ``_total`` on counters."""
    name = inst.name.replace(".", "_")
    if inst.unit == "s":
        name += "_seconds"
    return name + "_total" if inst.kind == "counter" else name


class Labels:
    """Maps untrusted names to bounded label values."""

    def __init__(self, specs: Mapping[str, Spec], max_agents: int = 20):
        self._named = frozenset(k for k in specs if k != FALLBACK)
        # Only with a single SPEC (no agent names configured) do agent names seen on the wire become labels.
        self._first_n = max_agents if not self._named else 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def agent(self, name: str | None) -> str:
        if not name:
            return OTHER
        if name in self._named:
            return name
        name = name[:MAX_LABEL]
        with self._lock:
            if name in self._seen:
                return name
            if len(self._seen) < self._first_n:
                self._seen.add(name)
                return name
        return OTHER

    @staticmethod
    def tool(name: str | None, spec: Spec) -> str:
        return name if name and name in spec.tools else OTHER


class Telemetry:
    """Owns the MeterProvider and records every instrument; safe to call from any thread."""

    def __init__(self, readers: Sequence[MetricReader], labels: Labels):
        self.labels = labels
        # Exemplars only from measurements recorded with a graded trace's context (``run``), whatever
        # OTEL_METRICS_EXEMPLAR_FILTER says; the latest one per series, not the SDK's random pick.
        views = [
            View(instrument_name=i.name, exemplar_reservoir_factory=latest_reservoir_factory)
            for i in INSTRUMENTS
            if i.exemplar
        ]
        self.provider = MeterProvider(
            metric_readers=list(readers),
            views=views,
            exemplar_filter=TraceBasedExemplarFilter(),
            resource=Resource.create({"service.name": "luckrate"}),
        )
        meter = self.provider.get_meter("luckrate.service")
        self._i = {inst.name: _create(meter, inst) for inst in INSTRUMENTS}
        self._closed = False
        for name, label_sets in ZERO_SERIES:
            for attributes in label_sets:
                self.add(name, 0, context=None, **attributes)

    def add(self, name: str, value: float = 1, *, context: Context | None = None, **attributes: str) -> None:
        """Record on a declared instrument; attribute keys must be the declared ones. ``context`` carries a
        graded trace's span for the exemplar (None: the current context, which in the service has no span)."""
        inst = BY_NAME[name]
        if attributes.keys() != _KEYS[name]:  # a keys view compares with a set without building one
            raise ValueError(f"{name} takes attributes {inst.attributes}, got {tuple(attributes)}")
        instrument = self._i[name]
        if inst.kind == "histogram":
            instrument.record(value, attributes, context)
        else:
            instrument.add(value, attributes, context)

    def run(self, grade: RunGrade, spec: Spec, spec_label: str, trace: tuple[bytes, bytes] | None = None) -> None:
        """Count one graded run, its violations and taint findings. ``trace`` is the graded trace's
        (trace id, root span id): the exemplar of bad-path runs, violations and taint findings."""
        agent = self.labels.agent(grade.agent)
        ctx = self.exemplar(trace) if trace and not grade.path_ok else None
        self.add(
            "luckrate.runs",
            agent=agent,
            spec=spec_label,
            output=grade.output,
            path="ok" if grade.path_ok else "bad",
            context=ctx,
        )
        for v in grade.violations:
            tool = self.labels.tool(v.tool, spec)
            self.add(
                "luckrate.violations", agent=agent, check=v.check, severity=str(v.severity), tool=tool, context=ctx
            )
            if v.check == "taint":
                self.add(
                    "luckrate.taint",
                    agent=agent,
                    privileged_tool=tool,
                    source_tool=self.labels.tool(v.source, spec),
                    context=ctx,
                )

    @staticmethod
    def exemplar(trace: tuple[bytes, bytes]) -> Context:
        """What ``run`` records a bad-path run's (trace id, root span id) with: the SDK context carrying it."""
        return trace_context(*trace)

    def flush(self, timeout_s: float = 10.0) -> bool:
        return self.provider.force_flush(int(timeout_s * 1000))

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Flush and stop every reader (pushes the last OTLP export); idempotent."""
        if not self._closed:
            self._closed = True
            self.provider.shutdown(int(timeout_s * 1000))


def _create(meter, inst: Instrument):
    if inst.kind == "counter":
        return meter.create_counter(inst.name, unit=inst.unit, description=inst.description)
    if inst.kind == "updown":
        return meter.create_up_down_counter(inst.name, unit=inst.unit, description=inst.description)
    return meter.create_histogram(
        inst.name,
        unit=inst.unit,
        description=inst.description,
        explicit_bucket_boundaries_advisory=list(SECONDS_BUCKETS),
    )

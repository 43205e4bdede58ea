"""Every instrument the service emits, declared once (like a Collector component's ``metadata.yaml``): its
name, kind, unit, description, and its labels with the closed set of values each may take.

Code records on an instrument by its constant (``recorder.add(SPANS_LATE.name, n)``), so a misspelt metric
fails at import, not at run time. ``Telemetry.add`` checks every recording against the declaration: the
label keys, and the value of every label whose values are a closed set. The series exported at 0 from the
start (``ZERO_SERIES``) are derived from the declarations, and ``docs/metrics.md`` lists exactly these
(tests/service/test_telemetry.py).

Adding a metric: one constant here, the call that records it, and its row in docs/metrics.md (a test
fails until the row is there).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from luckrate.adapters.otlp.compaction import REJECT_REASONS
from luckrate.adapters.otlp.logs import LOG_REJECT_REASONS
from luckrate.core.violation import Severity

COUNTER, UPDOWN, HISTOGRAM = "counter", "updown", "histogram"
"""Instrument kinds: ``updown`` is an UpDownCounter (a gauge in Prometheus)."""

# Finer between 0.5 and 3 s: the verdict delay is the run's own length plus root_grace (2 s by default)
# plus grading, and coarse buckets there hid what grading adds (benchmarks could only say "in (0.5, 1]").
SECONDS_BUCKETS = (
    *(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75),
    *(1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
"""Bucket boundaries of every histogram (all are in seconds)."""


@dataclass(frozen=True)
class Label:
    """One label (metric attribute) of an instrument."""

    key: str
    values: tuple[str, ...] | None = None
    """The closed set of values it may take; None when a policy bounds it instead (agent names first-N,
    tools from the spec's vocabulary, spec names, the check registry's names: ``telemetry.Labels``)."""


@dataclass(frozen=True, eq=False)
class Instrument:
    """One metric as declared to the OTel SDK. Compared by identity: each is declared once."""

    name: str
    """OTel name; the Prometheus name is derived by ``prometheus_name``."""
    kind: str
    """``COUNTER``, ``UPDOWN`` or ``HISTOGRAM``."""
    unit: str
    description: str
    labels: tuple[Label, ...] = ()
    """The labels it is recorded with, every value from a bounded set."""
    exemplar: bool = False
    """Carries the graded trace of its latest increment as an exemplar (``exemplars.LatestExemplar``)."""
    _keys: frozenset[str] = field(init=False, repr=False)
    _closed: tuple[tuple[str, frozenset[str]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", frozenset(label.key for label in self.labels))
        closed = tuple((label.key, frozenset(label.values)) for label in self.labels if label.values is not None)
        object.__setattr__(self, "_closed", closed)

    @property
    def attributes(self) -> tuple[str, ...]:
        """The label keys, in declared order."""
        return tuple(label.key for label in self.labels)

    def check(self, attributes: dict[str, str]) -> None:
        """ValueError unless ``attributes`` has exactly the declared keys, each closed label a declared value."""
        if attributes.keys() != self._keys:  # a keys view compares with a set without building one
            raise ValueError(f"{self.name} takes attributes {self.attributes}, got {tuple(attributes)}")
        for key, allowed in self._closed:
            if attributes[key] not in allowed:
                raise ValueError(f"{self.name}: {key}={attributes[key]!r} is not one of {sorted(allowed)}")

    def zero_series(self) -> tuple[dict[str, str], ...]:
        """Every series of a counter whose labels are all closed sets (exported at 0 from the start); none
        for the others (their values are not known before they are seen, or they are not counters)."""
        if self.kind != COUNTER or len(self._closed) != len(self.labels):
            return ()
        keys = self.attributes
        values = [label.values or () for label in self.labels]
        return tuple(dict(zip(keys, combination)) for combination in itertools.product(*values))


def _reasons(*values: str) -> Label:
    return Label("reason", values)


# The closed sets, each named where more than one instrument or module uses it.
TRANSPORT = Label("transport", ("grpc", "http"))
WAL_REFUSALS = ("wal_full", "wal_error")
"""The write-ahead log could not take a request: full (``wal_max_bytes`` or the disk), or writing failed."""
REFUSAL_REASONS = (
    *("too_large", "undecodable", "unauthenticated", "unsupported_media_type", "buffer_full"),
    *("connection_limit", "request_timeout", *WAL_REFUSALS),
)
LOG_REFUSAL_REASONS = ("too_large", "undecodable", "unauthenticated", "unsupported_media_type", "buffer_full")
COMPLETION_REASONS = ("root_ended", "idle", "max_age", "max_spans", "shutdown")
"""What completed a trace (``assembler``)."""
RUN_REASONS = ("quiet", "max_age", "max_traces", "shutdown")
"""Why a run across traces was handed to the grader (``run_assembly``)."""
RUN_ASSEMBLY_OUTCOMES = ("traces_joined", "links_missing", "links_dropped", "conversation_ids_too_long", "late_traces")
"""What run assembly did: the keys of ``luckrate grade``'s ``assembly`` counts, and ``late_traces``. Not
``runs_split``: a run cut at its trace limit is ``luckrate.runs.completed{reason="max_traces"}``."""
DAMAGE_REASONS = ("torn_tail", "checksum")
"""Why a write-ahead log record could not be read back (``wal_format``)."""
AGENT = Label("agent")

RUNS = Instrument(
    "luckrate.runs",
    COUNTER,
    "{run}",
    "Graded runs by output verdict (pass/fail/unknown) and path verdict (ok/bad)",
    (AGENT, Label("spec"), Label("output", ("pass", "fail", "unknown")), Label("path", ("ok", "bad"))),
    exemplar=True,
)
VIOLATIONS = Instrument(
    "luckrate.violations",
    COUNTER,
    "{violation}",
    "Violations found in graded runs",
    (AGENT, Label("check"), Label("severity", tuple(s.value for s in Severity)), Label("tool")),
    exemplar=True,
)
TAINT = Instrument(
    "luckrate.taint",
    COUNTER,
    "{finding}",
    "Taint findings: an untrusted tool's output reached a privileged tool's arguments",
    (AGENT, Label("privileged_tool"), Label("source_tool")),
    exemplar=True,
)
SPANS_RECEIVED = Instrument(
    "luckrate.spans.received", COUNTER, "{span}", "Spans in decoded export requests", (TRANSPORT,)
)
SPANS_ACCEPTED = Instrument("luckrate.spans.accepted", COUNTER, "{span}", "Spans taken into the trace buffer")
SPANS_REJECTED = Instrument(
    "luckrate.spans.rejected",
    COUNTER,
    "{span}",
    "Spans refused: unusable ids (partial success) or buffer full (client retries)",
    (_reasons(*REJECT_REASONS, "buffer_full", *WAL_REFUSALS),),
)
SPANS_DUPLICATE = Instrument(
    "luckrate.spans.duplicate",
    COUNTER,
    "{span}",
    "Accepted spans dropped because their (trace id, span id) was already buffered",
)
SPANS_LATE = Instrument(
    "luckrate.spans.late", COUNTER, "{span}", "Accepted spans dropped because their trace was already graded"
)
SPANS_ASSEMBLED = Instrument(
    "luckrate.spans.assembled", COUNTER, "{span}", "Spans handed to the grader inside completed traces"
)
SPANS_LOST = Instrument(
    "luckrate.spans.lost",
    COUNTER,
    "{span}",
    "Accepted spans lost before grading: the grading process holding them died",
    (_reasons("worker_died"),),
)
SPANS_REPLAYED = Instrument(
    "luckrate.spans.replayed",
    COUNTER,
    "{span}",
    "Spans read back from the write-ahead log and buffered again, their traces not yet graded: at start "
    "(accepted before a restart), or for a grading process that died",
)
REQUESTS_RECEIVED = Instrument(
    "luckrate.requests.received",
    COUNTER,
    "{request}",
    "Trace export requests decoded, including ones with no spans",
    (TRANSPORT,),
)
REQUESTS_REFUSED = Instrument(
    "luckrate.requests.refused",
    COUNTER,
    "{request}",
    "Export requests or HTTP connections refused whole (too large, undecodable, unauthenticated, bad media "
    "type, buffer full, over the connection cap, request deadline passed, write-ahead log full or failing)",
    (TRANSPORT, _reasons(*REFUSAL_REASONS)),
)
LOG_RECORDS_RECEIVED = Instrument(
    "luckrate.log_records.received", COUNTER, "{record}", "Log records in decoded logs export requests", (TRANSPORT,)
)
LOG_RECORDS_ACCEPTED = Instrument(
    "luckrate.log_records.accepted",
    COUNTER,
    "{record}",
    "Log records taken into the buffer, to be joined to their traces",
)
LOG_RECORDS_REJECTED = Instrument(
    "luckrate.log_records.rejected",
    COUNTER,
    "{record}",
    "Log records refused: not an event luckrate reads, no trace id (partial success), or buffer full (client retries)",
    (_reasons(*LOG_REJECT_REASONS, "buffer_full"),),
)
LOG_RECORDS_DROPPED = Instrument(
    "luckrate.log_records.dropped",
    COUNTER,
    "{record}",
    "Accepted log records not joined to a graded trace: its trace was already graded, no span of it "
    "arrived, over the per-trace limit, or the grading process holding them died",
    (_reasons("late", "no_spans", "over_limit", "worker_died"),),
)
LOG_RECORDS_ASSEMBLED = Instrument(
    "luckrate.log_records.assembled",
    COUNTER,
    "{record}",
    "Log records handed to the grader inside completed traces",
)
LOG_REQUESTS_REFUSED = Instrument(
    "luckrate.log_requests.refused",
    COUNTER,
    "{request}",
    "Logs export requests refused whole (too large, undecodable, unauthenticated, bad media type, buffer full)",
    (TRANSPORT, _reasons(*LOG_REFUSAL_REASONS)),
)
TRACES_ACTIVE = Instrument("luckrate.traces.active", UPDOWN, "{trace}", "Traces buffered and not yet complete")
TRACES_COMPLETED = Instrument(
    "luckrate.traces.completed",
    COUNTER,
    "{trace}",
    "Traces completed, by what completed them",
    (_reasons(*COMPLETION_REASONS),),
)
TRACES_UNGRADED = Instrument(
    "luckrate.traces.ungraded",
    COUNTER,
    "{trace}",
    "Completed traces (or runs across traces) not graded, by reason (no spec for the agent, unreadable "
    "spans, a trace that links to a run already graded, nothing observable: no tool call and no content)",
    (_reasons("no_spec", "invalid", "late_for_run", "not_gradable"),),
)
RUNS_ACTIVE = Instrument(
    "luckrate.runs.active",
    UPDOWN,
    "{trace}",
    "Completed traces held for the rest of their run across traces (runs_by links or conversation)",
)
RUNS_COMPLETED = Instrument(
    "luckrate.runs.completed",
    COUNTER,
    "{run}",
    "Runs across traces handed to the grader, by what completed them (runs_by links or conversation)",
    (_reasons(*RUN_REASONS),),
)
RUNS_ASSEMBLY = Instrument(
    "luckrate.runs.assembly",
    COUNTER,
    "{event}",
    "What run assembly across traces did: traces joined to a run, links to traces that never arrived, "
    "links beyond the bounds, conversation ids too long, late traces",
    (Label("outcome", RUN_ASSEMBLY_OUTCOMES),),
)
GRADE_ERRORS = Instrument("luckrate.grade.errors", COUNTER, "{trace}", "Completed traces whose grading raised")
GRADE_DURATION = Instrument("luckrate.grade.duration", HISTOGRAM, "s", "Time to adapt and grade one trace")
VERDICT_DELAY = Instrument(
    "luckrate.verdict.delay", HISTOGRAM, "s", "Time from a trace's first received span to its verdict"
)
WAL_BYTES = Instrument("luckrate.wal.bytes", UPDOWN, "By", "Bytes in the write-ahead log's segment files (--wal)")
WAL_RECORDS_DAMAGED = Instrument(
    "luckrate.wal.records.damaged",
    COUNTER,
    "{record}",
    "Write-ahead log records that could not be read back at start: cut short at a segment's end (a "
    "crash mid-write; truncated) or failing their checksum (skipped)",
    (_reasons(*DAMAGE_REASONS),),
)
VIEWER_RUNS_EVICTED = Instrument(
    "luckrate.viewer.runs.evicted",
    COUNTER,
    "{run}",
    "Graded runs dropped from the run viewer, oldest first, to make room for new ones (viewer_runs, viewer_max_bytes)",
)
VERDICT_EVENTS_DROPPED = Instrument(
    "luckrate.verdict_events.dropped",
    COUNTER,
    "{event}",
    "Verdict log events (--otlp-logs) not delivered: queue full (endpoint slow or down), export failed, "
    "still queued at shutdown",
    (_reasons("queue_full", "export_failed", "shutdown"),),
)

INSTRUMENTS: tuple[Instrument, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Instrument))
"""Every constant above, in the order declared: a new one is exported, checked and documented-tested as is."""
BY_NAME = {i.name: i for i in INSTRUMENTS}

ZERO_SERIES: tuple[tuple[str, tuple[dict[str, str], ...]], ...] = tuple(
    (i.name, series) for i in INSTRUMENTS if (series := i.zero_series())
)
"""Loss and health counters over closed label sets, exported at 0 from the start: a healthy service
shows 0 rather than "No data", and ``rate()``/``increase()`` alerts see the very first increment."""


def prometheus_name(inst: Instrument) -> str:
    """OTel → Prometheus naming as the OTel Prometheus exporter does it: dots to underscores, the unit
    ``s`` as ``_seconds``, ``{annotations}`` dropped, ``_total`` on counters."""
    name = inst.name.replace(".", "_")
    if inst.unit == "s":
        name += "_seconds"
    return name + "_total" if inst.kind == COUNTER else name

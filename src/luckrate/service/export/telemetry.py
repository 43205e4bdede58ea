"""The recorder every stage counts on, and the OTel SDK behind it.

``Recorder`` is what a stage records through: ``Telemetry`` (the SDK's instruments, any thread) or a
``grade.tally.Tally`` (deltas kept for the next flush or report, one thread). ``Count`` is the one callable
the assembling stages take (``recorder.add``, or a test's own). What may be recorded is declared in
``instruments``; ``Labels`` is the policy that keeps the label values from span data bounded.

Span content is attacker-influenced: label values come only from closed sets (reasons, checks,
severities), from the spec (tool vocabulary, SPECS keys) or from a bounded first-N list of agent names.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider, TraceBasedExemplarFilter
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.resources import Resource

from luckrate.core.grade import RunGrade
from luckrate.core.spec import FALLBACK, Spec
from luckrate.service.export.exemplars import latest_reservoir_factory, trace_context
from luckrate.service.export.instruments import (
    BY_NAME,
    COUNTER,
    HISTOGRAM,
    INSTRUMENTS,
    RUNS,
    SECONDS_BUCKETS,
    TAINT,
    UPDOWN,
    VIOLATIONS,
    ZERO_SERIES,
    Instrument,
)

OTHER = "other"
"""The label value for anything outside the bounded vocabulary."""
MAX_LABEL = 128
"""Longest label value kept (agent names in first-N mode)."""
METER = "luckrate.service"
"""The instrumentation scope every instrument is created in."""


class Count(Protocol):
    """``count(instrument name, value, **attributes)``: a recorder's ``add``, or a test's own."""

    def __call__(self, name: str, value: float = 1, /, **attributes: Any) -> None: ...


def no_count(name: str, value: float = 1, /, **attributes: Any) -> None:
    """The ``Count`` of a component nobody reads the counts of."""


class LabelPolicy(Protocol):
    """Maps names from span data to bounded label values."""

    def agent(self, name: str | None) -> str: ...

    def tool(self, name: str | None, spec: Spec) -> str: ...


class Recorder(Protocol):
    """Where a stage's counts go: ``Telemetry``, or a ``Tally`` that hands them on later."""

    @property
    def labels(self) -> LabelPolicy: ...

    def add(self, name: str, value: float = 1, /, *, context: Any = None, **attributes: str) -> None:
        """One measurement on a declared instrument (``instruments``). ``context``: the graded trace an
        exemplar points at, in whatever form the recorder keeps it."""
        ...

    def run(self, grade: RunGrade, spec: Spec, spec_label: str, trace: tuple[bytes, bytes] | None = None) -> None:
        """Count one graded run, its violations and taint findings (``run_series``). ``trace`` is the graded
        trace's (trace id, root span id): the exemplar of bad-path runs, violations and taint findings."""
        ...


def run_series(grade: RunGrade, spec: Spec, spec_label: str, labels: LabelPolicy) -> Iterator[tuple[str, dict]]:
    """The increments one graded run makes, as (instrument name, attributes): the run, each violation, and
    each taint finding. What ``Recorder.run`` records, whichever recorder it is."""
    agent = labels.agent(grade.agent)
    yield RUNS.name, {"agent": agent, "spec": spec_label, "output": grade.output, "path": _path(grade)}
    for v in grade.violations:
        tool = labels.tool(v.tool, spec)
        yield VIOLATIONS.name, {"agent": agent, "check": v.check, "severity": str(v.severity), "tool": tool}
        if v.check == "taint":
            source = labels.tool(v.source, spec)
            yield TAINT.name, {"agent": agent, "privileged_tool": tool, "source_tool": source}


def _path(grade: RunGrade) -> str:
    return "ok" if grade.path_ok else "bad"


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
        meter = self.provider.get_meter(METER)
        self._i = {inst.name: _create(meter, inst) for inst in INSTRUMENTS}
        self._closed = False
        for name, label_sets in ZERO_SERIES:
            for attributes in label_sets:
                self.add(name, 0, context=None, **attributes)

    def add(self, name: str, value: float = 1, /, *, context: Context | None = None, **attributes: str) -> None:
        """Record on a declared instrument; ValueError for attribute keys other than the declared ones, or a
        value outside a closed label's set. ``context`` carries a graded trace's span for the exemplar
        (None: the current context, which in the service has no span)."""
        inst = BY_NAME[name]
        inst.check(attributes)
        instrument = self._i[name]
        if inst.kind == HISTOGRAM:
            instrument.record(value, attributes, context)
        else:
            instrument.add(value, attributes, context)

    def run(self, grade: RunGrade, spec: Spec, spec_label: str, trace: tuple[bytes, bytes] | None = None) -> None:
        """``Recorder.run``: the exemplar is the SDK context holding the bad-path run's root span."""
        ctx = trace_context(*trace) if trace and not grade.path_ok else None
        for name, attributes in run_series(grade, spec, spec_label, self.labels):
            self.add(name, context=ctx, **attributes)

    def flush(self, timeout_s: float = 10.0) -> bool:
        return self.provider.force_flush(int(timeout_s * 1000))

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Flush and stop every reader (pushes the last OTLP export); idempotent."""
        if not self._closed:
            self._closed = True
            self.provider.shutdown(int(timeout_s * 1000))


def _create(meter, inst: Instrument):
    if inst.kind == COUNTER:
        return meter.create_counter(inst.name, unit=inst.unit, description=inst.description)
    if inst.kind == UPDOWN:
        return meter.create_up_down_counter(inst.name, unit=inst.unit, description=inst.description)
    return meter.create_histogram(
        inst.name,
        unit=inst.unit,
        description=inst.description,
        explicit_bucket_boundaries_advisory=list(SECONDS_BUCKETS),
    )

"""Counting off the grading thread's hot path: a ``Tally`` is a ``Recorder`` keeping what ``Telemetry``
records as deltas in plain dicts, and ``apply`` hands a cut of them (a ``Report``) to the real ``Telemetry``
now and then.

The OpenTelemetry SDK does real work per measurement (attribute hashing, a lock, the exemplar reservoir):
per graded run that was several µs, for counts that only need to be right at the next collection. Both
ways of grading use it: the grader thread of a single process cuts a report every ``REPORT_EVERY`` seconds
or when it runs out of work, and a grading process sends its reports to the receiving process (``process.pool``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from luckrate.service.export.exemplars import trace_context
from luckrate.service.export.run_ring import pack
from luckrate.core.grade import RunGrade
from luckrate.core.spec import Spec
from luckrate.service.export.instruments import BY_NAME, HISTOGRAM, TRACES_ACTIVE
from luckrate.service.export.telemetry import Labels, Recorder, run_series

REPORT_EVERY = 0.05
"""Seconds between a busy worker's reports: /metrics lags the workers by about this much."""
MAX_AGENT = 1024
"""Longest agent name a worker sends back (the receiving process cuts label values further)."""


@dataclass
class Report:
    """What a worker settled since its last report."""

    counts: dict[tuple[str, tuple[tuple[str, str], ...]], float]
    """(instrument, attributes) -> delta, for counters and the active-traces gauge; agent names raw."""
    samples: dict[str, list[float]]
    """Histogram instrument -> values recorded."""
    lines: list[str]
    """Verdict log lines."""
    settled: int
    """Spans graded, duplicate or late: their budget is given back."""
    done: bool = False
    """The last report: the worker drained its buffer and is exiting."""
    exemplars: dict = field(default_factory=dict)
    """(instrument, attributes) -> (trace id, span id) of the latest increment that carried a graded trace."""
    traces: list[bytes] = field(default_factory=list)
    """Trace ids done with (graded or not), for the write-ahead log's marks; empty without one."""
    settled_records: int = 0
    """Log records assembled into graded traces or dropped: their budget is given back too."""
    runs: list = field(default_factory=list)
    """For the run viewer (``viewer`` on): each run graded since the last report, as ``run_ring.pack`` made
    it; the receiving process puts them in its ring."""


class _RawAgents:
    """A worker's label policy: agent names go back raw (the first-N list lives in the receiving process, so
    that N workers share one), tool names are already bounded by the spec."""

    @staticmethod
    def agent(name: str | None) -> str:
        return (name or "")[:MAX_AGENT]

    tool = staticmethod(Labels.tool)


class Tally:
    """A ``Recorder`` keeping deltas until the next report (or flush), and a grading process's ``Ledger``:
    the spans, records and traces it settles travel in the same report as their counts."""

    def __init__(self, marks: bool = False) -> None:
        """``marks``: keep the ids of the traces settled (with the write-ahead log, which marks them)."""
        self.labels = _RawAgents()
        self._marks = marks
        self._reset()

    def _reset(self) -> None:
        self.counts: dict = {}
        self.samples: dict[str, list[float]] = {}
        self.exemplars: dict = {}
        self.settled = 0
        self.traces: list[bytes] = []
        self.settled_records = 0
        self.runs: list = []

    def add(self, name: str, value: float = 1, /, *, context=None, **attributes: str) -> None:
        if BY_NAME[name].kind == HISTOGRAM:
            self.samples.setdefault(name, []).append(value)
        else:
            key = (name, tuple(attributes.items()))
            self.counts[key] = self.counts.get(key, 0) + value
            if context is not None:
                self.exemplars[key] = context  # the receiving process offers it with the summed increment

    def run(self, grade: RunGrade, spec: Spec, spec_label: str, trace: tuple[bytes, bytes] | None = None) -> None:
        """``Recorder.run``: the exemplar is kept as the ids themselves (``apply`` builds the SDK context
        once per report, not once per run)."""
        ids = trace if trace and not grade.path_ok else None
        for name, attributes in run_series(grade, spec, spec_label, self.labels):
            self.add(name, context=ids, **attributes)

    def hold(self, g, traj, spec, traces: tuple[str, ...]) -> None:
        """Keep a graded run for the next report (its spec stays here: the receiving process has the same)."""
        self.runs.append(pack(g, traj, traces))

    def release(self, spans: int, records: int = 0) -> None:
        """``Ledger.release``: the receiving process gives the room back when the report arrives."""
        self.settled += spans
        self.settled_records += records

    def settle(self, trace_id: bytes) -> None:
        """``Ledger.settle``: the receiving process marks the trace once the report's lines are written."""
        if self._marks:
            self.traces.append(trace_id)

    @property
    def pending(self) -> bool:
        return bool(self.counts or self.samples or self.settled or self.traces or self.settled_records or self.runs)

    def cut(self, lines: list[str], done: bool = False) -> Report:
        report = Report(
            self.counts,
            self.samples,
            lines,
            self.settled,
            done,
            self.exemplars,
            traces=self.traces,
            settled_records=self.settled_records,
            runs=self.runs,
        )
        self._reset()
        return report


def apply(report: Report, telemetry: Recorder) -> int:
    """Record a report on ``telemetry`` (agent names through its label policy, exemplars with the summed
    increment); returns the change in buffered traces it carried."""
    active = 0
    for (name, pairs), value in report.counts.items():
        ids = report.exemplars.get((name, pairs))
        attributes = dict(pairs)
        if "agent" in attributes:
            attributes["agent"] = telemetry.labels.agent(attributes["agent"])
        if name == TRACES_ACTIVE.name:
            active += int(value)
        telemetry.add(name, value, context=trace_context(*ids) if ids else None, **attributes)
    for name, values in report.samples.items():
        for value in values:
            telemetry.add(name, value)
    return active

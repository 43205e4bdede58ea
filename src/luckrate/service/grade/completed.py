"""What the grader takes: a completed trace, or a run of several completed traces (``runs_by`` links or
conversation). The assembling stage builds them; the worker reads them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from luckrate.adapters.otlp import SpanRecord
from luckrate.adapters.otlp.logs import LogEvent, joined
from luckrate.adapters.otlp.runs import TraceTies, adopted_parents, run_ties
from luckrate.adapters.otlp.spans import unpacked


@dataclass(frozen=True)
class CompletedTrace:
    """A trace handed to the grader."""

    trace_id: bytes
    packed: tuple
    """The spans as buffered (``PackedSpan``s, or records), in arrival order."""
    reason: str
    """One of ``instruments.COMPLETION_REASONS``."""
    first_seen: float
    """Clock time the first span (or log record) arrived (for the first-span-to-verdict delay)."""
    logs: tuple[LogEvent, ...] = ()
    """The trace's log records, in arrival order."""
    ties: TraceTies | None = None
    """Span links to other traces and conversation ids (only when runs are assembled across traces)."""

    @functools.cached_property
    def spans(self) -> tuple[SpanRecord, ...]:
        """The records the adapter reads, in arrival order (the adapter orders steps by time), with the log
        records joined to their spans as span events (``logs.joined``). Built on first use, by the grading
        thread: a trace waiting for the grader stays packed (a full buffer is mostly such traces), and its
        records are fresh in the cache when they are read."""
        return joined(unpacked(self.packed), self.logs)

    @property
    def root_span_id(self) -> bytes:
        """The span a verdict is attached to (log event, exemplar): the earliest span without a parent, else
        (the root never arrived) the earliest span whose parent is not in the trace, else the earliest."""
        if not self.spans:
            return b""
        ids = {s.span_id for s in self.spans}
        roots = [s for s in self.spans if not s.parent_id] or [s for s in self.spans if s.parent_id not in ids]
        return min(roots or self.spans, key=lambda s: (s.start_ns, s.span_id)).span_id


@dataclass(frozen=True)
class CompletedRun:
    """Completed traces graded as one run, in the order they completed."""

    traces: tuple[CompletedTrace, ...]
    reason: str
    """One of ``instruments.RUN_REASONS``."""
    late: bool = False
    """A trace that links into a run already graded: counted and settled, not graded."""

    @property
    def trace_id(self) -> bytes:
        """The run's id: its first trace's (the verdict log's ``trace_id``, the exemplar's)."""
        return self.traces[0].trace_id

    @property
    def first_seen(self) -> float:
        return min(t.first_seen for t in self.traces)

    @property
    def ties(self) -> list[tuple[bytes, TraceTies | None]]:
        return [(t.trace_id, t.ties) for t in self.traces]


def parents_of(run: CompletedRun, ordered: Sequence[bytes]) -> dict[tuple[bytes, bytes], bytes]:
    """``runs.adopted_parents`` for a run's traces, ``ordered`` by start (each trace's first span)."""
    return adopted_parents(run_ties(run.ties), {t: i for i, t in enumerate(ordered)})

"""Trace assembly: buffer span records per trace id until the trace is complete, then hand it on.

One thread owns the ``Assembler`` (``process.in_process.AssemblerLoop``, or a grading process's loop);
receivers hand it batches through a queue whose size is bounded by the ``SpanBudget`` they must reserve
from first. Completion is decided in time buckets (like the tail-sampling idbatcher), not with a timer per
trace, and the clock is injected so tests advance a fake one.

Log records (``LogEvent``s) are held beside their trace's spans (``add_logs``): they usually arrive first,
and are joined to the spans when the grader reads the trace (``CompletedTrace.spans``). They take room in
the same budget, and a trace holds at most ``max_spans_per_trace`` of them.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter

from luckrate.adapters.otlp import SpanRecord
from luckrate.adapters.otlp.logs import LogEvent
from luckrate.adapters.otlp.runs import Assembly, TraceTies
from luckrate.service.grade.completed import CompletedTrace
from luckrate.service.grade.ledger import NO_LEDGER, Ledger
from luckrate.adapters.otlp.spans import PackedSpan
from luckrate.service.config import ServiceConfig
from luckrate.service.export.telemetry import Count, no_count
from luckrate.service.export.instruments import (
    LOG_RECORDS_ASSEMBLED,
    LOG_RECORDS_DROPPED,
    RUNS_ASSEMBLY,
    SPANS_ASSEMBLED,
    SPANS_DUPLICATE,
    SPANS_LATE,
    TRACES_ACTIVE,
    TRACES_COMPLETED,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """When a trace counts as complete. Defaults are the service's, declared once in ServiceConfig."""

    root_grace: float = ServiceConfig.root_grace
    """Seconds without a new span after the root span arrived (spans are exported once ended)."""
    idle_timeout: float = ServiceConfig.idle_timeout
    """Seconds without a new span, root or not."""
    max_trace_age: float = ServiceConfig.max_trace_age
    """Seconds since the first span, whatever still arrives."""
    max_spans_per_trace: int = ServiceConfig.max_spans_per_trace
    late_memory: int = ServiceConfig.late_memory
    """Completed trace ids remembered, so their stragglers count as late rather than start a new trace."""
    bucket: float = 0.05
    """Expiry granularity in seconds; a trace completes at most this long after it is due."""

    @classmethod
    def from_config(cls, cfg: ServiceConfig) -> Limits:
        # A bucket of at most a quarter of root_grace, so a short grace is not stretched by the expiry tick.
        return cls(
            cfg.root_grace,
            cfg.idle_timeout,
            cfg.max_trace_age,
            cfg.max_spans_per_trace,
            cfg.late_memory,
            bucket=min(cls.bucket, cfg.root_grace / 4),
        )


class SpanBudget:
    """Spans accepted and not yet graded; receivers reserve before handing spans over (back-pressure)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def try_acquire(self, n: int) -> bool:
        with self._lock:
            if self._used + n > self.limit:
                return False
            self._used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)

    def reserve(self, n: int) -> None:
        """Take ``n`` whatever the limit: spans acknowledged before a restart, read back from the log."""
        with self._lock:
            self._used += n


SCAN_SPANS = 16
"""Up to this many spans, a trace finds a duplicate by comparing span ids one by one (in C); beyond, it keeps
a set of them. A dict of spans by id cost 48 bytes per buffered span (docs/benchmarks.md, memory)."""
_SPAN_ID = attrgetter("span_id")


class _Trace(list):
    """A trace's spans in arrival order, and when it is due. The list itself, not an object holding one."""

    __slots__ = ("ids", "first_seen", "last_seen", "root_seen", "due", "due_reason", "logs", "ties")

    def __init__(self, now: float):
        self.ids: set[bytes] | None = None
        self.logs: list[LogEvent] | None = None
        self.ties: TraceTies | None = None
        self.first_seen = now
        self.last_seen = now
        self.root_seen = False
        self.due = math.inf
        self.due_reason = "idle"


class Assembler:
    """Single-threaded: only its owner calls ``add``, ``expire`` and ``drain``."""

    def __init__(
        self,
        emit: Callable[[CompletedTrace], None],
        *,
        limits: Limits = Limits(),
        clock: Callable[[], float] = time.monotonic,
        count: Count = no_count,
        ledger: Ledger = NO_LEDGER,
    ):
        """``ledger``: paid for the spans and log records dropped here (duplicate, late, over the limit)."""
        self._emit = emit
        self._limits = limits
        self._clock = clock
        self._count = count
        self._ledger = ledger
        self._traces: dict[bytes, _Trace] = {}
        self._done: OrderedDict[bytes, None] = OrderedDict()
        # Trace ids by the bucket they are due in. A list, not a set: a trace scheduled twice in one bucket
        # is found complete (or not yet due) the second time and skipped, like a stale entry; a set took
        # about 50 bytes per trace more.
        self._buckets: dict[int, list[bytes]] = {}
        self._heap: list[int] = []
        # Counts gathered during one add/expire/drain and recorded once at its end: a metric update costs
        # several µs in the OTel SDK, and one per trace was a tenth of the server's time (benchmarks/README.md).
        self._opened = 0
        self._completed: dict[str, int] = {}
        self._assembled = 0
        self._abandoned = 0
        """Traces that held log records only when due: closed without being completed."""
        self._logs_assembled = 0
        self._logs_dropped: dict[str, int] = {}
        self._assembly = Assembly()
        """Links beyond a trace's bound, while its ties are merged (counted with the run assembly's)."""

    @property
    def active(self) -> int:
        return len(self._traces)

    def add(self, records: Iterable[SpanRecord | PackedSpan]) -> None:
        """Buffer spans; duplicates and late spans are counted, released from the budget and dropped.
        ``PackedSpan``s are buffered as they are and handed on as records."""
        now = self._clock()
        late = duplicate = 0
        touched: dict[bytes, _Trace] = {}
        done, traces, max_spans = self._done, self._traces, self._limits.max_spans_per_trace
        for rec in records:
            tid = rec.trace_id
            if tid in done:
                late += 1
                continue
            trace = traces.get(tid)
            if trace is None:
                trace = traces[tid] = _Trace(now)
                self._opened += 1
            sid, ids = rec.span_id, trace.ids
            if sid in ids if ids is not None else sid in map(_SPAN_ID, trace):
                duplicate += 1
                continue
            trace.append(rec)
            if ids is not None:
                ids.add(sid)
            elif len(trace) > SCAN_SPANS:
                trace.ids = set(map(_SPAN_ID, trace))
            if not rec.parent_id:
                trace.root_seen = True
            touched[tid] = trace
            if len(trace) >= max_spans:
                self._complete(tid, "max_spans")
                touched.pop(tid)
        for tid, trace in touched.items():
            trace.last_seen = now
            self._schedule(tid, trace)
        tied = getattr(records, "ties", None)
        if tied:
            self._tie(tied)
        for name, n in ((SPANS_DUPLICATE.name, duplicate), (SPANS_LATE.name, late)):
            if n:
                self._ledger.release(n)  # before counting, so whoever sees the count also sees the room
                self._count(name, n)
        self._flush_counts()

    def _tie(self, tied: dict[bytes, TraceTies]) -> None:
        """Keep what ties a batch's traces to others with them (a trace already completed in this batch,
        by ``max_spans``, keeps what it had: the rest of its ties came too late, like its spans)."""
        for tid, ties in tied.items():
            trace = self._traces.get(tid)
            if trace is None:
                continue
            if trace.ties is None:
                trace.ties = ties
            else:
                trace.ties.merge(ties, self._assembly)

    def add_logs(self, events: Iterable[LogEvent]) -> None:
        """Hold log records beside their traces' spans; a record opens its trace, and keeps it from going
        quiet, as a span does. Records for a trace already graded, or past the per-trace limit, are
        counted, released from the budget and dropped."""
        now = self._clock()
        touched: dict[bytes, _Trace] = {}
        done, traces, limit = self._done, self._traces, self._limits.max_spans_per_trace
        late = over = 0
        for event in events:
            tid = event.trace_id
            if tid in done:
                late += 1
                continue
            trace = traces.get(tid)
            if trace is None:
                trace = traces[tid] = _Trace(now)
                self._opened += 1
            if trace.logs is None:
                trace.logs = []
            if len(trace.logs) >= limit:
                over += 1
                continue
            trace.logs.append(event)
            touched[tid] = trace
        for tid, trace in touched.items():
            trace.last_seen = now
            self._schedule(tid, trace)
        self._drop_logs("late", late)
        self._drop_logs("over_limit", over)
        self._flush_counts()

    def _drop_logs(self, reason: str, n: int) -> None:
        if n:
            self._ledger.release(0, n)  # before counting, so whoever sees the count also sees the room
            self._logs_dropped[reason] = self._logs_dropped.get(reason, 0) + n

    def expire(self) -> int:
        """Complete every trace that is due by now; returns how many."""
        now = self._clock()
        last_key = math.floor(now / self._limits.bucket)
        completed = 0
        while self._heap and self._heap[0] <= last_key:
            for tid in self._buckets.pop(heapq.heappop(self._heap), ()):
                trace = self._traces.get(tid)
                # Stale entries (the trace got a newer span and a later due time) are skipped.
                if trace is not None and trace.due <= now:
                    self._complete(tid, trace.due_reason)
                    completed += 1
        self._flush_counts()
        return completed

    def drain(self, reason: str = "shutdown") -> int:
        """Complete every buffered trace now (shutdown); returns how many."""
        tids = list(self._traces)
        for tid in tids:
            self._complete(tid, reason)
        self._buckets.clear()
        self._heap.clear()
        self._flush_counts()
        return len(tids)

    def _schedule(self, tid: bytes, trace: _Trace) -> None:
        lim = self._limits
        quiet = lim.root_grace if trace.root_seen else lim.idle_timeout
        due, reason = trace.last_seen + quiet, "root_ended" if trace.root_seen else "idle"
        if trace.first_seen + lim.max_trace_age < due:
            due, reason = trace.first_seen + lim.max_trace_age, "max_age"
        trace.due, trace.due_reason = due, reason
        key = math.ceil(due / lim.bucket)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = []
            heapq.heappush(self._heap, key)
        bucket.append(tid)

    def _complete(self, tid: bytes, reason: str) -> None:
        trace = self._traces.pop(tid)
        logs = tuple(trace.logs) if trace.logs else ()
        if not trace:
            # Log records only: no span of the trace came. Not remembered as done, so spans that still
            # come start a trace of their own (graded without these records).
            self._abandoned += 1
            self._drop_logs("no_spans", len(logs))
            return
        self._done[tid] = None
        if len(self._done) > self._limits.late_memory:
            self._done.popitem(last=False)
        self._completed[reason] = self._completed.get(reason, 0) + 1
        self._assembled += len(trace)
        self._logs_assembled += len(logs)
        self._emit(CompletedTrace(tid, tuple(trace), reason, trace.first_seen, logs, trace.ties))

    def _flush_counts(self) -> None:
        closed = sum(self._completed.values()) + self._abandoned
        if self._opened != closed:
            self._count(TRACES_ACTIVE.name, self._opened - closed)
        for reason, n in self._completed.items():
            self._count(TRACES_COMPLETED.name, n, reason=reason)
        if self._assembled:
            self._count(SPANS_ASSEMBLED.name, self._assembled)
        if self._logs_assembled:
            self._count(LOG_RECORDS_ASSEMBLED.name, self._logs_assembled)
        for reason, n in self._logs_dropped.items():
            self._count(LOG_RECORDS_DROPPED.name, n, reason=reason)
        if self._assembly.counts:
            for outcome, n in self._assembly.counts.items():
                self._count(RUNS_ASSEMBLY.name, n, outcome=outcome)
            self._assembly.counts.clear()
        self._opened, self._completed, self._assembled = 0, {}, 0
        self._abandoned, self._logs_assembled, self._logs_dropped = 0, 0, {}

"""Grading off the receive path: completed traces → trajectory → spec → grade → counts, verdict lines,
verdict events and the run viewer.

A trace whose grading raises is counted and logged with its id, and the worker goes on. ``Worker`` runs on
a thread of its own (``start``/``submit``/``stop``: one process, the queue bounded by the span budget, whose
room a trace gives back only once graded) or in its owner's thread (``handle``/``work``: a grading process).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.core.grade import RunGrade, grade, resolved
from luckrate.core.spec import Spec, spec_for
from luckrate.core.step import Trajectory
from luckrate.service.export.instruments import GRADE_DURATION, GRADE_ERRORS, TRACES_UNGRADED, VERDICT_DELAY
from luckrate.service.export.telemetry import Recorder
from luckrate.service.export.verdict_events import VerdictEvents
from luckrate.service.grade.completed import CompletedRun, CompletedTrace, parents_of
from luckrate.service.grade.ledger import NO_LEDGER, Ledger
from luckrate.service.grade.tally import REPORT_EVERY
from luckrate.service.grade.verdict_log import VerdictLog, bounded

log = logging.getLogger(__name__)

Hold = Callable[[RunGrade, Trajectory, Spec, tuple[str, ...]], Any]
"""``hold(grade, trajectory, spec, trace ids)``: a graded run (not gradable ones too) for the run viewer."""


@dataclass(frozen=True)
class Grading:
    """How a completed trace becomes a graded run."""

    specs: Mapping[str, Spec]
    adapt: Callable[[tuple], Trajectory]
    """``adapt(spans) -> Trajectory``; raises InvalidInput for spans it cannot read."""
    adapt_run: Callable[[list, dict], Trajectory] | None = None
    """``adapt_run(traces' spans, adopted parents) -> Trajectory``: a run of several traces (``CompletedRun``)."""


@dataclass(frozen=True)
class Outlets:
    """Where a handled trace goes besides the recorder's counts; each is optional, and none may block."""

    ledger: Ledger = NO_LEDGER
    """Paid for every trace handled, graded or not: its room, then its mark (after its verdict line)."""
    verdicts: VerdictLog | None = None
    events: VerdictEvents | None = None
    """Gets every graded run; its ``publish`` never blocks."""
    hold: Hold | None = None
    flush: Callable[[], Any] | None = None
    """Hands on what the others buffer (counts, held lines and marks): called by the worker's thread when it
    runs out of work, at least every ``Worker.FLUSH_EVERY`` seconds while busy, and on stop."""


_STOP = object()


class Worker:
    """Grades completed traces, on its own thread or in its owner's."""

    FLUSH_EVERY = REPORT_EVERY
    """Seconds between flushes while busy."""

    def __init__(
        self,
        grading: Grading,
        recorder: Recorder,
        outlets: Outlets = Outlets(),
        clock: Callable[[], float] = time.monotonic,
    ):
        """``clock``: the assembler's, for the first-span-to-verdict delay."""
        self._grading = grading
        self._recorder = recorder
        self._out = outlets
        self._clock = clock
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, trace: CompletedTrace | CompletedRun) -> None:
        """Never blocks (called by the assembler's thread)."""
        self._queue.put(trace)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="luckrate-grader", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Grade everything submitted so far, then stop; without start, grades in the caller's thread.
        Returns False when the deadline passed first."""
        self._queue.put(_STOP)
        if self._thread is None:
            self._run()
        else:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        if self._out.verdicts is not None:
            self._out.verdicts.close()
        return True

    def work(self) -> None:
        """Grade everything submitted so far, in the caller's thread (a grading process's loop)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self.handle(item)

    def _run(self) -> None:
        flush = self._out.flush
        flushed = time.monotonic()
        while (item := self._queue.get()) is not _STOP:
            self.handle(item)
            if flush is not None and (self._queue.empty() or time.monotonic() - flushed >= self.FLUSH_EVERY):
                flush()
                flushed = time.monotonic()
        if flush is not None:
            flush()

    def handle(self, item: CompletedTrace | CompletedRun) -> None:
        """Grade one trace, or one run of several (``run_assembly``); never raises."""
        started = time.perf_counter()
        traces = item.traces if isinstance(item, CompletedRun) else (item,)
        try:
            if isinstance(item, CompletedRun) and item.late:
                self._recorder.add(TRACES_UNGRADED.name, reason="late_for_run")
                log.info("trace %s not graded: it links to a run already graded", item.trace_id.hex())
            else:
                self._grade(item, started)
        except Exception:
            self._recorder.add(GRADE_ERRORS.name)
            log.exception("grading trace %s failed", item.trace_id.hex())
        finally:
            ledger = self._out.ledger
            for trace in traces:
                ledger.release(len(trace.packed), len(trace.logs))
                ledger.settle(trace.trace_id)

    def _read(self, item: CompletedTrace | CompletedRun) -> tuple[Any, CompletedTrace, list[CompletedTrace]]:
        """The item's trajectory (``adapt``, or ``adapt_run`` for a run of several traces), the trace its
        verdict is attached to (a run's earliest-started), and its traces in that order."""
        adapt, adapt_run = self._grading.adapt, self._grading.adapt_run
        if isinstance(item, CompletedTrace):
            return adapt(item.spans), item, [item]
        if len(item.traces) == 1:
            return adapt(item.traces[0].spans), item.traces[0], [item.traces[0]]
        starts = {t.trace_id: min(s.start_ns for s in t.spans) for t in item.traces}
        ordered = sorted(item.traces, key=lambda t: (starts[t.trace_id], t.trace_id))
        if adapt_run is None:
            raise RuntimeError("a run across traces reached a worker without adapt_run")
        parents = parents_of(item, [t.trace_id for t in ordered])
        return adapt_run([t.spans for t in ordered], parents), ordered[0], ordered

    def _grade(self, item: CompletedTrace | CompletedRun, started: float) -> None:
        tid = item.trace_id.hex()
        try:
            traj, trace, ordered = self._read(item)
        except InvalidInput as e:
            self._recorder.add(TRACES_UNGRADED.name, reason="invalid")
            log.info("trace %s not graded: %s", tid, e)
            return
        spec = spec_for(self._grading.specs, traj.agent)
        if spec is None:
            self._recorder.add(TRACES_UNGRADED.name, reason="no_spec")
            log.debug("trace %s not graded: no spec for agent %r", tid, bounded(traj.agent, 64))
            return
        traj = resolved(traj, spec)  # what is held and shown is what was graded (a tool named by its class, resolved)
        g = grade(traj, spec)
        out = self._out
        if out.hold is not None:
            out.hold(g, traj, spec, tuple(t.trace_id.hex() for t in ordered))
        if g.not_gradable is not None:
            # Not a run with a good or a bad path: out of luckrate.runs (and so of the Luck Rate), counted
            # beside the other traces not graded, and logged with its reason.
            self._recorder.add(TRACES_UNGRADED.name, reason="not_gradable")
            log.info("trace %s not gradable: %s", tid, g.not_gradable)
            if out.verdicts is not None:
                out.verdicts.write(g, spec.name)
            return
        root = trace.root_span_id
        self._recorder.run(g, spec, spec.name, trace=(trace.trace_id, root))
        if out.verdicts is not None and (g.violations or out.verdicts.every_run):
            out.verdicts.write(g, spec.name)
        if out.events is not None:
            out.events.publish(g, spec.name, trace.trace_id, root)
        self._recorder.add(GRADE_DURATION.name, time.perf_counter() - started)
        self._recorder.add(VERDICT_DELAY.name, max(0.0, self._clock() - item.first_seen))

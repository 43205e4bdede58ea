"""Grading off the receive path: completed traces → trajectory → spec → grade → metrics and verdict log.

One worker thread; the queue it reads is bounded by the SpanBudget (spans are released only after their
trace is graded). A trace whose grading raises is counted and logged with its id, and the worker goes on.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.core.grade import RunGrade, grade
from luckrate.core.spec import Spec, spec_for
from luckrate.service.assemble.assembler import CompletedTrace
from luckrate.service.assemble.run_assembly import CompletedRun, parents_of
from luckrate.service.grade.tally import REPORT_EVERY
from luckrate.service.export.instruments import GRADE_DURATION, GRADE_ERRORS, TRACES_UNGRADED, VERDICT_DELAY

log = logging.getLogger(__name__)

MAX_ECHO = 512
"""Longest value from span data echoed into the verdict log (details, agent names)."""
MAX_ECHO_VIOLATIONS = 100


def _bounded(value: Any, limit: int = MAX_ECHO) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "…"
    return value


class VerdictLog:
    """JSON Lines, one line per graded trace that has violations (with ``every_run``, per graded trace:
    a clean one has ``"violations": []``), and one per run not gradable (with ``"not_gradable": reason``);
    written by the worker thread only."""

    def __init__(self, path: str | Path, every_run: bool = False):
        self.every_run = every_run
        self._file = open(path, "a", encoding="utf-8")

    def write(self, g: RunGrade, spec_label: str) -> None:
        line = {
            "trace_id": g.id,
            "agent": _bounded(g.agent),
            "spec": spec_label,
            "output": g.output,
            "violations": [
                {k: _bounded(v) for k, v in viol.to_dict().items()} for viol in g.violations[:MAX_ECHO_VIOLATIONS]
            ],
        }
        if len(g.violations) > MAX_ECHO_VIOLATIONS:
            line["violations_omitted"] = len(g.violations) - MAX_ECHO_VIOLATIONS
        if g.not_gradable is not None:
            line["not_gradable"] = g.not_gradable
        self.write_line(json.dumps(line, ensure_ascii=False))

    def write_line(self, text: str) -> None:
        """One line, already encoded (grading processes send theirs to the one process that writes)."""
        self._file.write(text + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class HeldVerdicts(VerdictLog):
    """With the write-ahead log, in one process: verdict lines and settled trace ids wait for the grader's
    next flush (when it runs out of work, and every ``flush_every`` s while busy), then the lines are
    written and the traces marked, in that order, as a grading process's report does. So a kill loses
    both or neither: the trace is graded again after the restart, its line written once. A mark per trace
    was a system call per trace on the grading thread, which handed the GIL to the receivers each time:
    10% of the throughput (benchmarks/wal.py)."""

    def __init__(self, verdicts: VerdictLog | None, settle: Callable[[list[bytes]], Any]):
        self.every_run = verdicts.every_run if verdicts is not None else False
        self._verdicts, self._settle = verdicts, settle
        self._lines: list[str] = []
        self._traces: list[bytes] = []

    def write_line(self, text: str) -> None:
        self._lines.append(text)

    def add(self, trace_id: bytes) -> None:
        self._traces.append(trace_id)

    def flush(self) -> None:
        lines, self._lines = self._lines, []
        traces, self._traces = self._traces, []
        if self._verdicts is not None:
            for line in lines:
                self._verdicts.write_line(line)
        if traces:
            self._settle(traces)

    def close(self) -> None:
        self.flush()
        if self._verdicts is not None:
            self._verdicts.close()


_STOP = object()


class Worker:
    """Grades completed traces on its own thread."""

    def __init__(
        self,
        specs: Mapping[str, Spec],
        adapt: Callable[[tuple], Any],
        telemetry,
        *,
        release: Callable[[int], None] = lambda n: None,
        clock: Callable[[], float] = time.monotonic,
        verdict_log: VerdictLog | None = None,
        events=None,
        flush: Callable[[], Any] | None = None,
        flush_every: float = REPORT_EVERY,
        settled: Callable[[bytes], Any] | None = None,
        release_logs: Callable[[int], None] | None = None,
        adapt_run: Callable[[list, dict], Any] | None = None,
        hold: Callable[[RunGrade, Any, Spec, tuple[str, ...]], Any] | None = None,
    ):
        """``adapt(spans) -> Trajectory`` raises InvalidInput for spans it cannot read. ``events`` (a
        ``verdict_events.VerdictEvents``, or None) gets every graded run; its ``publish`` never blocks.
        ``flush``, when ``telemetry`` is a ``tally.Tally``: hands its counts on, called by the worker's
        thread when it runs out of work, at least every ``flush_every`` seconds while busy, and on stop.
        ``settled(trace_id)``: called once a trace is done with (graded or not), after its verdict is written:
        the write-ahead log marks it so that a replay does not grade it again.
        ``release(n)`` gives a graded trace's spans' room back, ``release_logs(n)`` its log records' (by
        default ``release``). ``adapt_run(traces' spans, adopted parents) -> Trajectory`` reads a run of
        several traces (``run_assembly.CompletedRun``). ``hold(grade, trajectory, spec, trace ids)`` gets
        every graded run, not gradable ones too, for the run viewer; it must not block."""
        self._hold = hold
        self._specs = specs
        self._adapt_run = adapt_run
        self._release_logs = release_logs or release
        self._adapt = adapt
        self._telemetry = telemetry
        self._release = release
        self._clock = clock
        self._verdicts = verdict_log
        self._events = events
        self._flush = flush
        self._flush_every = flush_every
        self._settled = settled
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
        if self._verdicts is not None:
            self._verdicts.close()
        return True

    def _run(self) -> None:
        flushed = time.monotonic()
        while (item := self._queue.get()) is not _STOP:
            self.handle(item)
            if self._flush is not None and (self._queue.empty() or time.monotonic() - flushed >= self._flush_every):
                self._flush()
                flushed = time.monotonic()
        if self._flush is not None:
            self._flush()

    def handle(self, item: CompletedTrace | CompletedRun) -> None:
        """Grade one trace, or one run of several (``run_assembly``); never raises."""
        started = time.perf_counter()
        traces = item.traces if isinstance(item, CompletedRun) else (item,)
        try:
            if isinstance(item, CompletedRun) and item.late:
                self._telemetry.add(TRACES_UNGRADED.name, reason="late_for_run")
                log.info("trace %s not graded: it links to a run already graded", item.trace_id.hex())
            else:
                self._grade(item, started)
        except Exception:
            self._telemetry.add(GRADE_ERRORS.name)
            log.exception("grading trace %s failed", item.trace_id.hex())
        finally:
            for trace in traces:
                self._release(len(trace.packed))
                if trace.logs:
                    self._release_logs(len(trace.logs))
                if self._settled is not None:
                    self._settled(trace.trace_id)

    def _read(self, item: CompletedTrace | CompletedRun) -> tuple[Any, CompletedTrace, list[CompletedTrace]]:
        """The item's trajectory (``adapt``, or ``adapt_run`` for a run of several traces), the trace its
        verdict is attached to (a run's earliest-started), and its traces in that order."""
        if isinstance(item, CompletedTrace):
            return self._adapt(item.spans), item, [item]
        if len(item.traces) == 1:
            return self._adapt(item.traces[0].spans), item.traces[0], [item.traces[0]]
        starts = {t.trace_id: min(s.start_ns for s in t.spans) for t in item.traces}
        ordered = sorted(item.traces, key=lambda t: (starts[t.trace_id], t.trace_id))
        if self._adapt_run is None:
            raise RuntimeError("a run across traces reached a worker without adapt_run")
        parents = parents_of(item, [t.trace_id for t in ordered])
        return self._adapt_run([t.spans for t in ordered], parents), ordered[0], ordered

    def _grade(self, item: CompletedTrace | CompletedRun, started: float) -> None:
        tid = item.trace_id.hex()
        try:
            traj, trace, ordered = self._read(item)
        except InvalidInput as e:
            self._telemetry.add(TRACES_UNGRADED.name, reason="invalid")
            log.info("trace %s not graded: %s", tid, e)
            return
        spec = spec_for(self._specs, traj.agent)
        if spec is None:
            self._telemetry.add(TRACES_UNGRADED.name, reason="no_spec")
            log.debug("trace %s not graded: no spec for agent %r", tid, _bounded(traj.agent, 64))
            return
        g = grade(traj, spec)
        if self._hold is not None:
            self._hold(g, traj, spec, tuple(t.trace_id.hex() for t in ordered))
        if g.not_gradable is not None:
            # Not a run with a good or a bad path: out of luckrate.runs (and so of the Luck Rate), counted
            # beside the other traces not graded, and logged with its reason.
            self._telemetry.add(TRACES_UNGRADED.name, reason="not_gradable")
            log.info("trace %s not gradable: %s", tid, g.not_gradable)
            if self._verdicts is not None:
                self._verdicts.write(g, spec.name)
            return
        root = trace.root_span_id
        self._telemetry.run(g, spec, spec.name, trace=(trace.trace_id, root))
        if self._verdicts is not None and (g.violations or self._verdicts.every_run):
            self._verdicts.write(g, spec.name)
        if self._events is not None:
            self._events.publish(g, spec.name, trace.trace_id, root)
        self._telemetry.add(GRADE_DURATION.name, time.perf_counter() - started)
        self._telemetry.add(VERDICT_DELAY.name, max(0.0, self._clock() - item.first_seen))

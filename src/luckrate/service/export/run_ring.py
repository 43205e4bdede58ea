"""The runs the viewer shows: the latest graded runs, newest first, in a ring of fixed size.

The grading thread (or, with ``--workers N``, the reader thread of each grading process's reports) adds;
the viewer's HTTP threads read. A run is held as the objects grading already built (its ``RunGrade``, its
``Trajectory``) plus a few fields, so holding one costs little beyond its own data; its page is worked out
when someone opens it (``luckrate.view.model``), not when it is graded.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from luckrate.core.grade import RunGrade
from luckrate.core.spec import Spec
from luckrate.core.step import Step, Trajectory
from luckrate.core.violation import Severity, Violation
from luckrate.service.export.instruments import VIEWER_RUNS_EVICTED

HIDDEN = "(content hidden)"
"""What a finding's detail reads when the viewer's content switch is off (details quote argument values)."""


@dataclass(slots=True)
class Held:
    """One graded run as the viewer holds it."""

    seq: int
    """Its place in arrival order (1, 2, ...): ``/api/runs?after=`` reads runs with a greater one."""
    grade: RunGrade
    traj: Trajectory
    spec: Spec
    """The spec it was graded against (shared with every other run of that spec)."""
    traces: tuple[str, ...]
    """The trace ids of the run, hex; the first is the one its verdict is attached to."""
    graded_at: float
    """Epoch seconds."""
    size: int = 0
    """Its estimated bytes (``estimate``), counted against the ring's ``max_bytes``."""

    @property
    def trace_id(self) -> str:
        return self.traces[0]


def without_content(traj: Trajectory, g: RunGrade) -> tuple[Trajectory, RunGrade]:
    """The run with no argument, result, error text, input or message left (the content switch off): the
    tool names, the timing and the findings' checks stay."""
    steps = tuple(replace(s, args={}, result=None, error=None if s.error is None else "error") for s in traj.steps)
    hidden = tuple(replace(v, detail=HIDDEN) for v in g.violations)
    return replace(traj, steps=steps, input="", messages=(), content=False), replace(g, violations=hidden)


def estimate(traj: Trajectory) -> int:
    """Roughly the bytes a held run keeps alive: its steps' results and errors (exactly: they are most of a
    run), 256 bytes an argument, a fixed part per step and per run. Under a microsecond a run (walking the
    arguments' values cost 15 times as much): the ring's byte bound is a guard against huge runs."""
    size = 2048 + (len(traj.input) if isinstance(traj.input, str) else sum(map(len, traj.input)))
    for s in traj.steps:
        size += 400 + len(s.tool) + len(s.result or "") + len(s.error or "") + 256 * len(s.args)
    return size


def pack(g: RunGrade, traj: Trajectory, traces: tuple[str, ...]) -> tuple:
    """A graded run as tuples of plain values, for a grading process's report: pickling the frozen records
    themselves cost 5x as much (benchmarks/viewer.py). Keeps what the viewer shows and what provenance
    reads (steps, input); not the messages or model turns."""
    violations = tuple((v.check, v.severity.value, v.step, v.tool, v.detail, v.source) for v in g.violations)
    steps = tuple((s.tool, s.args, s.result, s.error, s.t, s.duration, s.agent, s.call_id) for s in traj.steps)
    verdict = (g.id, g.case, g.agent, g.output_ok, violations, g.skipped, g.not_gradable)
    return (
        traces,
        verdict,
        (traj.id, traj.case, traj.agent, traj.input, traj.output_ok, traj.content, traj.error),
        steps,
    )


def unpack(packed: tuple) -> tuple[RunGrade, Trajectory, tuple[str, ...]]:
    """``pack`` undone, in the receiving process."""
    traces, (gid, case, agent, output_ok, violations, skipped, not_gradable), run, steps = packed
    g = RunGrade(
        gid,
        case,
        agent,
        output_ok,
        tuple(
            Violation(c, Severity(sev), step, tool, detail, source) for c, sev, step, tool, detail, source in violations
        ),
        skipped,
        not_gradable,
    )
    tid, tcase, tagent, given, t_ok, content, error = run
    made = tuple(Step(i, *s) for i, s in enumerate(steps))
    return g, Trajectory(tid, made, tcase, tagent, given, t_ok, content, error), traces


class RunRing:
    """The latest ``capacity`` runs; the oldest goes when a new one comes, counted by ``evicted``."""

    def __init__(
        self,
        capacity: int,
        *,
        max_bytes: int = 1 << 62,
        content: bool = True,
        count: Callable[..., object] = lambda *a, **k: None,
        clock: Callable[[], float] = time.time,
    ):
        """At most ``capacity`` runs and about ``max_bytes`` (``estimate``; the newest run stays whatever its
        size). ``content`` False keeps no content at all (``without_content``). ``count(name)`` records an
        eviction on ``luckrate.viewer.runs.evicted``."""
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0
        self.content = content
        self._count = count
        self._clock = clock
        self._runs: deque[Held] = deque()
        self._by_trace: dict[str, Held] = {}
        self._lock = threading.Lock()
        self._seq = 0
        self.evicted = 0

    def add(self, g: RunGrade, traj: Trajectory, spec: Spec, traces: tuple[str, ...]) -> None:
        """Never blocks for long: a lock held for a few dict and deque operations."""
        if not self.content:
            traj, g = without_content(traj, g)
        size = estimate(traj)
        dropped = 0
        with self._lock:
            self._seq += 1
            held = Held(self._seq, g, traj, spec, traces, self._clock(), size)
            self._runs.append(held)
            self.bytes += size
            for tid in traces:
                self._by_trace[tid] = held
            while len(self._runs) > self.capacity or (self.bytes > self.max_bytes and len(self._runs) > 1):
                old = self._runs.popleft()
                self.bytes -= old.size
                for tid in old.traces:
                    if self._by_trace.get(tid) is old:
                        del self._by_trace[tid]
                dropped += 1
            self.evicted += dropped
        if dropped:
            self._count(VIEWER_RUNS_EVICTED.name, dropped)

    def get(self, trace_id: str) -> Held | None:
        with self._lock:
            return self._by_trace.get(trace_id)

    def newest(self, after: int = 0) -> Iterator[Held]:
        """Newest first, those with ``seq > after``; a snapshot, safe while runs keep coming."""
        with self._lock:
            runs = list(self._runs)
        for held in reversed(runs):
            if held.seq <= after:
                return
            yield held

    @property
    def last(self) -> int:
        return self._seq

    def __len__(self) -> int:
        return len(self._runs)

"""Runs across traces (``runs_by = "links"`` or ``"conversation"``): completed traces → runs → the grader.

Some systems spread one run over several traces: AutoGen's runtime starts a trace per message delivery and
ties them only by span links, a hand-off may put each agent's tree in its own trace, a chat front end may
start a trace per user turn of one conversation (``gen_ai.conversation.id``). ``RunAssembler`` sits between
the trace assembler and the grader, on the assembler's thread, and groups completed traces the way
``luckrate grade --runs-by`` groups a file's (adapters/otlp/runs.py): traces tied by a link, in either
direction and through any chain, are one run; with ``conversation``, so are traces with one conversation id.

A trace cannot tell that a later one will link to it, so every completed trace waits: a run is graded once
``wait`` seconds pass with no new trace joining it (``quiet``), or ``max_age`` seconds after its first trace
completed (``max_age``), or at once when it holds ``max_traces`` traces (``max_traces``: a conversation
that never ends is graded in parts), or at shutdown. A trace that links to a trace of a run already graded
(it came after its run's wait) is *late*: counted, not graded, as a late span is. A link to a trace that
never arrived is counted (``links_missing``) when its run is graded. Link cycles are harmless: grouping is a
union of sets, never a walk. Memory: the traces held are the span budget's (their spans are released only
once graded); the graded trace ids remembered are bounded by ``memory``.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from luckrate.adapters.otlp.runs import MAX_TRACES_PER_RUN
from luckrate.service.grade.completed import CompletedRun, CompletedTrace
from luckrate.service.export.telemetry import Count, no_count
from luckrate.service.export.instruments import RUNS_ACTIVE, RUNS_ASSEMBLY, RUNS_COMPLETED


@dataclass(frozen=True)
class RunLimits:
    """Which traces make one run, and when a run is complete (see the module's docstring)."""

    conversation: bool = False
    """Traces sharing a conversation id are one run too (``runs_by = "conversation"``)."""
    wait: float = 30.0
    max_age: float = 600.0
    max_traces: int = MAX_TRACES_PER_RUN
    memory: int = 100_000
    """Trace ids of graded runs remembered (a trace linking to one of them is late)."""


class _Run:
    __slots__ = ("traces", "wanted", "conversations", "first", "due", "reason", "done")

    def __init__(self, now: float, max_age: float):
        self.traces: list[CompletedTrace] = []
        self.wanted: set[bytes] = set()
        """Linked traces that have not arrived yet."""
        self.conversations: set[str] = set()
        self.first = now
        self.due, self.reason = now + max_age, "max_age"
        self.done = False


class RunAssembler:
    """Single-threaded: only the assembler's thread calls ``add``, ``expire`` and ``drain``."""

    def __init__(
        self,
        emit: Callable[[CompletedRun], None],
        limits: RunLimits = RunLimits(),
        *,
        clock: Callable[[], float] = time.monotonic,
        count: Count = no_count,
    ):
        self._emit = emit
        self._conversation = limits.conversation
        self._wait, self._max_age = limits.wait, limits.max_age
        self._max_traces, self._memory = limits.max_traces, limits.memory
        self._clock = clock
        self._count = count
        self._run_of: dict[bytes, _Run] = {}
        self._wanted: dict[bytes, _Run] = {}
        self._by_conversation: dict[str, _Run] = {}
        self._graded: OrderedDict[bytes, None] = OrderedDict()
        """Trace ids of runs graded after their wait (a trace linking to one of them is late)."""
        self._heap: list[tuple[float, int, _Run]] = []
        self._seq = itertools.count()

    @property
    def active(self) -> int:
        """Traces held, waiting for the rest of their run."""
        return len(self._run_of)

    def add(self, trace: CompletedTrace) -> None:
        """A completed trace joins the runs it is tied to (merging them), or starts one."""
        now = self._clock()
        ties = trace.ties
        runs: dict[int, _Run] = {}
        missing: list[bytes] = []
        late = False
        waiting = self._wanted.pop(trace.trace_id, None)  # an earlier trace linked to this one
        if waiting is not None:
            runs[id(waiting)] = waiting
        if ties is not None:
            for linked in ties.linked:
                if linked == trace.trace_id:
                    continue
                held = self._run_of.get(linked) or self._wanted.get(linked)
                if held is not None:
                    runs[id(held)] = held
                elif linked in self._graded:
                    late = True
                else:
                    missing.append(linked)
            if self._conversation:
                for c in ties.conversations:
                    held = self._by_conversation.get(c)
                    if held is not None:
                        runs[id(held)] = held
        if late and not runs:
            self._count(RUNS_ASSEMBLY.name, 1, outcome="late_traces")
            self._emit(CompletedRun((trace,), "quiet", late=True))
            return
        if runs:  # as ``luckrate grade`` counts: traces minus runs
            self._count(RUNS_ASSEMBLY.name, len(runs), outcome="traces_joined")
        run = self._merge(list(runs.values()), now)
        run.traces.append(trace)
        self._run_of[trace.trace_id] = run
        run.wanted.discard(trace.trace_id)
        for linked in missing:
            run.wanted.add(linked)
            self._wanted[linked] = run
        if self._conversation and ties is not None:
            for c in ties.conversations:
                run.conversations.add(c)
                self._by_conversation[c] = run
        self._count(RUNS_ACTIVE.name, 1)
        if len(run.traces) >= self._max_traces:  # counted as completed by max_traces, the service's runs_split
            self._complete(run, "max_traces")
        else:
            self._schedule(run, now)

    def _merge(self, runs: list[_Run], now: float) -> _Run:
        if not runs:
            return _Run(now, self._max_age)
        runs.sort(key=lambda r: len(r.traces), reverse=True)
        into = runs[0]
        for other in runs[1:]:
            into.first = min(into.first, other.first)
            for t in other.traces:
                into.traces.append(t)
                self._run_of[t.trace_id] = into
            for linked in other.wanted:
                if linked not in self._run_of:
                    into.wanted.add(linked)
                    self._wanted[linked] = into
            for c in other.conversations:
                into.conversations.add(c)
                self._by_conversation[c] = into
            other.done = True
        into.wanted -= self._run_of.keys()
        return into

    def _schedule(self, run: _Run, now: float) -> None:
        due, reason = now + self._wait, "quiet"
        if run.first + self._max_age < due:
            due, reason = run.first + self._max_age, "max_age"
        run.due, run.reason = due, reason
        heapq.heappush(self._heap, (due, next(self._seq), run))

    def expire(self) -> int:
        """Grade every run that is due by now; returns how many."""
        now, n = self._clock(), 0
        while self._heap and self._heap[0][0] <= now:
            due, _, run = heapq.heappop(self._heap)
            if not run.done and run.due == due:  # else stale: merged away, graded, or rescheduled later
                self._complete(run, run.reason)
                n += 1
        return n

    def drain(self, reason: str = "shutdown") -> int:
        """Grade every held run now (shutdown); returns how many."""
        runs = {id(r): r for r in self._run_of.values()}
        for run in runs.values():
            self._complete(run, reason)
        self._heap.clear()
        return len(runs)

    def _complete(self, run: _Run, reason: str) -> None:
        run.done = True
        for t in run.traces:
            del self._run_of[t.trace_id]
            if reason != "max_traces":  # a conversation graded in parts: its next trace starts the next part
                self._graded[t.trace_id] = None
        while len(self._graded) > self._memory:
            self._graded.popitem(last=False)
        for linked in run.wanted:
            if self._wanted.get(linked) is run:
                del self._wanted[linked]
        for c in run.conversations:
            if self._by_conversation.get(c) is run:
                del self._by_conversation[c]
        if run.wanted:
            self._count(RUNS_ASSEMBLY.name, len(run.wanted), outcome="links_missing")
        self._count(RUNS_ACTIVE.name, -len(run.traces))
        self._count(RUNS_COMPLETED.name, 1, reason=reason)
        self._emit(CompletedRun(tuple(run.traces), reason))

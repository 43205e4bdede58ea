"""Grading in the receiving process (``workers = 1``): the pipeline's assembler on one thread
(``AssemblerLoop``), its worker on another, the receivers handing requests to the assembler's queue.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from luckrate.adapters.otlp import SpanRecord
from luckrate.adapters.otlp.logs import LogEvent

from luckrate.core.spec import Spec
from luckrate.service.assemble.assembler import Assembler, SpanBudget
from luckrate.service.assemble.intake import Handover
from luckrate.service.config import ServiceConfig
from luckrate.service.export.telemetry import Telemetry
from luckrate.service.grade.verdict_log import HeldVerdicts, VerdictLog
from luckrate.service.grade.worker import Outlets
from luckrate.service.process.pipeline import GradingPipeline, Sinks


_STOP = object()


log = logging.getLogger(__name__)


class _Logs(list):
    """A batch of log records on the assembler's queue (a plain list there is a batch of spans)."""

    __slots__ = ()


class AssemblerLoop:
    """The thread that owns an Assembler: takes batches from receivers, expires traces every bucket."""

    def __init__(self, assembler: Assembler, tick: float = 0.05, runs: Any = None):
        """``runs``: the ``run_assembly.RunAssembler`` the assembler hands completed traces to, when runs
        are assembled across traces; this thread expires and drains it too."""
        self.assembler = assembler
        self.runs = runs
        self._tick = tick
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, records: list[SpanRecord]) -> None:
        """Never blocks: the caller has reserved ``len(records)`` from the SpanBudget."""
        self._queue.put(records)

    def submit_logs(self, events: list[LogEvent]) -> None:
        """As ``submit``, for log records."""
        self._queue.put(_Logs(events))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="luckrate-assembler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Take what was submitted, complete every buffered trace (reason ``shutdown``), stop.
        Without start, drains in the caller's thread. Returns False if the thread did not finish in time."""
        if self._thread is None:
            self._queue.put(_STOP)
            self._run()
            return True
        self._queue.put(_STOP)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self._tick)
            except queue.Empty:
                item = None
            try:
                if item is _STOP:
                    self.assembler.drain("shutdown")
                    if self.runs is not None:
                        self.runs.drain("shutdown")
                    return
                if item.__class__ is _Logs:
                    self.assembler.add_logs(item)
                elif item is not None:
                    self.assembler.add(item)
                self.assembler.expire()
                if self.runs is not None:
                    self.runs.expire()
            except Exception:  # the owner must survive anything one batch does
                log.exception("trace assembly failed on a batch")


class BudgetLedger:
    """The receiving process's ledger: room goes back to the span budget at once; with the write-ahead log,
    marks wait with the verdict lines for the grader's next flush (``HeldVerdicts``)."""

    def __init__(self, budget: SpanBudget, held: HeldVerdicts | None = None):
        self._budget = budget
        self._held = held

    def release(self, spans: int, records: int = 0) -> None:
        self._budget.release(spans + records)  # one budget holds both

    def settle(self, trace_id: bytes) -> None:
        if self._held is not None:
            self._held.add(trace_id)


@dataclass
class InProcess:
    """The pipeline running on two threads: ``start`` then ``stop`` (``stop`` alone is safe)."""

    pipeline: GradingPipeline
    loop: AssemblerLoop

    @classmethod
    def build(
        cls, cfg: ServiceConfig, specs: Mapping[str, Spec], telemetry: Telemetry, budget: SpanBudget, sinks: Sinks
    ) -> InProcess:
        verdicts = VerdictLog(cfg.verdict_log, cfg.verdict_log_all) if cfg.verdict_log else None
        # With the write-ahead log, lines then their marks, at each flush: a kill loses both or neither.
        held = HeldVerdicts(verdicts, sinks.wal.settle) if sinks.wal is not None else None
        outlets = Outlets(
            BudgetLedger(budget, held),
            verdicts=(held if held is not None else verdicts) if verdicts else None,
            hold=sinks.ring.add if sinks.ring is not None else None,
            flush=held.flush if held is not None else None,
        )
        pipeline = GradingPipeline(cfg, specs, telemetry, outlets)
        loop = AssemblerLoop(pipeline.assembler, tick=pipeline.limits.bucket, runs=pipeline.runs)
        return cls(pipeline, loop)

    @property
    def active(self) -> int:
        return self.pipeline.active

    def handover(self) -> Handover:
        """Where the intake hands accepted requests: the assembler's queue, as records it compacts itself."""
        return Handover(self.loop.submit, submit_logs=self.loop.submit_logs)

    def start(self) -> None:
        self.pipeline.worker.start()
        self.loop.start()

    def stop(self, timeout: float) -> bool:
        """Complete and grade every buffered trace, then export the last verdict events."""
        deadline = time.monotonic() + timeout
        done = self.loop.stop(max(0.1, deadline - time.monotonic()))
        done = self.pipeline.worker.stop(max(0.1, deadline - time.monotonic())) and done
        if self.pipeline.events is not None:  # after grading (its last verdicts), before metrics (its drop count)
            self.pipeline.events.shutdown(max(0.1, deadline - time.monotonic()))
        return done

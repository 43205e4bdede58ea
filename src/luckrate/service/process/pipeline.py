"""The grading pipeline, wired once: assemble → (runs across traces) → grade, and the verdict events.

``GradingPipeline`` is the one place that builds the ``OutputRule``, the ``Assembler``, the ``RunAssembler``,
the ``Worker`` and the ``VerdictEvents``, from the config, the specs and a recorder. Both process models
run it (the Collector builds every pipeline from its components' factories the same way):

- in the receiving process (``workers = 1``), ``in_process.InProcess`` runs its assembler and its worker on
  a thread each. The recorder is ``Telemetry``; the worker counts in a ``Tally`` of its own that it hands
  on when it runs out of work (``flush``): per-run SDK calls cost several µs each.
- in a grading process (``--workers N``), ``grading_process`` calls ``add``, ``add_logs``, ``expire`` and
  ``drain``, and the worker grades in that thread. The recorder is the process's ``Tally`` (already a
  buffer, so the worker counts on it directly), cut into reports between batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from luckrate.adapters.otlp import OutputRule, SpanRecord, trajectory_from_spans
from luckrate.adapters.otlp.assemble import trajectory_from_run
from luckrate.adapters.otlp.logs import LogEvent
from luckrate.core.spec import Spec
from luckrate.service.assemble.assembler import Assembler, Limits
from luckrate.service.assemble.run_assembly import RunAssembler, RunLimits
from luckrate.service.assemble.wal import WriteAheadLog
from luckrate.service.config import ServiceConfig
from luckrate.service.export.run_ring import RunRing
from luckrate.service.export.telemetry import Count, Recorder
from luckrate.service.export.verdict_events import verdict_events
from luckrate.service.grade.completed import CompletedRun
from luckrate.service.grade.tally import Tally, apply
from luckrate.service.grade.worker import Grading, Outlets, Worker


@dataclass(frozen=True)
class Sinks:
    """What the receiving process's grading writes to beyond the counts: the write-ahead log (its marks) and
    the run viewer's ring. Grading processes send both back in their reports, and the pool writes them."""

    wal: WriteAheadLog | None = None
    ring: RunRing | None = None


class GradingPipeline:
    """Assembler → (RunAssembler) → Worker, with the verdict events; see the module's docstring."""

    def __init__(
        self,
        cfg: ServiceConfig,
        specs: Mapping[str, Spec],
        recorder: Recorder,
        outlets: Outlets = Outlets(),
        clock: Callable[[], float] = time.monotonic,
    ):
        """``recorder`` gets every count (a ``Tally`` is used as the worker's own). ``outlets``: the ledger,
        verdict lines and run viewer the worker hands each trace to; its ``flush`` runs after the
        worker's counts are handed on. ``clock``: the assembler's (a grading process stamps each batch)."""
        rule = OutputRule(
            attribute=cfg.output_attribute, evaluation=cfg.output_evaluation, threshold=cfg.output_threshold
        )
        self.recorder = recorder
        self.events = verdict_events(cfg, recorder.add) if cfg.otlp_logs else None
        self.tally = recorder if isinstance(recorder, Tally) else Tally()
        self._flush_outlets = outlets.flush
        grading = Grading(
            specs,
            lambda spans: trajectory_from_spans(spans, rule),
            lambda traces, parents: trajectory_from_run(traces, parents, rule),
        )
        self.worker = Worker(grading, self.tally, replace(outlets, events=self.events, flush=self.flush), clock)
        self.runs = run_assembler(cfg, self.worker.submit, recorder.add)
        self.limits = Limits.from_config(cfg)
        self.assembler = Assembler(
            self.runs.add if self.runs is not None else self.worker.submit,
            limits=self.limits,
            clock=clock,
            count=recorder.add,
            ledger=outlets.ledger,
        )

    @property
    def active(self) -> int:
        """Traces buffered: in the assembler, and held for the rest of their run."""
        return self.assembler.active + (self.runs.active if self.runs is not None else 0)

    def flush(self) -> None:
        """Hand the worker's counts to the recorder (when they were kept apart), then the outlets' buffers."""
        if self.tally is not self.recorder:
            apply(self.tally.cut([]), self.recorder)
        if self._flush_outlets is not None:
            self._flush_outlets()

    # Driven inline (a grading process): each call grades, in the caller's thread, whatever it completed.

    def add(self, records: Iterable[SpanRecord]) -> None:
        self.assembler.add(records)
        self.worker.work()

    def add_logs(self, events: Iterable[LogEvent]) -> None:
        self.assembler.add_logs(events)
        self.worker.work()

    def expire(self) -> None:
        self.assembler.expire()
        if self.runs is not None:
            self.runs.expire()
        self.worker.work()

    def drain(self) -> None:
        """Complete and grade everything buffered (reason ``shutdown``)."""
        self.assembler.drain("shutdown")
        if self.runs is not None:
            self.runs.drain("shutdown")
        self.worker.work()


def run_assembler(cfg: ServiceConfig, emit: Callable[[CompletedRun], None], count: Count) -> RunAssembler | None:
    """The stage that groups completed traces into runs, when ``runs_by`` asks for runs across traces."""
    if cfg.runs_by == "trace":
        return None
    limits = RunLimits(cfg.runs_by == "conversation", cfg.run_wait, cfg.max_run_age, memory=cfg.late_memory)
    return RunAssembler(emit, limits, count=count)

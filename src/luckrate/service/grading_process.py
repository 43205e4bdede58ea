"""A grading process of ``luckrate serve --workers N``: its main loop, and the reports it sends back.

It runs the same Assembler and Worker a single process runs, on one thread, over the traces it owns
(``workers.route``), grading as traces complete. What it counts goes back to the receiving process in
``Report``s, cut only between batches: every span a report settles is counted in that same report, which
is what keeps the accounting identities exact across processes (see ``workers``).
"""

from __future__ import annotations

import logging
import signal
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from luckrate.adapters.otlp import OutputRule, records_from_request, request_from_protobuf, trajectory_from_spans
from luckrate.core.spec import load_specs
from luckrate.service.assembler import Assembler, Limits
from luckrate.service.config import ServiceConfig
from luckrate.service.exemplars import span_ids
from luckrate.service.telemetry import BY_NAME, Labels, Telemetry
from luckrate.service.verdict_events import verdict_events
from luckrate.service.worker import VerdictLog, Worker

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


class _RawAgents:
    """A worker's label policy: agent names go back raw (the first-N list lives in the receiving process, so
    that N workers share one), tool names are already bounded by the spec."""

    @staticmethod
    def agent(name: str | None) -> str:
        return (name or "")[:MAX_AGENT]

    tool = staticmethod(Labels.tool)


class Tally:
    """A worker's Telemetry: records what Telemetry records, as deltas until the next report."""

    def __init__(self) -> None:
        self.labels = _RawAgents()
        self._reset()

    def _reset(self) -> None:
        self.counts: dict = {}
        self.samples: dict[str, list[float]] = {}
        self.exemplars: dict = {}
        self.settled = 0

    def add(self, name: str, value: float = 1, *, context=None, **attributes: str) -> None:
        if BY_NAME[name].kind == "histogram":
            self.samples.setdefault(name, []).append(value)
        else:
            key = (name, tuple(attributes.items()))
            self.counts[key] = self.counts.get(key, 0) + value
            if context is not None and (ids := span_ids(context)) is not None:
                self.exemplars[key] = ids  # the receiving process offers it with the summed increment

    run = Telemetry.run  # the same instruments and labels, recorded through add and labels above

    def release(self, n: int) -> None:
        self.settled += n

    @property
    def pending(self) -> bool:
        return bool(self.counts or self.samples or self.settled)

    def cut(self, lines: list[str], done: bool = False) -> Report:
        report = Report(self.counts, self.samples, lines, self.settled, done, self.exemplars)
        self._reset()
        return report


class _HeldLines(VerdictLog):
    """A worker's verdict log: lines wait for the next report (one process writes the file)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, text: str) -> None:
        self.lines.append(text)

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines

    def close(self) -> None:
        pass


class _StampedClock:
    """The assembler's clock. A batch is stamped with the time the receiving process took it (Linux's
    CLOCK_MONOTONIC is one clock for every process), so time spent between processes counts in the quiet
    periods and in the verdict delay, as it does in one process."""

    def __init__(self) -> None:
        self.stamp: float | None = None

    def __call__(self) -> float:
        return time.monotonic() if self.stamp is None else self.stamp


def worker_main(cfg: ServiceConfig, index: int, n: int, inbox, outbox, log_level: int = logging.INFO) -> None:
    """A grading process: read batches until told to stop (None), then grade everything buffered and send
    the last report; exit at once if the receiving process is gone."""
    # Ctrl-C reaches the whole process group, and SIGTERM may too: the receiving process decides when a
    # worker drains, so that it drains after the receivers stopped, not before.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s %(levelname)s %(name)s[worker {index}]: %(message)s")
    specs = load_specs(cfg.spec)
    tally, lines = Tally(), _HeldLines()
    rule = OutputRule(attribute=cfg.output_attribute, evaluation=cfg.output_evaluation,
                      threshold=cfg.output_threshold)
    events = verdict_events(cfg, tally.add) if cfg.otlp_logs else None  # each grading process exports its own
    worker = Worker(specs, lambda spans: trajectory_from_spans(spans, rule), tally, release=tally.release,
                    verdict_log=lines if cfg.verdict_log else None, events=events)
    limits = Limits.from_config(cfg)
    clock = _StampedClock()
    assembler = Assembler(worker.handle, limits=limits, clock=clock, count=tally.add, release=tally.release)

    def mine(trace_id: bytes) -> bool:
        return zlib.crc32(trace_id) % n == index

    last = time.monotonic()
    while (message := _next(inbox, limits.bucket)) is not None:
        if message is _GONE:
            # The receiving process died (it would have sent None): no one can take a report, so grading
            # the buffer would only burn the CPU its restarted successor needs.
            return
        if message is not _IDLE:
            stamp, body = message
            records, _ = records_from_request(request_from_protobuf(body), keep_attribute=cfg.output_attribute,
                                              keep_trace=mine, packed=True)
            clock.stamp = stamp
            try:
                assembler.add(records)
            finally:
                clock.stamp = None
        assembler.expire()
        now = time.monotonic()
        if tally.pending and now - last >= REPORT_EVERY:
            if not _report(outbox, tally.cut(lines.take())):
                return
            last = now
    assembler.drain("shutdown")
    if events is not None:  # its last exports and drop counts go into the last report
        events.shutdown(cfg.shutdown_timeout)
    _report(outbox, tally.cut(lines.take(), done=True))


def _report(outbox, report: Report) -> bool:
    """False when the receiving process is gone (killed): nobody is left to count anything."""
    try:
        outbox.send(report)
        return True
    except OSError:
        return False


_IDLE = object()
_GONE = object()


def _next(inbox, timeout: float) -> Any:
    """The next batch, ``_IDLE`` when none came within ``timeout``, None when asked to stop, ``_GONE``
    when the receiving process is gone."""
    try:
        return inbox.recv() if inbox.poll(timeout) else _IDLE
    except (EOFError, OSError):
        return _GONE

"""A grading process of ``luckrate serve --workers N``: its main loop, and the reports it sends back.

It runs the same ``GradingPipeline`` a single process runs, on one thread, over the traces it owns
(``assemble.routing``), grading as traces complete. What it counts goes back to the receiving process in
``Report``s, cut only between batches: every span a report settles is counted in that same report, which
is what keeps the accounting identities exact across processes (see ``pool``).
"""

from __future__ import annotations

import logging
import signal
import struct
import time
from array import array
from typing import Any

from luckrate.adapters.otlp import logs_request_from_protobuf, request_from_protobuf
from luckrate.adapters.otlp.compaction import records_at
from luckrate.adapters.otlp.conventions import interning
from luckrate.adapters.otlp.logs import events_at
from luckrate.core.spec_loader import load_specs
from luckrate.service.config import ServiceConfig
from luckrate.service.grade.tally import REPORT_EVERY, Report, Tally
from luckrate.service.grade.verdict_log import HeldLines
from luckrate.service.grade.worker import Outlets
from luckrate.service.process.pipeline import GradingPipeline


class _StampedClock:
    """The assembler's clock. A batch is stamped with the time the receiving process took it (Linux's
    CLOCK_MONOTONIC is one clock for every process), so time spent between processes counts in the quiet
    periods and in the verdict delay, as it does in one process."""

    def __init__(self) -> None:
        self.stamp: float | None = None

    def __call__(self) -> float:
        return time.monotonic() if self.stamp is None else self.stamp


def worker_main(cfg: ServiceConfig, index: int, inbox, outbox, log_level: int = logging.INFO) -> None:
    """A grading process: read batches until told to stop (None), then grade everything buffered and send
    the last report; exit at once if the receiving process is gone."""
    # Ctrl-C reaches the whole process group, and SIGTERM may too: the receiving process decides when a
    # worker drains, so that it drains after the receivers stopped, not before.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s %(levelname)s %(name)s[worker {index}]: %(message)s")
    specs = load_specs(cfg.spec)
    tally, lines = Tally(marks=cfg.wal_dir is not None), HeldLines(cfg.verdict_log_all)
    outlets = Outlets(  # the tally is the ledger too: what a report settles travels with its counts
        tally,
        verdicts=lines if cfg.verdict_log else None,
        hold=tally.hold if cfg.viewer is not None else None,
    )
    clock = _StampedClock()
    pipeline = GradingPipeline(cfg, specs, tally, outlets, clock)  # its verdict events are this process's own

    tables = interning()  # this process's own compaction tables: its buffer shares through them
    last = time.monotonic()
    while (message := _next(inbox, pipeline.limits.bucket)) is not None:
        if message is _GONE:
            # The receiving process died (it would have sent None): no one can take a report, so grading
            # the buffer would only burn the CPU its restarted successor needs.
            return
        if message is not _IDLE:
            stamp, picks, body, logs = message
            clock.stamp = stamp
            try:
                if logs:
                    pipeline.add_logs(events_at(logs_request_from_protobuf(body), picks))
                else:
                    pipeline.add(
                        records_at(
                            request_from_protobuf(body),
                            picks,
                            keep_attribute=cfg.output_attribute,
                            packed=True,
                            tables=tables,
                        )
                    )
            finally:
                clock.stamp = None
        pipeline.expire()
        now = time.monotonic()
        if tally.pending and now - last >= REPORT_EVERY:
            if not _report(outbox, tally.cut(lines.take())):
                return
            last = now
    pipeline.drain()
    if pipeline.events is not None:  # its last exports and drop counts go into the last report
        pipeline.events.shutdown(cfg.shutdown_timeout)
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
        return receive_batch(inbox) if inbox.poll(timeout) else _IDLE
    except (EOFError, OSError):
        return _GONE


# A batch crosses the pipe as two frames, a head (stamp, whether it is a logs request, then the span or
# record positions) and the request as received; an empty head asks the worker to stop. Frames, not
# pickles: pickling copied every request once more, and was a fifth of the receiving process's time (py-spy).
_STAMP = struct.Struct("<d?")


def send_batch(conn, stamp: float, picks: list[int], body: bytes, logs: bool = False) -> None:
    conn.send_bytes(_STAMP.pack(stamp, logs) + array("I", picks).tobytes())
    conn.send_bytes(body)


def send_stop(conn) -> None:
    conn.send_bytes(b"")


def receive_batch(conn) -> tuple[float, array, bytes, bool] | None:
    head = conn.recv_bytes()
    if not head:
        return None
    picks = array("I")
    picks.frombytes(head[_STAMP.size :])
    stamp, logs = _STAMP.unpack_from(head)
    return stamp, picks, conn.recv_bytes(), logs

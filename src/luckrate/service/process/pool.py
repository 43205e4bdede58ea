"""Grading on several processes (``luckrate serve --workers N``): one receiving process, N grading ones.

The receiving process keeps the listeners, the span budget, the metrics and the verdict log. Each grading
process (a *worker*) owns the traces whose id routes to it, ``crc32(trace id) mod N`` (what the Collector's
load-balancing exporter does with ``routing_key: traceID``), and runs the same Assembler and Worker a single
process runs, grading on its one thread as traces complete.

A request goes, encoded once, to every worker that owns one of its spans; each decodes it and keeps its
own spans. Workers answer with reports: counter deltas, histogram samples, verdict lines, and how many spans
they settled (graded, duplicate or late). A report is cut only between batches, when every span the worker
settled is also counted in it, so the sums the receiving process keeps satisfy the accounting identities
exactly. A worker that dies loses only what it had not settled: the receiving process counts those spans in
``spans_lost{reason="worker_died"}``, gives their room back to the budget, and starts a new worker.

Standard library only: multiprocessing pipes between spawned processes (not forked: the receiving process
runs gRPC's threads, and forking those is unsafe). The grading process's side is ``grading_process``.
"""

from __future__ import annotations

import fcntl
import logging
import multiprocessing
import queue
import threading
import time
from dataclasses import dataclass, field
from queue import SimpleQueue
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.service.assemble.assembler import SpanBudget
from luckrate.core.spec import Spec, spec_for
from luckrate.service.config import ServiceConfig, worker_count
from luckrate.service.process.pipeline import Sinks
from luckrate.service.process.grading_process import send_batch, send_stop, worker_main
from luckrate.service.assemble.intake import Handover
from luckrate.service.assemble.routing import Judged, route
from luckrate.service.export.run_ring import unpack
from luckrate.service.grade.tally import Report, apply
from luckrate.service.export.telemetry import Telemetry
from luckrate.service.assemble.wal import Feed
from luckrate.service.grade.verdict_log import VerdictLog
from luckrate.service.export.instruments import LOG_RECORDS_DROPPED, SPANS_LOST, TRACES_ACTIVE

log = logging.getLogger(__name__)

RESTART_PAUSE = 1.0
"""A worker that dies within this many seconds of starting is restarted only after this pause (a worker
that cannot start at all must not spin)."""


_STOP_SENDING = object()


def _send_all(slot: "_Slot", messages: queue.SimpleQueue, conn) -> None:
    """One worker's sender thread: receivers never wait on a busy worker (the span budget and
    ``PoolBudget``'s byte bound keep the queue bounded)."""
    try:
        while (message := messages.get()) is not _STOP_SENDING:
            if message is None:
                send_stop(conn)
                break
            send_batch(conn, *message)
            slot.sent_bytes(messages, len(message[2]))
    except OSError:
        pass  # the worker died; its reader counts what it held
    finally:
        conn.close()


PIPE_BYTES = 1 << 20
"""Pipe capacity asked for (Linux's default ceiling, ``/proc/sys/fs/pipe-max-size``)."""


def _widen(conn) -> None:
    """A request of a few hundred KB then fits the pipe whole: with the default 64 KiB the worker read it
    in pieces, each waiting on the sender thread, and py-spy saw 10% of a worker in ``Connection._recv``."""
    try:
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:  # over the system's ceiling, or not Linux: the default works, only slower
        pass


@dataclass
class _Slot:
    """One worker as the receiving process sees it. ``sent - settled`` spans (and ``sent_records -
    settled_records`` log records) are held by the worker (or on their way to it); that is what its death
    loses."""

    index: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: int = 0
    settled: int = 0
    sent_records: int = 0
    settled_records: int = 0
    active: int = 0
    """Traces it buffers, from its reports."""
    queue: queue.SimpleQueue | None = None
    process: Any = None
    outbox: Any = None
    started: float = 0.0
    done: bool = False
    """It drained and sent its last report."""

    backlog: int = 0
    """Bytes queued for it and not yet written to its pipe."""

    def send(self, message: tuple, spans: int, records: int = 0) -> None:
        with self.lock:  # one cut with a death: a batch counts against exactly one worker process
            self.sent += spans
            self.sent_records += records
            self.backlog += len(message[2])
            assert self.queue is not None, "sent to before its worker started"
            self.queue.put(message)

    def sent_bytes(self, messages: SimpleQueue[Any], n: int) -> None:
        with self.lock:
            if messages is self.queue:  # not a dead worker's queue (its backlog was dropped with it)
                self.backlog -= n


class PoolBudget(SpanBudget):
    """The span budget, refusing also while a worker has more than ``max_backlog`` bytes queued. Spans
    bound what workers hold; bytes bound what waits for them: a request is queued whole, and one with a
    single usable span among megabytes of rejected ones would otherwise cost its size for one span."""

    def __init__(self, limit: int, max_backlog: int):
        super().__init__(limit)
        self.max_backlog = max_backlog
        self.pool: WorkerPool | None = None

    def try_acquire(self, n: int) -> bool:
        if self.pool is not None and self.pool.backlog > self.max_backlog:
            return False
        return super().try_acquire(n)


class WorkerPool:
    """N grading processes behind one Intake: ``prepare`` and ``submit`` are its hand-over hooks."""

    def __init__(
        self, cfg: ServiceConfig, telemetry: Telemetry, budget: SpanBudget, sinks: Sinks, specs: Mapping[str, Spec]
    ):
        """``sinks.wal``: marked with the traces each report settles (after their verdict lines); when a
        worker dies, what it held is read back from it and handed to its successor through ``replay``
        (``Intake.replay``, set once the intake exists). ``sinks.ring``: each run a report carries, with the
        spec it was graded against (the grading processes load the same spec file), for the run viewer
        (the grading processes send them only when it is on)."""
        self._ring = sinks.ring
        self._specs = specs
        self.n = worker_count(cfg)
        self._wal = sinks.wal
        self.replay: Feed | None = None
        self._cfg = cfg
        self._telemetry = telemetry
        self._budget = budget
        self._verdicts = VerdictLog(cfg.verdict_log) if cfg.verdict_log else None
        self._context = multiprocessing.get_context("spawn")
        self._slots = [_Slot(i) for i in range(self.n)]
        self._readers: list[threading.Thread] = []
        self._apply_lock = threading.Lock()
        self._stopping = False
        self._failed = False

    @property
    def active(self) -> int:
        """Traces buffered across workers (as of their last reports)."""
        return sum(s.active for s in self._slots)

    @property
    def backlog(self) -> int:
        """The most bytes queued for one worker."""
        return max(s.backlog for s in self._slots)

    @property
    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots if s.process is not None]

    def handover(self) -> Handover:
        """Where the intake hands accepted requests: each worker gets the request's encoding and the
        positions of the spans (or records) of its traces."""
        return Handover(self.submit, self.prepare, self.submit_logs, self.prepare_logs)

    @staticmethod
    def prepare(request: ExportTraceServiceRequest, judged: Judged, raw: bytes | None) -> tuple[list[list[int]], bytes]:
        """The request's encoding, once for every worker (after the budget took its spans): as received,
        serialized again only when the receiver had no encoding to hand on."""
        return judged.picks, raw if raw is not None else request.SerializeToString()

    prepare_logs = prepare
    """The same for a logs request: its encoding once, and the record positions each worker owns."""

    def submit_logs(self, prepared: tuple[list[list[int]], bytes]) -> None:
        """``submit`` for log records: each worker gets the positions of the records of its traces."""
        picks, body = prepared
        stamp = time.monotonic()
        for slot, mine in zip(self._slots, picks):
            if mine:
                slot.send((stamp, mine, body, True), 0, len(mine))

    def submit(self, prepared: tuple[list[list[int]], bytes]) -> None:
        """Never blocks: each worker's sender thread takes it from there. A worker gets the positions of its
        spans with the request, so it compacts them without stepping over the others' (compaction.records_at)."""
        picks, body = prepared
        stamp = time.monotonic()
        for slot, mine in zip(self._slots, picks):
            if mine:
                slot.send((stamp, mine, body), len(mine))

    def start(self) -> None:
        for slot in self._slots:
            self._launch(slot, queue.SimpleQueue())
            reader = threading.Thread(
                target=self._read, args=(slot,), name=f"luckrate-worker-{slot.index}", daemon=True
            )
            reader.start()
            self._readers.append(reader)

    def stop(self, timeout: float) -> bool:
        """Every worker grades what it holds and sends its last report; False when one did not within
        ``timeout`` or died while draining (its spans are counted as lost)."""
        deadline = time.monotonic() + timeout
        self._stopping = True
        for slot in self._slots:
            with slot.lock:
                if slot.queue is not None:
                    slot.queue.put(None)
        for reader in self._readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        ok = not self._failed and all(s.done for s in self._slots if s.process is not None)
        for slot in self._slots:
            if slot.process is not None and slot.process.is_alive():
                slot.process.kill()
                slot.process.join(5)
        if self._verdicts is not None:
            with self._apply_lock:
                self._verdicts.close()
        return ok

    def _launch(self, slot: _Slot, messages: queue.SimpleQueue) -> None:
        inbox_r, inbox_w = self._context.Pipe(duplex=False)
        outbox_r, outbox_w = self._context.Pipe(duplex=False)
        _widen(inbox_w)
        _widen(outbox_w)
        process = self._context.Process(
            target=worker_main,
            name=f"luckrate-worker-{slot.index}",
            daemon=True,
            args=(self._cfg, slot.index, inbox_r, outbox_w, logging.getLogger().getEffectiveLevel()),
        )
        process.start()
        # Only the worker holds these ends now, so its death is an EOF here.
        inbox_r.close()
        outbox_w.close()
        with slot.lock:
            slot.queue = messages  # already in place after a death (_died swaps it under the lock)
        slot.process, slot.outbox, slot.started = process, outbox_r, time.monotonic()
        threading.Thread(
            target=_send_all, args=(slot, messages, inbox_w), name=f"luckrate-send-{slot.index}", daemon=True
        ).start()

    def _read(self, slot: _Slot) -> None:
        """One worker's reports, applied in order; a death is counted and the worker replaced."""
        while True:
            try:
                report = slot.outbox.recv()
            except (EOFError, OSError):
                if self._died(slot):
                    continue
                return
            self._apply(slot, report)
            if report.done:
                slot.done = True
                slot.process.join(5)
                return

    def _apply(self, slot: _Slot, report: Report) -> None:
        with slot.lock:
            slot.settled += report.settled
            slot.settled_records += report.settled_records
        # Before counting, so whoever sees the count also sees the room.
        self._budget.release(report.settled + report.settled_records)
        with self._apply_lock:
            slot.active += apply(report, self._telemetry)
            if self._verdicts is not None:
                for line in report.lines:
                    self._verdicts.write_line(line)
        if self._ring is not None:
            for packed in report.runs:
                g, traj, traces = unpack(packed)
                spec = spec_for(self._specs, g.agent)
                if spec is not None:
                    self._ring.add(g, traj, spec, traces)
        if self._wal is not None and report.traces:
            self._wal.settle(report.traces)

    def _died(self, slot: _Slot) -> bool:
        """Count what the dead worker held; start another unless stopping. True when one was started."""
        slot.process.join(5)
        if slot.process.is_alive():  # closed its pipe but lives on: it must not grade beside its successor
            slot.process.kill()
            slot.process.join(5)
        code = slot.process.exitcode
        replacement: queue.SimpleQueue = queue.SimpleQueue()
        with slot.lock:
            lost, active = slot.sent - slot.settled, slot.active
            lost_records = slot.sent_records - slot.settled_records
            slot.sent = slot.settled = slot.active = slot.backlog = slot.sent_records = slot.settled_records = 0
            old, slot.queue = slot.queue, replacement
        if old is not None:  # a worker that died had its queue
            old.put(_STOP_SENDING)
        self._budget.release(lost + lost_records)
        with self._apply_lock:
            self._telemetry.add(SPANS_LOST.name, lost, reason="worker_died")
            if lost_records:
                self._telemetry.add(LOG_RECORDS_DROPPED.name, lost_records, reason="worker_died")
            if active:
                self._telemetry.add(TRACES_ACTIVE.name, -active)
        if self._stopping:
            self._failed = True
            log.error("worker %d died while draining (exit code %s): %d span(s) lost", slot.index, code, lost)
            return False
        log.error("worker %d died (exit code %s): %d buffered span(s) lost; starting another", slot.index, code, lost)
        if time.monotonic() - slot.started < RESTART_PAUSE:
            time.sleep(RESTART_PAUSE)
        self._launch(slot, replacement)
        if self._wal is not None and self.replay is not None:
            # Counted lost above, and replayed here: both, so that the identities still close (what the
            # successor grades is assembled again).
            again = self._wal.replay_where(self.replay, lambda tid: route(tid, self.n) == slot.index)
            log.info("worker %d: %d span(s) of its traces read back from the write-ahead log", slot.index, again)
        if self._stopping:
            replacement.put(None)  # stop() ran while this one started: it drains at once
        return True

"""The write-ahead log (``luckrate serve --wal DIR``): every accepted request is written here before the
client is answered OK, and read back at start, so that a killed process loses nothing it acknowledged.

Append-only segment files with a checksum per record (``wal_format``), the design of Prometheus' TSDB WAL
and Tempo's and Loki's ingester WALs. One process writes (the receiving one, also with ``--workers``):
receiver threads append requests, the grading side appends SETTLED marks for each trace it is done with.
A segment is deleted once every trace with spans in it is settled; segments go oldest first, so a mark is
never deleted before the requests it covers. A trace is graded within ``max_trace_age`` of its first span,
so that bounds how long one pins the log.

What is promised: ``append`` returns once the record is in the kernel (``os.writev``), so a process
killed after the OK loses nothing (the page cache holds it). ``sync = "request"`` also ``fdatasync``\\ s
before returning; ``"interval"`` syncs every ``sync_interval`` seconds from a thread, so a power loss
loses at most that much.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from luckrate.service.assemble import wal_format as fmt
from luckrate.service.export.telemetry import Count, no_count
from luckrate.service.export.instruments import WAL_BYTES, WAL_RECORDS_DAMAGED

log = logging.getLogger(__name__)

SEGMENT_BYTES = 8 * 1024 * 1024
"""A segment is closed once it holds this much (a larger request gets a segment of its own)."""
SYNC_MODES = ("interval", "request")
SUFFIX = ".wal"
LOCK = "lock"


class LogRefused(Exception):
    """The log cannot take a request: it is full (``wal_full``) or writing failed (``wal_error``); the
    client is told to retry (UNAVAILABLE / 503)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


class LogUnusable(Exception):
    """The log directory cannot be used (not creatable, not writable, locked by another process)."""


@dataclass
class _Segment:
    index: int
    path: Path
    size: int = 0
    open: int = 0
    """Traces with spans in this segment not yet settled."""
    closed_at: float | None = None


@dataclass(frozen=True)
class Replayed:
    """What start-up read back."""

    records: int
    spans: int
    traces: int
    skipped: int
    """Request records wholly of traces already settled."""
    damaged: int
    seconds: float


Feed = Callable[[int, bytes, Callable[[bytes], bool]], tuple[set, int]]
"""``feed(signal, payload, keep) -> (trace ids, spans) buffered again``: hands the spans of one request whose
trace ``keep`` picks back to intake."""


@dataclass(frozen=True)
class WalOptions:
    """How big the log may grow, how often it syncs, and how long it remembers."""

    max_bytes: int
    """Most bytes the segment files hold; beyond, requests are refused (``LogRefused``, ``wal_full``)."""
    sync: str = "interval"
    """``interval`` (every ``sync_interval`` seconds) or ``request`` (before each request is acknowledged)."""
    sync_interval: float = 1.0
    segment_bytes: int = SEGMENT_BYTES
    memory: int = 100_000
    """Settled trace ids remembered, so that a late span's record is marked settled at once (its trace
    will not be graded again)."""
    stale_after: float = 600.0
    """Seconds after which a closed segment is deleted even with traces open in it (none can still be
    buffered; see ``WriteAheadLog._trim``)."""


class WriteAheadLog:
    """Thread-safe. ``open`` (checks the directory, takes its lock) → ``replay`` → ``append`` /
    ``settle`` → ``close``."""

    def __init__(
        self,
        directory: str | Path,
        options: WalOptions,
        count: Count = no_count,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.directory = Path(directory)
        self.max_bytes = max_bytes = options.max_bytes
        self._sync, self._interval = options.sync, options.sync_interval
        # At most an eighth of the bound, so that settled segments can be deleted well before it is reached.
        self._segment_bytes = max(64 * 1024, min(options.segment_bytes, max_bytes // 8))
        self._memory = options.memory
        self._stale_after = options.stale_after
        self._count = count
        self._clock = clock
        self._lock = threading.Lock()
        self._segments: list[_Segment] = []
        self._open: dict[bytes, list[int]] = {}
        """Trace id -> indexes of the segments holding its spans, while not settled."""
        self._by_index: dict[int, _Segment] = {}
        self._settled: OrderedDict[bytes, None] = OrderedDict()
        self._pending: deque[bytes] = deque()
        """Trace ids settled and not yet marked (``settle``)."""
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._dirty = False
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        self.bytes = 0
        self._reported = 0

    # ---- start ------------------------------------------------------------------------------------

    def open(self) -> None:
        """Create the directory if needed and take its lock; LogUnusable names what is wrong."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise LogUnusable(f"cannot use {self.directory}: {e.strerror or e}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self._lock_fd)
            self._lock_fd = None
            if e.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise LogUnusable(f"{self.directory} is in use by another luckrate process") from None
            raise LogUnusable(f"cannot lock {self.directory}: {e.strerror or e}") from None
        if not os.access(self.directory, os.W_OK):
            raise LogUnusable(f"cannot write in {self.directory}")
        for path in sorted(self.directory.glob("*" + SUFFIX)):
            if path.stem.isdigit():
                seg = _Segment(int(path.stem), path, path.stat().st_size, closed_at=self._clock())
                self._segments.append(seg)
        self._segments.sort(key=lambda s: s.index)
        self._by_index = {s.index: s for s in self._segments}
        self.bytes = sum(s.size for s in self._segments)

    def replay(self, feed: Feed) -> Replayed:
        """Read every segment back: first the SETTLED marks, then each request's spans of traces not
        settled, handed to ``feed``. Damage is counted and cut off or skipped; nothing here raises for
        it. Then a fresh segment is started (old ones are never appended to)."""
        started = time.perf_counter()
        settled: set[bytes] = set()
        damaged = 0
        for seg in self._segments:
            for item in self._read(seg):
                if isinstance(item, fmt.Record) and item.kind == fmt.SETTLED:
                    settled.update(fmt.trace_ids(bytes(item.payload)))  # ids as bytes, not views of the file
        records = spans = skipped = 0
        traces: set[bytes] = set()
        for seg in self._segments:
            for item in self._read(seg, repair=True):
                damaged += isinstance(item, fmt.Damage)
                if isinstance(item, fmt.Record) and item.kind == fmt.REQUEST:
                    records += 1
                    try:
                        ids, n = feed(item.signal, bytes(item.payload), lambda tid: tid not in settled)
                    except ValueError as e:  # checks out but will not decode (a newer version wrote it?)
                        log.error("write-ahead log: a record in %s does not decode (%s); skipped", seg.path.name, e)
                        self._count(WAL_RECORDS_DAMAGED.name, 1, reason="checksum")
                        damaged += 1
                        continue
                    spans += n
                    skipped += not ids
                    self._note(seg, ids)
                    traces.update(ids)
        self._settled.update(dict.fromkeys(list(settled)[-self._memory :]))
        self._start_segment()
        with self._lock:
            self._trim()
        self._report_bytes()
        return Replayed(records, spans, len(traces), skipped, damaged, time.perf_counter() - started)

    def _read(self, seg: _Segment, repair: bool = False):
        """A segment's records and damage; with ``repair``, damage is counted and a torn tail cut off."""
        try:
            raw = seg.path.read_bytes()
        except OSError as e:
            log.error("write-ahead log: cannot read %s (%s); skipped", seg.path, e.strerror or e)
            if repair:
                self._count(WAL_RECORDS_DAMAGED.name, 1, reason="checksum")
            return
        for item in fmt.scan(raw):
            if isinstance(item, fmt.Damage) and repair:
                self._count(WAL_RECORDS_DAMAGED.name, 1, reason=item.reason)
                if item.reason == "torn_tail":
                    log.warning(
                        "write-ahead log: %s torn at byte %d of %d (a write cut short); truncated",
                        seg.path.name,
                        item.start,
                        len(raw),
                    )
                    self._truncate(seg, item.start)
                else:
                    log.warning(
                        "write-ahead log: %s bytes %d-%d fail their checksum; skipped",
                        seg.path.name,
                        item.start,
                        item.end,
                    )
            yield item

    def _truncate(self, seg: _Segment, size: int) -> None:
        try:
            os.truncate(seg.path, size)
        except OSError as e:
            log.error("write-ahead log: cannot truncate %s (%s)", seg.path, e.strerror or e)
            return
        self.bytes -= seg.size - size
        seg.size = size

    # ---- running ----------------------------------------------------------------------------------

    def start(self) -> None:
        """The thread that syncs (``sync = "interval"``), deletes settled segments and reports the size."""
        if self._syncer is None:
            self._syncer = threading.Thread(target=self._sync_loop, name="luckrate-wal-sync", daemon=True)
            self._syncer.start()

    def append(self, signal: int, payload: bytes, trace_ids: Iterable[bytes]) -> None:
        """Write one accepted request; returns once the kernel has it (and the disk, with
        ``sync = "request"``). Raises LogRefused when full or when writing fails."""
        ids = set(trace_ids)
        size = fmt.HEADER.size + len(payload)
        with self._lock:
            if self._fd is None:
                raise LogRefused("wal_error", "write-ahead log closed: retry later")
            if self.bytes + size > self.max_bytes:
                if self._segments[-1].open == 0 and self._segments[-1].size:
                    self._roll()  # everything in the current segment is settled: close it so it can go
                self._trim()
                if self.bytes + size > self.max_bytes:
                    raise LogRefused("wal_full", f"write-ahead log full ({self.max_bytes} bytes): retry later")
            seg = self._segments[-1]
            if seg.size and seg.size + size > self._segment_bytes:
                seg = self._roll()
                self._trim()
            late = [t for t in ids if t in self._settled]
            self._write(fmt.REQUEST, signal, payload, seg)
            if late:  # a late span: its trace will not be graded again, so its record is settled now
                self._write(fmt.SETTLED, 0, fmt.settled_payload(late), seg)
                ids.difference_update(late)
            self._note(seg, ids)
            if self._pending:
                self._write_marks()
            if self._sync == "request":
                self._fsync(self._fd)
        self._drain()

    def settle(self, trace_ids: Iterable[bytes]) -> None:
        """Traces done with: marked in the log (a replay skips them), and segments left with no open
        trace deleted. Never blocks and never raises (a failed mark only means the trace may be graded
        again after a crash).

        The grading thread calls this once per trace. Waiting for the lock while a receiver thread writes a
        request of a few hundred KB made the log cost 10% of the throughput (benchmarks/wal.py), so the
        ids are queued and written by whoever holds the lock: this call if it is free, else its holder,
        right after its own record (``_drain``)."""
        self._pending.extend(trace_ids)
        self._drain()

    def _drain(self) -> None:
        """Write the queued marks unless another thread holds the lock; every holder drains again after
        releasing it, so no mark waits for a later caller."""
        while self._pending and self._lock.acquire(blocking=False):
            try:
                self._write_marks()
            finally:
                self._lock.release()

    def replay_where(self, feed: Feed, pick: Callable[[bytes], bool]) -> int:
        """Hand back again the spans of the open traces ``pick`` chooses (those a grading process held when
        it died), from the segments holding them; returns how many. Appends go on meanwhile: a span both
        handed to the new process and read back here is dropped there as a duplicate."""
        with self._lock:
            self._write_marks()  # what the dead process finished is not open any more
            ids = {tid for tid in self._open if pick(tid)}
            paths = [
                self._by_index[i].path for i in sorted({i for t in ids for i in self._open[t]}) if i in self._by_index
            ]
        spans = 0
        for path in paths:
            try:
                raw = path.read_bytes()
            except OSError:  # deleted meanwhile: every trace in it was settled
                continue
            for item in fmt.scan(raw):  # the current segment may end in a record being written: not damage
                if isinstance(item, fmt.Record) and item.kind == fmt.REQUEST:
                    try:
                        spans += feed(item.signal, bytes(item.payload), ids.__contains__)[1]
                    except ValueError:
                        continue
        return spans

    def close(self) -> None:
        """Sync and close; what is still open stays on disk for the next start."""
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join(5)
        with self._lock:
            if self._fd is not None:
                self._write_marks()
                self._fsync(self._fd)
                os.close(self._fd)
                self._fd = None
                if not self._open:  # every trace settled (a clean shutdown): the log is empty
                    while self._segments:
                        self._delete(self._segments.pop())
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
        self._report_bytes()

    # ---- inside the lock --------------------------------------------------------------------------

    def _write_marks(self) -> None:
        ids = []
        while self._pending:
            ids.append(self._pending.popleft())
        done = [t for t in ids if t in self._open]
        if not done or self._fd is None:
            return
        try:
            self._write(fmt.SETTLED, 0, fmt.settled_payload(done), self._segments[-1])
        except LogRefused as e:
            log.error("write-ahead log: %s", e.message)
        for tid in done:
            self._forget(tid)
        self._trim()

    def _write(self, kind: int, signal: int, payload: bytes, seg: _Segment) -> None:
        header = fmt.encode_header(kind, signal, payload)
        fd = self._open_fd()
        error: OSError | None
        try:
            written = os.writev(fd, (header, payload))
        except OSError as e:
            written = 0
            error = e
        else:
            error = None
        if written != len(header) + len(payload):
            # A short or failed write leaves a torn record: cut it off so the next one starts clean.
            try:
                os.ftruncate(fd, seg.size)
                os.lseek(fd, seg.size, os.SEEK_SET)
            except OSError:
                pass
            full = error is not None and error.errno in (errno.ENOSPC, errno.EDQUOT)
            detail = error.strerror if error is not None else "short write"
            raise LogRefused("wal_full" if full else "wal_error", f"write-ahead log: {detail}: retry later")
        seg.size += written
        self.bytes += written
        self._dirty = True

    def _note(self, seg: _Segment, ids: Iterable[bytes]) -> None:
        for tid in ids:
            where = self._open.get(tid)
            if where is None:
                self._open[tid] = [seg.index]
            elif where[-1] == seg.index:
                continue
            else:
                where.append(seg.index)
            seg.open += 1

    def _forget(self, tid: bytes) -> None:
        for index in self._open.pop(tid):
            seg = self._by_index.get(index)
            if seg is not None:
                seg.open -= 1
        self._settled[tid] = None
        if len(self._settled) > self._memory:
            self._settled.popitem(last=False)

    def _trim(self) -> None:
        """Delete closed segments from the oldest while nothing open is in them. A closed segment older
        than ``stale_after`` goes too: a trace is graded within ``max_trace_age`` of its first span, so
        what is still open there was dropped as late by a grading process that remembered its trace
        longer than this log did; it must not pin the log."""
        now = self._clock()
        while len(self._segments) > 1:
            seg = self._segments[0]
            stale = seg.closed_at is not None and now - seg.closed_at > self._stale_after
            if seg.open > 0 and not stale:
                return
            if seg.open > 0:
                log.warning("write-ahead log: %s deleted with %d trace(s) never settled", seg.path.name, seg.open)
                for tid in [t for t, where in self._open.items() if where[0] == seg.index]:
                    self._open[tid].pop(0)
                    if not self._open[tid]:
                        del self._open[tid]
            self._delete(self._segments.pop(0))

    def _delete(self, seg: _Segment) -> None:
        try:
            seg.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            log.error("write-ahead log: cannot delete %s (%s)", seg.path, e.strerror or e)
            return
        self._by_index.pop(seg.index, None)
        self.bytes -= seg.size

    def _open_fd(self) -> int:
        """The current segment's descriptor; writing and rolling happen only while the log is open (their
        callers check, under the lock), and a closed log refuses as ``append`` does."""
        if self._fd is None:
            raise LogRefused("wal_error", "write-ahead log closed: retry later")
        return self._fd

    def _roll(self) -> _Segment:
        old = self._segments[-1]
        fd = self._open_fd()
        self._fsync(fd)  # a closed segment is on disk whatever the sync policy
        os.close(fd)
        self._fd = None
        old.closed_at = self._clock()
        return self._new_segment(old.index + 1)

    def _start_segment(self) -> None:
        with self._lock:
            last = self._segments[-1].index if self._segments else 0
            self._new_segment(last + 1)

    def _new_segment(self, index: int) -> _Segment:
        path = self.directory / f"{index:08d}{SUFFIX}"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        seg = _Segment(index, path)
        self._segments.append(seg)
        self._by_index[index] = seg
        self._fsync_dir()
        return seg

    def _fsync(self, fd: int) -> None:
        try:
            os.fdatasync(fd)
            self._dirty = False
        except OSError as e:
            log.error("write-ahead log: sync failed (%s)", e.strerror or e)

    def _fsync_dir(self) -> None:
        try:
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass

    def _report_bytes(self) -> None:
        """The size gauge, moved by what changed since the last report (not per write: a metric update
        costs a few µs, and marks are written per graded trace)."""
        size = self.bytes
        if size != self._reported:
            self._count(WAL_BYTES.name, size - self._reported)
            self._reported = size

    def _sync_loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._drain()
            self._report_bytes()
            with self._lock:
                if self._sync != "interval" or not self._dirty or self._fd is None:
                    self._trim()
                    continue
                fd = os.dup(self._fd)  # synced outside the lock: appends go on meanwhile
                self._dirty = False
                self._trim()
            try:
                os.fdatasync(fd)
            except OSError as e:
                log.error("write-ahead log: sync failed (%s)", e.strerror or e)
            finally:
                os.close(fd)

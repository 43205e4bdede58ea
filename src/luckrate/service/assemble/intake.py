"""What both receivers do with a decoded export request: count, reserve buffer space, hand over.

Accounting: every span of a decoded request is *received*; it is then either *rejected* (unusable ids,
or the buffer is full and the client is told to retry) or *accepted* into the assembler. Log records
(``accept_logs``) are accounted the same way on their own counters, and take room in the same buffer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters.otlp import SpanRecord, request_from_protobuf
from luckrate.adapters.otlp.compaction import records_at
from luckrate.adapters.otlp.conventions import interning
from luckrate.adapters.otlp.logs import LogEvent, events_at
from luckrate.adapters.otlp.spans import DEFAULT_OUTPUT_ATTRIBUTE
from luckrate.adapters.otlp.runs import CONVERSATION_KEY, Assembly, TraceTies, ties_by_trace
from luckrate.service.assemble.assembler import SpanBudget
from luckrate.service.assemble.routing import Judged, judge_records, judge_spans
from luckrate.service.assemble.wal import LogRefused, WriteAheadLog
from luckrate.service.assemble.wal_format import TRACES
from luckrate.service.export.telemetry import Count
from luckrate.service.export.instruments import (
    LOG_RECORDS_ACCEPTED,
    LOG_RECORDS_RECEIVED,
    LOG_RECORDS_REJECTED,
    LOG_REQUESTS_REFUSED,
    REQUESTS_RECEIVED,
    REQUESTS_REFUSED,
    RUNS_ASSEMBLY,
    SPANS_ACCEPTED,
    SPANS_RECEIVED,
    SPANS_REJECTED,
    SPANS_REPLAYED,
)

_CONVERSATION = CONVERSATION_KEY.encode()
MAX_MESSAGE = 1024
"""Longest partial-success / error message sent back (responses stay small)."""


@dataclass(frozen=True)
class Outcome:
    """The answer to one export request."""

    throttled: bool
    """True: nothing was accepted and the client should retry later."""
    rejected: int = 0
    """Spans rejected for good (partial success)."""
    message: str = ""
    unavailable: bool = False
    """With ``throttled``: the write-ahead log cannot take the request (full, or writing failed), answered
    UNAVAILABLE / 503 + Retry-After rather than RESOURCE_EXHAUSTED / 429."""


class _Kind(NamedTuple):
    """What differs between accepting spans and accepting log records: the judge and the counters."""

    judge: Callable[[Any, int], Judged]
    received: str
    accepted: str
    rejected: str
    refused: str
    unit: str
    """How the partial-success message names an item."""


SPANS = _Kind(
    judge_spans,
    SPANS_RECEIVED.name,
    SPANS_ACCEPTED.name,
    SPANS_REJECTED.name,
    REQUESTS_REFUSED.name,
    "span",
)
LOGS = _Kind(
    judge_records,
    LOG_RECORDS_RECEIVED.name,
    LOG_RECORDS_ACCEPTED.name,
    LOG_RECORDS_REJECTED.name,
    LOG_REQUESTS_REFUSED.name,
    "log record",
)


@dataclass(frozen=True)
class Handover:
    """Where the intake hands accepted requests: to the assembler's queue (one process) or to the grading
    processes (``process.pool``). ``prepare(request, judged, raw)`` makes what ``submit`` takes; None: the
    records of the usable spans, compacted here. ``submit_logs`` and ``prepare_logs`` are the same for log
    records (by default their ``LogEvent``s); without ``submit_logs`` the intake takes no log records
    (``accept_logs`` raises)."""

    submit: Callable[[Any], None]
    """Never blocks: the budget bounds what waits behind it."""
    prepare: Callable[..., Any] | None = None
    submit_logs: Callable[[Any], None] | None = None
    prepare_logs: Callable[..., Any] | None = None


@dataclass(frozen=True)
class IntakeOptions:
    """How the intake reads what it takes (defaults: one process, each trace a run)."""

    keep_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE
    """The output verdict's span attribute, kept when spans are compacted."""
    owners: int = 1
    """Grading processes the usable spans' positions are shared out among (``routing``)."""
    runs_by: str = "trace"
    """With links or conversation, the records handed over carry what ties their traces to others (``Tied``)."""


class Intake:
    """Thread-safe: called concurrently by receiver threads."""

    def __init__(
        self,
        to: Handover,
        budget: SpanBudget,
        count: Count,
        options: IntakeOptions = IntakeOptions(),
        wal: WriteAheadLog | None = None,
    ):
        """Each request is judged once (``judge_spans``), its usable spans' positions shared out among the
        owners, and handed over (``to``). With ``wal``, an accepted traces request is appended to it before
        it is handed over (and so before the client hears OK); ``replay`` hands back what it held at start.
        Logs requests are not written to the write-ahead log: they are accepted unlogged, a full log
        included."""
        self._runs_by = options.runs_by
        self._submit = to.submit
        self._owners = options.owners
        self._prepare = to.prepare or self._records
        self._submit_logs = to.submit_logs
        self._prepare_logs = to.prepare_logs or self._events
        self._budget = budget
        self._count = count
        self._keep = options.keep_attribute
        self._wal = wal
        self._tables = interning()
        """The compaction tables every record this intake buffers shares its strings and layouts through."""
        self._accepting = True
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop accepting; once this returns no span is handed over any more (later requests are throttled,
        so the collector retries elsewhere or later)."""
        with self._lock:
            self._accepting = False

    def accept(self, request: ExportTraceServiceRequest, transport: str, raw: bytes | None = None) -> Outcome:
        """``raw``: the protobuf encoding ``request`` was decoded from, when the receiver has it (handed to
        grading processes as is, rather than encoded again)."""
        return self._take(SPANS, request, transport, raw, self._prepare, self._submit)

    def accept_logs(self, request: ExportLogsServiceRequest, transport: str, raw: bytes | None = None) -> Outcome:
        """``accept`` for a logs request: its usable records (GenAI events with a trace id) take room in
        the same buffer as spans and go to the assembler that owns their trace."""
        if self._submit_logs is None:
            raise RuntimeError("this intake takes no log records")
        return self._take(LOGS, request, transport, raw, self._prepare_logs, self._submit_logs)

    def _take(
        self,
        kind: _Kind,
        request: Any,
        transport: str,
        raw: bytes | None,
        prepare: Callable[..., Any],
        submit: Callable[[Any], None],
    ) -> Outcome:
        # Reserve buffer space before compacting: a saturated server otherwise spent most of its CPU
        # compacting retried requests only to throw the records away (benchmarks/README.md).
        if kind is SPANS:  # an export of traces with no spans counts here (logs have counters of their own)
            self._count(REQUESTS_RECEIVED.name, 1, transport=transport)
        judged = kind.judge(request, self._owners)
        usable, rejected = judged.usable, judged.rejected
        bad = sum(r.count for r in rejected)
        self._count(kind.received, usable + bad, transport=transport)
        for r in rejected:
            self._count(kind.rejected, r.count, reason=r.reason)
        message = "; ".join(f"{r.count} {kind.unit}(s) rejected: {r.reason}" for r in rejected)[:MAX_MESSAGE]
        if not usable:
            return Outcome(False, bad, message)
        if not self._budget.try_acquire(usable):
            return self._throttle(kind, transport, usable, bad)
        try:
            prepared = prepare(request, judged, raw)
            logged = self._logged(request, judged, raw, prepared) if kind is SPANS and self._wal is not None else None
        except BaseException:
            self._budget.release(usable)
            raise
        with self._lock:
            # Under the lock so that close() is a clean cut: nothing is logged or submitted after it.
            if self._accepting:
                if logged is not None and self._wal is not None:  # logged only when there is a log
                    try:
                        self._wal.append(TRACES, *logged)
                    except LogRefused as e:
                        self._budget.release(usable)
                        return self._unavailable(transport, usable, bad, e)
                self._count(kind.accepted, usable)
                submit(prepared)
                return Outcome(False, bad, message)
        self._budget.release(usable)
        return self._throttle(kind, transport, usable, bad)

    @staticmethod
    def _logged(
        request: ExportTraceServiceRequest, judged: Judged, raw: bytes | None, prepared: Any
    ) -> tuple[bytes, set[bytes]]:
        """What the log keeps of a request: its encoding, and the trace ids of its usable spans: from the
        records when ``prepare`` made them (one process; a walk over the request's spans cost 0.4 µs a
        span more), else from the spans at the positions judged usable."""
        if isinstance(prepared, list):
            ids = {r.trace_id for r in prepared}
        else:
            spans = _spans(request)
            ids = {spans[p].trace_id for mine in judged.picks for p in mine}
        return raw if raw is not None else request.SerializeToString(), ids

    def replay(self, signal: int, body: bytes, keep: Callable[[bytes], bool]) -> tuple[set[bytes], int]:
        """A request read back from the write-ahead log (at start, or for a grading process that died): its
        usable spans of the traces ``keep`` picks are buffered again, counted as replayed, never as received.
        Returns their trace ids and count. Raises InvalidInput for a body that will not decode."""
        if signal != TRACES:
            return set(), 0
        request = request_from_protobuf(body)
        judged = judge_spans(request, self._owners)
        spans = _spans(request)
        picks = [[p for p in mine if keep(spans[p].trace_id)] for mine in judged.picks]
        n = sum(map(len, picks))
        if not n:
            return set(), 0
        mine = Judged(n, [], picks)
        self._budget.reserve(n)
        self._count(SPANS_REPLAYED.name, n)
        self._submit(self._prepare(request, mine, body))
        return {spans[p].trace_id for owner in picks for p in owner}, n

    def _records(self, request: ExportTraceServiceRequest, judged: Judged, raw: bytes | None) -> list[SpanRecord]:
        # The positions judged usable: each span's ids are checked once, not again while compacting.
        records = records_at(request, judged.picks[0], keep_attribute=self._keep, packed=True, tables=self._tables)
        if self._runs_by == "trace":
            return records
        tied = Tied(records)
        assembly = Assembly()
        mine = {r.trace_id for r in records}
        # Reading every attribute of every span costs about 60% of compaction; a request whose encoding never
        # names the conversation key cannot hold one (benchmarks/run_assembly.py).
        conversation = self._runs_by == "conversation" and (raw is None or _CONVERSATION in raw)
        tied.ties = ties_by_trace(request, mine.__contains__, conversation, assembly)
        for outcome, n in assembly.counts.items():
            self._count(RUNS_ASSEMBLY.name, n, outcome=outcome)
        return tied

    def _events(self, request: ExportLogsServiceRequest, judged: Judged, raw: bytes | None) -> list[LogEvent]:
        return events_at(request, judged.picks[0])

    def _throttle(self, kind: _Kind, transport: str, items: int, bad: int) -> Outcome:
        self._count(kind.rejected, items, reason="buffer_full")
        self._count(kind.refused, 1, transport=transport, reason="buffer_full")
        return Outcome(True, bad, "span buffer full: retry later")

    def _unavailable(self, transport: str, spans: int, bad: int, e: LogRefused) -> Outcome:
        """A traces request the write-ahead log could not take (logs requests never reach the log)."""
        self._count(SPANS.rejected, spans, reason=e.reason)
        self.refuse(transport, e.reason)
        return Outcome(True, bad, e.message[:MAX_MESSAGE], unavailable=True)

    def refuse(self, transport: str, reason: str, logs: bool = False) -> None:
        """Count a request refused whole (its spans or records were never decoded, or are all being
        retried); ``logs``: a logs request (its own counter), else a traces request or a connection."""
        self._count(LOGS.refused if logs else SPANS.refused, 1, transport=transport, reason=reason)


class Tied(list):
    """A batch of records and, by trace id, what ties those traces to others (``runs.TraceTies``): read
    from the request here, where the span links still are (records do not keep them)."""

    __slots__ = ("ties",)
    ties: dict[bytes, TraceTies]


def _spans(request: ExportTraceServiceRequest) -> list:
    """The request's spans in order: what ``Judged.picks`` positions count over."""
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]

"""Which process owns a trace, and each request judged once for it.

With ``--workers N``, a trace belongs to grading process ``crc32(trace id) mod N`` (what the Collector's
load-balancing exporter does with ``routing_key: traceID``): every span and log record of it goes there, so
one process assembles it. The adapters say which spans and records can be kept at all
(``compaction.reject_reason``, ``logs.reject_reason``); the owner is decided here, in the same one pass
over the request (it runs on every span a receiver gets).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import NamedTuple

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters.otlp import compaction, logs
from luckrate.adapters.otlp.compaction import Rejected


class Judged(NamedTuple):
    """What one pass over a request's span (or record) ids found."""

    usable: int
    rejected: list[Rejected]
    """The others, by reason."""
    picks: list[list[int]]
    """The usable spans' positions, per owner."""


def route(trace_id: bytes, n: int) -> int:
    """The owner (0..n-1) of a trace among ``n`` grading processes."""
    return zlib.crc32(trace_id) % n


def judge_spans(request: ExportTraceServiceRequest, owners: int = 1) -> Judged:
    picks, rejected = route_spans(request, owners)
    return Judged(sum(map(len, picks)), rejected, picks)


def judge_records(request: ExportLogsServiceRequest, owners: int = 1) -> Judged:
    """``judge_spans`` for a logs request's records."""
    picks, rejected = route_records(request, owners)
    return Judged(sum(map(len, picks)), rejected, picks)


def route_spans(req: ExportTraceServiceRequest, n: int) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the usable spans each of ``n`` owners takes, and the others by reason."""
    return compaction.usable_spans(req, n, _owner(n))


def route_records(req: ExportLogsServiceRequest, n: int) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the usable log records each of ``n`` owners takes (by their trace id), and the others
    by reason."""
    return logs.usable_records(req, n, _owner(n))


def _owner(n: int) -> Callable[[bytes], int] | None:
    """``route`` for ``n`` owners, as a function of the trace id; None for one (every span is its)."""
    if n == 1:
        return None
    crc32 = zlib.crc32
    return lambda trace_id: crc32(trace_id) % n

"""Which process owns a trace, and each request judged once for it.

With ``--workers N``, a trace belongs to grading process ``crc32(trace id) mod N`` (what the Collector's
load-balancing exporter does with ``routing_key: traceID``): every span and log record of it goes there, so
one process assembles it. The adapters say which spans and records can be kept at all
(``compaction.reject_reason``, ``logs.reject_reason``); the owner is decided here, in the same one pass
over the request (it runs on every span a receiver gets).
"""

from __future__ import annotations

import zlib
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
    """The positions of the usable spans each of ``n`` owners takes (``route``, inlined), and the others by
    reason."""
    if n == 1:
        usable, rejected = compaction.usable_spans(req)
        return [usable], rejected
    picks: list[list[int]] = [[] for _ in range(n)]
    adds = [p.append for p in picks]
    found: dict[str, int] = {}
    crc32, reject_reason = zlib.crc32, compaction.reject_reason
    position = 0
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                reason = reject_reason(span)
                if reason is None:
                    adds[crc32(span.trace_id) % n](position)
                else:
                    found[reason] = found.get(reason, 0) + 1
                position += 1
    return picks, [Rejected(r, c) for r, c in found.items()]


def route_records(req: ExportLogsServiceRequest, n: int) -> tuple[list[list[int]], list[Rejected]]:
    """The positions of the usable log records each of ``n`` owners takes (by their trace id), and the others
    by reason."""
    if n == 1:
        usable, rejected = logs.usable_records(req)
        return [usable], rejected
    picks: list[list[int]] = [[] for _ in range(n)]
    found: dict[str, int] = {}
    for position, record in enumerate(logs.log_records(req)):
        reason = logs.reject_reason(record)
        if reason is None:
            picks[zlib.crc32(record.trace_id) % n].append(position)
        else:
            found[reason] = found.get(reason, 0) + 1
    return picks, [Rejected(r, c) for r, c in found.items()]

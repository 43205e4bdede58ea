"""The write-ahead log's record format: how a record is framed on disk and read back, damage included.

A segment file is a run of records, each a 16-byte header and its payload::

    magic "LW" | kind u8 | signal u8 | payload length u32 | payload crc32 u32 | header crc32 u32

The header has its own checksum so that a damaged length is never trusted: a record whose header fails
is skipped by searching for the next header that checks out. A record whose payload fails its checksum
is skipped whole (its length is known good). What cannot be read at the end of a segment (a header or
payload cut short, or a last record whose checksum fails: a write the crash interrupted) is a torn tail.
Nothing here touches files; ``wal`` does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

MAGIC = b"LW"
HEADER = struct.Struct("<2sBBIII")
"""magic, kind, signal, payload length, payload crc32, header crc32 (of the 12 bytes before it)."""
_CHECKED = HEADER.size - 4

REQUEST = 1
"""Kind: an accepted export request, its payload the protobuf encoding as received."""
SETTLED = 2
"""Kind: traces done with (graded, not graded, or lost with a grading process): 16-byte trace ids."""
KINDS = (REQUEST, SETTLED)

TRACES = 1
"""Signal of a REQUEST: ``ExportTraceServiceRequest``."""
LOGS = 2
"""Signal of a REQUEST: ``ExportLogsServiceRequest``. Reserved: the OTLP logs receiver's requests are
accepted unlogged for now (``Intake``), and a replay skips records of any signal but ``TRACES``."""
SIGNALS = (TRACES, LOGS)
TRACE_ID = 16

"""``luckrate.wal.records.damaged`` reasons: a record cut short at a segment's end (a crash mid-write),
or one in the middle whose header or payload fails its checksum."""


def encode_header(kind: int, signal: int, payload: bytes) -> bytes:
    head = struct.pack("<2sBBII", MAGIC, kind, signal, len(payload), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head))


def settled_payload(trace_ids) -> bytes:
    return b"".join(trace_ids)


def trace_ids(payload: bytes) -> list[bytes]:
    """The trace ids of a SETTLED record."""
    return [payload[i : i + TRACE_ID] for i in range(0, len(payload) - TRACE_ID + 1, TRACE_ID)]


@dataclass(frozen=True)
class Record:
    kind: int
    signal: int
    payload: memoryview
    end: int
    """Offset just past it."""


@dataclass(frozen=True)
class Damage:
    reason: str
    """One of ``instruments.DAMAGE_REASONS``."""
    start: int
    end: int
    """Where reading resumes; for a torn tail, the segment's length (the file is cut back to ``start``)."""


def _header_at(data: memoryview, pos: int) -> tuple | None:
    if len(data) - pos < HEADER.size:
        return None
    fields = HEADER.unpack_from(data, pos)
    if fields[0] != MAGIC or fields[1] not in KINDS or zlib.crc32(data[pos : pos + _CHECKED]) != fields[5]:
        return None
    return fields


def _resync(data: memoryview, raw: bytes, pos: int) -> int | None:
    """The next offset after ``pos`` where a header checks out, or None."""
    while (pos := raw.find(MAGIC, pos + 1)) >= 0:
        if _header_at(data, pos) is not None:
            return pos
    return None


def scan(raw: bytes) -> Iterator[Record | Damage]:
    """Every record of a segment in order, and each stretch that could not be read as a ``Damage``."""
    data, pos, size = memoryview(raw), 0, len(raw)
    while pos < size:
        fields = _header_at(data, pos)
        if fields is None:
            if size - pos < HEADER.size or (nxt := _resync(data, raw, pos)) is None:
                yield Damage("torn_tail", pos, size)
                return
            yield Damage("checksum", pos, nxt)
            pos = nxt
            continue
        _, kind, signal, length, crc, _ = fields
        start, end = pos + HEADER.size, pos + HEADER.size + length
        if end > size:
            yield Damage("torn_tail", pos, size)
            return
        payload = data[start:end]
        if zlib.crc32(payload) != crc:
            yield Damage("torn_tail" if end == size else "checksum", pos, end)
            if end == size:
                return
        else:
            yield Record(kind, signal, payload, end)
        pos = end

"""How long an OTLP/HTTP request body is (RFC 9112 §6), and reading a chunked one (§7.1). Nothing here
knows OTLP; limits and deadlines are the caller's reader's.

Framing is read one way only, so that luckrate and a proxy in front of it cannot disagree about where a
request ends (request smuggling, RFC 9112 §11.2):

- ``Transfer-Encoding`` and ``Content-Length`` together: 400, and the connection is closed. RFC 9112 §6.1
  also allows letting Transfer-Encoding win, but then a proxy that went by Content-Length would send the
  rest as another request; refusing is the one choice that leaves no second reading.
- ``Transfer-Encoding`` whose last coding is not ``chunked``, or with ``chunked`` twice, or on HTTP/1.0:
  the length cannot be known, so 400 and close (§6.1, §6.3).
- A coding before ``chunked`` (``gzip, chunked``): 501, close (RFC 9110 §6.1 lets a server refuse a
  transfer coding it does not implement; compression belongs in ``Content-Encoding``, which is supported).
- ``Content-Length`` repeated, or not a plain decimal: 400 and close (§6.3).
- A chunk line is ``1*HEXDIG [chunk-ext] CRLF``. Extensions are read and ignored (§7.1.1), trailer fields
  are read and discarded (§7.1.2), both bounded in size. Anything else — a sign, ``0x``, a bare LF, space
  before the size, missing CRLF after the data — is 400 and the connection is closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from io import BufferedIOBase

MAX_LINE = 4096
"""Longest chunk-size line, extensions included, and longest trailer field line."""
MAX_TRAILER = 64 * 1024
"""Most bytes of trailer fields read before the request is refused."""
MAX_SIZE_DIGITS = 16
"""A chunk size of more hex digits than this is refused before it is converted (16 covers 2**64 - 1)."""

_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,%d})((?:[ \t]*;[^\x00-\x08\x0a-\x1f\x7f]*)?)\r\n\Z" % MAX_SIZE_DIGITS)
"""chunk-size [ chunk-ext ] CRLF: extensions are BWS ';' ... and may hold no control character but HTAB."""
_FIELD_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00-\x08\x0a-\x1f\x7f]*\r\n\Z")


class BadFraming(Exception):
    """The request's framing cannot be read one way: answer ``code`` and close the connection."""

    def __init__(self, message: str, code: int = 400):
        super().__init__(message)
        self.code = code


class TooLarge(Exception):
    """The body grows past the limit; ``read`` bytes of it were consumed."""


@dataclass(frozen=True)
class Framing:
    """How the body of one request is delimited."""

    chunked: bool
    length: int | None
    """Content-Length when not chunked; None when the request declares neither (no body, RFC 9112 §6.3)."""


def framing(version: str, transfer_encodings: list[str], content_lengths: list[str]) -> Framing:
    """Read the framing headers of a request (every occurrence of each); raises BadFraming."""
    if transfer_encodings:
        if content_lengths:
            raise BadFraming("both Transfer-Encoding and Content-Length: the body would be read two ways")
        if version == "HTTP/1.0":
            raise BadFraming("Transfer-Encoding in an HTTP/1.0 request")
        codings = [c.strip().lower() for value in transfer_encodings for c in value.split(",") if c.strip()]
        if not codings or codings[-1] != "chunked" or codings.count("chunked") > 1:
            raise BadFraming(f"Transfer-Encoding {', '.join(codings)[:60]!r}: chunked must be last and only once")
        if len(codings) > 1:
            raise BadFraming(f"unsupported transfer coding {codings[0][:40]!r}; use Content-Encoding", 501)
        return Framing(chunked=True, length=None)
    if not content_lengths:
        return Framing(chunked=False, length=None)
    if len(content_lengths) > 1 or not _decimal(content_lengths[0].strip()):
        raise BadFraming(f"bad Content-Length {', '.join(content_lengths)[:60]!r}")
    return Framing(chunked=False, length=int(content_lengths[0].strip()))


def _decimal(text: str) -> bool:
    return 0 < len(text) <= 19 and text.isascii() and text.isdigit()


def read_chunked(rfile: BufferedIOBase, limit: int) -> bytes:
    """The body of a chunked request, trailers read and dropped. Raises BadFraming on a framing error,
    TooLarge as soon as a chunk size takes the body past ``limit`` bytes (before its data is read) or the
    chunk lines add up past ``limit`` (so tiny chunks cannot make the wire bytes unbounded), EOFError when
    the client stops sending early, and whatever ``rfile`` raises (a passed deadline)."""
    body, framing_left = bytearray(), limit
    while True:
        size, overhead = _chunk_size(rfile)
        framing_left -= overhead
        if len(body) + size > limit or framing_left < 0:
            raise TooLarge(f"chunked request over {limit} bytes")
        if size == 0:
            break
        data = rfile.read(size)
        if len(data) < size:
            raise EOFError("connection closed inside a chunk")
        # Into one bytearray, not a list joined at the end: a list of one-byte chunks held ~40 bytes each.
        body += data
        _crlf(rfile)
    _trailers(rfile)
    return bytes(body)


def discard_chunked(rfile: BufferedIOBase, budget: int) -> bool:
    """Read and drop the rest of a chunked body from a chunk-size line on, up to ``budget`` bytes of data
    and as many of chunk lines; True when its end was reached (so the connection could be reused)."""
    framing_left = budget
    try:
        while True:
            size, overhead = _chunk_size(rfile)
            framing_left -= overhead
            if size > budget or framing_left < 0:
                return False
            if size == 0:
                break
            budget -= size
            while size:
                got = rfile.read1(min(size, 64 * 1024))
                if not got:
                    return False
                size -= len(got)
            _crlf(rfile)
        _trailers(rfile)
        return True
    except (BadFraming, EOFError, OSError):
        return False


def _chunk_size(rfile: BufferedIOBase) -> tuple[int, int]:
    """The next chunk's size, and the bytes of framing around it (its line and the CRLF after its data)."""
    line = rfile.readline(MAX_LINE + 1)
    if not line:
        raise EOFError("connection closed before the last chunk")
    match = _CHUNK_LINE.match(line)
    if match is None:
        raise BadFraming(f"invalid chunk size line {line[:40]!r}")
    return int(match.group(1), 16), len(line) + 2


def _crlf(rfile: BufferedIOBase) -> None:
    end = rfile.read(2)
    if end != b"\r\n":
        raise BadFraming(f"chunk data not followed by CRLF (got {end!r})")


def _trailers(rfile: BufferedIOBase) -> None:
    """Trailer fields up to the empty line; a recipient may drop them (RFC 9112 §7.1.2)."""
    left = MAX_TRAILER
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if line == b"\r\n":
            return
        if not line:
            raise EOFError("connection closed inside the trailer section")
        left -= len(line)
        if left < 0:
            raise BadFraming(f"trailer section over {MAX_TRAILER} bytes")
        if _FIELD_LINE.match(line) is None:
            raise BadFraming(f"invalid trailer field line {line[:40]!r}")

"""``google.rpc.Status`` with ``RetryInfo``, encoded by hand.

The OTLP spec asks for these on errors (gRPC ``grpc-status-details-bin``, HTTP error bodies), but their
generated classes live in ``googleapis-common-protos``, which is not a runtime dependency; three tiny
messages (Status, Any, RetryInfo/Duration) are cheaper to write than to depend on. Tests decode them
with the real generated classes.
"""

from __future__ import annotations

RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"

# gRPC status codes used here (grpc.StatusCode values, as google.rpc.Code numbers).
INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8
UNAVAILABLE = 14
UNAUTHENTICATED = 16


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # negative int32/int64 are encoded as 10-byte two's complement
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value) if value else b""


def _field_bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def retry_info(seconds: int) -> bytes:
    """``google.rpc.RetryInfo{retry_delay: Duration{seconds}}``."""
    return _field_bytes(1, _field_varint(1, seconds))


def encode_status(code: int, message: str, retry_after: int | None = None) -> bytes:
    """``google.rpc.Status`` protobuf bytes; with ``retry_after``, one RetryInfo detail."""
    out = _field_varint(1, code) + (_field_bytes(2, message.encode()) if message else b"")
    if retry_after is not None:
        any_msg = _field_bytes(1, RETRY_INFO_TYPE.encode()) + _field_bytes(2, retry_info(retry_after))
        out += _field_bytes(3, any_msg)
    return out


def status_json(code: int, message: str, retry_after: int | None = None) -> dict:
    """The same Status in proto3 JSON form (for OTLP/JSON error bodies)."""
    doc: dict = {"code": code, "message": message}
    if retry_after is not None:
        doc["details"] = [{"@type": RETRY_INFO_TYPE, "retryDelay": f"{retry_after}s"}]
    return doc

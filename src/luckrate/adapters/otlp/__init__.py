"""OTel spans → trajectories: the production path (the ``luckrate serve`` service uses it).

Reads the three conventions in use — OTel GenAI semantic conventions (both generations), OpenInference
and OpenLLMetry/Traceloop — from decoded OTLP spans. Imports no framework: only the OTLP protobufs.
"""

from luckrate.adapters.otlp.spans import (
    REJECT_REASONS,
    Rejected,
    SpanEvent,
    SpanRecord,
    records_from_request,
    request_from_json,
    request_from_protobuf,
)

__all__ = [
    "REJECT_REASONS",
    "Rejected",
    "SpanEvent",
    "SpanRecord",
    "records_from_request",
    "request_from_json",
    "request_from_protobuf",
]

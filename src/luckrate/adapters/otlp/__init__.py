"""OTel spans → trajectories: the production path (the ``luckrate serve`` service uses it).

Reads the three conventions in use — OTel GenAI semantic conventions (both generations), OpenInference
and OpenLLMetry/Traceloop — from decoded OTLP spans. Imports no framework: only the OTLP protobufs.

Modules: requests (decode protobuf and OTLP/JSON), compaction (requests → bounded records) and sharing
(the tables records share through, the keys kept), spans (the records), payloads (argument/result shapes),
messages and frames (model messages in every form), roles (what a span means), tree (parents, walk-ups),
join (tool spans ↔ requested calls), turns (the conversation), output (output_ok), assemble (one trace →
one trajectory), runs (traces → runs), logs (log records → span events, joined to their traces), readers
(requests and files), definitions (tool definitions for suggest). The package ``conventions`` holds one
reader per convention or framework (genai, openinference, traceloop...), and its ``__init__`` the registry
that orders them and collects the keys they read.
"""

from luckrate.adapters.otlp.assemble import trajectory_from_spans
from luckrate.adapters.otlp.compaction import REJECT_REASONS, Rejected, records_from_request
from luckrate.adapters.otlp.logs import LOG_REJECT_REASONS, LogEvent, events_from_request, joined
from luckrate.adapters.otlp.output import OutputRule
from luckrate.adapters.otlp.readers import read_otlp, read_otlp_files, read_otlp_json, trajectories_from_request
from luckrate.adapters.otlp.requests import (
    logs_request_from_json,
    logs_request_from_protobuf,
    request_from_json,
    request_from_protobuf,
)
from luckrate.adapters.otlp.spans import SpanEvent, SpanRecord

__all__ = [
    "LOG_REJECT_REASONS",
    "REJECT_REASONS",
    "LogEvent",
    "OutputRule",
    "Rejected",
    "SpanEvent",
    "SpanRecord",
    "events_from_request",
    "joined",
    "logs_request_from_json",
    "logs_request_from_protobuf",
    "read_otlp",
    "read_otlp_files",
    "read_otlp_json",
    "records_from_request",
    "request_from_json",
    "request_from_protobuf",
    "trajectories_from_request",
    "trajectory_from_spans",
]

"""CPU per graded run with the model's messages in log records against the same messages in span events.

The runs are the contrib OpenAI instrumentation's captures (tests/testdata/openai-v2) in the two modes that
put messages in log records: ``legacy`` (a ``gen_ai.*.message`` / ``gen_ai.choice`` record per message,
content in a kvlist body) and ``latest.event_only`` (one ``gen_ai.client.inference.operation.details``
record per model call, messages as structured attributes). Each is sent in two forms carrying the same
content, the same traffic:

- ``span events``: each record moved onto the span it names as a span event (its attributes, the body's
  fields beside them: the form the adapters read, tests/adapters/test_otlp_logs.py), one traces request;
- ``log records``: the traces request as captured, and the logs request (records first, as they arrive).

For reference, ``latest.span_only`` sends the same messages as JSON strings in span attributes.

Memory: the bytes ``tracemalloc`` sees allocated by converting and holding each mode's records in an
``Assembler`` whose traces never complete (their spans never come), per record held: what a record costs
the buffer that ``max_buffered_spans`` bounds, beside stages.py's bytes per buffered tool span.

Each round takes every scenario's capture ``COPIES`` times with fresh trace ids through what ``luckrate
serve`` does to them in one process, without servers or threads (as stages.py): decode, compact (spans
packed; records to ``LogEvent``s), assemble (records held beside their traces, joined when the trace is
read), adapt and grade. The figure is the ratio of log records to span events per run; the target is at
most 1.10.

    .venv/bin/python benchmarks/logs_path.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters.otlp import (
    events_from_request,
    logs_request_from_protobuf,
    records_from_request,
    request_from_protobuf,
    trajectory_from_spans,
)
from luckrate.adapters.otlp.conventions import interning
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble.assembler import Assembler, Limits

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "testdata" / "openai-v2"
SPEC = ROOT / "examples" / "spec.py"
NAMES = ("clean", "forbidden", "injected", "user_supplied")
PAIRS = ("legacy", "latest.event_only")
"""Capture modes whose records are sent as log records and, the same content, as span events."""
REFERENCE = "latest.span_only"
COPIES = 50
TARGET = 1.10


def workload(mode: str, copies: int, as_span_events: bool = False) -> tuple[list[tuple[bytes, bytes | None]], int]:
    """Each capture ``copies`` times, trace ids made unique: (traces body, logs body or None) per run, and
    the spans in all of them. ``as_span_events``: the records moved onto their spans instead."""
    runs: list[tuple[bytes, bytes | None]] = []
    spans = 0
    for name in NAMES:
        stem = DATA / f"{name}.{mode}.openai-v2"
        traces = ExportTraceServiceRequest.FromString(Path(f"{stem}.traces.otlp").read_bytes())
        logs = ExportLogsServiceRequest.FromString(Path(f"{stem}.logs.otlp").read_bytes())
        if as_span_events:
            _onto_spans(traces, logs)
            logs = ExportLogsServiceRequest()
        for _ in range(copies):
            trace_id = (len(runs) + 1).to_bytes(16, "big")
            for rs in traces.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        span.trace_id = trace_id
                        spans += 1
            for rl in logs.resource_logs:
                for sl in rl.scope_logs:
                    for record in sl.log_records:
                        record.trace_id = trace_id
            runs.append((traces.SerializeToString(), logs.SerializeToString() if logs.resource_logs else None))
    return runs, spans


def _onto_spans(traces: ExportTraceServiceRequest, logs: ExportLogsServiceRequest) -> None:
    spans = {s.span_id: s for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans}
    for rl in logs.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                event = spans[record.span_id].events.add(
                    name=record.event_name, time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano
                )
                event.attributes.extend(record.attributes)
                if record.body.HasField("kvlist_value"):
                    event.attributes.extend(record.body.kvlist_value.values)


def one_round(runs: list[tuple[bytes, bytes | None]], specs) -> tuple[float, int]:
    """CPU seconds (this process's: the machine is shared) for every run from its bodies to its grade, and
    how many of the runs read with steps."""
    traces: list = []
    asm = Assembler(traces.append, limits=Limits(late_memory=10))
    tables = interning()  # one per buffer's owner, as the service's intake holds one
    start = time.process_time()
    for traces_body, logs_body in runs:
        if logs_body is not None:  # records usually arrive first
            asm.add_logs(events_from_request(logs_request_from_protobuf(logs_body))[0])
        asm.add(records_from_request(request_from_protobuf(traces_body), packed=True, tables=tables)[0])
    asm.drain("root_ended")
    graded = 0
    for trace in traces:
        trajectory = trajectory_from_spans(trace.spans)
        grade(trajectory, spec_for(specs, trajectory.agent))
        graded += bool(trajectory.steps)
    return time.process_time() - start, graded


def bytes_per_held_record(mode: str, copies: int = 50) -> float:
    """Python-object bytes per log record held (converted, waiting for its trace's spans)."""
    runs, _ = workload(mode, copies)
    bodies = [logs for _, logs in runs if logs is not None]
    asm = Assembler(lambda t: None, limits=Limits(root_grace=3600, idle_timeout=3600, max_trace_age=3600))
    asm.add_logs(events_from_request(logs_request_from_protobuf(bodies[0]))[0])  # warm
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = 0
    for body in bodies[1:]:
        events = events_from_request(logs_request_from_protobuf(body))[0]
        held += len(events)
        asm.add_logs(events)
        del events
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copies", type=int, default=COPIES)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args(argv)
    specs = load_specs(SPEC)
    loads = {
        (mode, form): workload(mode, args.copies, form == "span events")
        for mode in PAIRS
        for form in ("span events", "log records")
    }
    loads[(REFERENCE, "span attributes")] = workload(REFERENCE, args.copies)
    for runs, _ in loads.values():
        one_round(runs, specs)  # warm-up
    per_run: dict = {key: [] for key in loads}
    spans_per_s: dict = {key: [] for key in loads}
    for _ in range(args.rounds):  # interleaved, so drift on a shared machine hits every form alike
        for key, (runs, spans) in loads.items():
            seconds, graded = one_round(runs, specs)
            if graded != len(runs):
                raise SystemExit(f"{key}: {graded} of {len(runs)} runs read with steps")
            per_run[key].append(seconds / len(runs) * 1e6)
            spans_per_s[key].append(spans / seconds)
    print(f"{'figure':<58} {'median':>9}   rounds")
    for mode, form in loads:
        for label, values, fmt in (
            ("µs per run", per_run[(mode, form)], ".1f"),
            ("spans/s graded", spans_per_s[(mode, form)], ".0f"),
        ):
            print(
                f"{f'{mode}, messages in {form}: {label}':<58} {statistics.median(values):>9{fmt}}   "
                f"{' '.join(format(v, fmt) for v in values)}"
            )
    for mode in PAIRS:
        ratios = [lg / sp for lg, sp in zip(per_run[(mode, "log records")], per_run[(mode, "span events")])]
        print(
            f"{f'{mode}: log records / span events, per run':<58} {statistics.median(ratios):>9.2f}   "
            f"{' '.join(f'{v:.2f}' for v in ratios)}   target <= {TARGET:.2f}"
        )
    if not args.no_memory:
        for mode in PAIRS:
            print(
                f"{f'{mode}: bytes per held log record (tracemalloc)':<58} "
                f"{bytes_per_held_record(mode, args.copies):>9.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs of the detection set and their OTLP form: what ``benchmarks/detection_data.py`` writes and
``benchmarks/detection.py`` reads. Needs only luckrate's own dependencies (never agentdojo).

A run is the user's prompt and the ordered tool calls with the results the tools really returned.
It becomes one trace in the OTel GenAI conventions, recorded with the real OTel SDK and encoded with
the SDK's own OTLP encoder: an ``invoke_agent <suite>`` root carrying the user message (and
``luckrate.output_ok``), then per call a ``chat`` span whose output message asks for the call
(``tool_call`` part) and an ``execute_tool`` span with ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.call.arguments`` (JSON) and ``gen_ai.tool.call.result``; a final ``chat`` span answers.
Chat spans carry no input history: the tool spans hold every result once, and history would make
the file grow with the square of the run's length.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

from luckrate.adapters.otlp import read_otlp, read_otlp_json
from luckrate.core.step import Trajectory

DATA = Path(__file__).resolve().parent / "data"
TRACES = DATA / "detection_traces.jsonl.gz"
"""One OTLP/JSON ExportTraceServiceRequest per line, one run (trace) each."""
LABELS = DATA / "detection_labels.jsonl.gz"
"""One label record per line, keyed by ``trace_id``."""
MODEL = "scripted-ground-truth"
START_NS = 1_714_000_000_000_000_000  # fixed epoch: the files are byte-stable across regenerations
STEP_NS = 10_000_000


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    result: str | None
    """The tool's output as the agent sees it; None when the call failed."""
    error: str | None = None


@dataclass(frozen=True)
class Run:
    suite: str
    """The agent's name in the trace (selects the suite's spec)."""
    user: str
    calls: tuple[Call, ...]
    answer: str
    label: dict[str, Any]
    """What the benchmark knows about the run (kind, attack, tasks, positive, ...); never put in the trace."""


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator, so regenerated files are identical."""

    def __init__(self, seed: int):
        self._rng = random.Random(seed)

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1


class Recorder:
    """Records runs as spans with the real SDK and hands each back as an OTLP request."""

    def __init__(self, seed: int = 10):
        self.exporter = InMemorySpanExporter()
        # service.instance.id set: the SDK would draw a random one per process.
        resource = Resource.create({"service.name": "luckrate-detection-set", "service.instance.id": "detection-set"})
        provider = TracerProvider(resource=resource, id_generator=SeededIds(seed))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("luckrate.benchmarks.detection")
        self.n = 0

    def record(self, run: Run):
        """The run as one ExportTraceServiceRequest (protobuf message)."""
        self.exporter.clear()
        clock = iter(range(START_NS + self.n * 1_000 * STEP_NS, 2**63, STEP_NS))
        self.n += 1
        _emit(self.tracer, run, clock)
        return encode_spans(self.exporter.get_finished_spans())


def _emit(tracer: trace.Tracer, run: Run, clock: Iterator[int]) -> None:
    user = {"role": "user", "parts": [{"type": "text", "content": run.user}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": run.answer}], "finish_reason": "stop"}
    root = tracer.start_span(
        f"invoke_agent {run.suite}",
        kind=SpanKind.INTERNAL,
        start_time=next(clock),
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": run.suite,
            "gen_ai.input.messages": json.dumps([user]),
            "gen_ai.output.messages": json.dumps([answer]),
            "luckrate.output_ok": True,
        },
    )
    ctx = trace.set_span_in_context(root)
    for i, call in enumerate(run.calls):
        call_id = f"call_{i}"
        ask = {
            "role": "assistant",
            "finish_reason": "tool_call",
            "parts": [{"type": "tool_call", "id": call_id, "name": call.tool, "arguments": call.args}],
        }
        _chat(tracer, ctx, clock, ask, "tool_calls")
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(call.args),
        }
        if call.error is None:
            attrs["gen_ai.tool.call.result"] = call.result or ""
        else:
            attrs["error.type"] = call.error.split(":", 1)[0] or "ToolError"
        span = tracer.start_span(
            f"execute_tool {call.tool}", context=ctx, kind=SpanKind.INTERNAL, start_time=next(clock), attributes=attrs
        )
        if call.error is not None:
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=next(clock))
    _chat(tracer, ctx, clock, answer, "stop")
    root.end(end_time=next(clock))


def _chat(tracer, ctx, clock: Iterator[int], out: dict[str, Any], finish: str) -> None:
    span = tracer.start_span(
        f"chat {MODEL}",
        context=ctx,
        kind=SpanKind.CLIENT,
        start_time=next(clock),
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": MODEL,
            "gen_ai.output.messages": json.dumps([out]),
            "gen_ai.response.finish_reasons": [finish],
        },
    )
    span.end(end_time=next(clock))


def to_json(request) -> str:
    """OTLP/JSON as the spec writes it: lowerCamelCase keys, integer enums, hex trace and span ids."""
    doc = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def trace_id(request) -> str:
    return request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()


def mismatch(run: Run, request) -> str | None:
    """How the trajectory luckrate reads back (binary and JSON paths) differs from the run; None if equal."""
    for how, trajs in (
        ("otlp", read_otlp(request.SerializeToString(), "check")),
        ("otlp-json", read_otlp_json(to_json(request), "check")),
    ):
        if len(trajs) != 1:
            return f"{how}: {len(trajs)} trajectories"
        problem = _differs(run, trajs[0])
        if problem:
            return f"{how}: {problem}"
    return None


def _differs(run: Run, traj: Trajectory) -> str | None:
    if traj.agent != run.suite or traj.inputs != (run.user,):
        return f"agent/input read back as {traj.agent!r}/{traj.inputs!r}"
    if len(traj.steps) != len(run.calls):
        return f"{len(traj.steps)} steps for {len(run.calls)} calls"
    for step, call in zip(traj.steps, run.calls):
        got = (step.tool, step.args, step.result, step.error is not None)
        # The adapter strips surrounding whitespace from a result and reads an empty one as not captured
        # (payloads.result_text); nothing else may differ.
        result = (call.result or "").strip() or None
        want = (call.tool, json.loads(json.dumps(call.args)), result, call.error is not None)
        if got != want:
            return f"step {step.index}: read {got!r:.300}, generated {want!r:.300}"
    return None


def write(pairs: Iterable[tuple[str, dict[str, Any]]]) -> tuple[int, int]:
    """Write (OTLP JSON line, label) pairs; returns (runs, compressed bytes)."""
    DATA.mkdir(exist_ok=True)
    n = 0
    part_t, part_l = TRACES.with_suffix(".part"), LABELS.with_suffix(".part")
    try:
        # mtime=0: the gzip header holds no timestamp, so unchanged data gives an unchanged file.
        with (
            open(part_t, "wb") as raw_t,
            open(part_l, "wb") as raw_l,
            gzip.GzipFile(fileobj=raw_t, mode="wb", mtime=0) as traces,
            gzip.GzipFile(fileobj=raw_l, mode="wb", mtime=0) as labels,
        ):
            for line, label in pairs:
                traces.write(line.encode() + b"\n")
                labels.write(json.dumps(label, sort_keys=True).encode() + b"\n")
                n += 1
    except BaseException:
        part_t.unlink(missing_ok=True)
        part_l.unlink(missing_ok=True)
        raise
    # Replaced only once complete: a failed run leaves the committed set as it was.
    os.replace(part_t, TRACES)
    os.replace(part_l, LABELS)
    return n, TRACES.stat().st_size + LABELS.stat().st_size


def read() -> Iterator[tuple[str, dict[str, Any]]]:
    """(OTLP JSON line, label) pairs in file order."""
    with gzip.open(TRACES, "rt", encoding="utf-8") as traces, gzip.open(LABELS, "rt", encoding="utf-8") as labels:
        for line, label in zip(traces, labels, strict=True):
            yield line, json.loads(label)

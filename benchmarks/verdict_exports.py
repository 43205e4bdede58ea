"""What exemplars and verdict log events cost the grading thread, per graded trace, against the metric
recording the worker did before them (measured in the same run, rounds interleaved):

- metrics: ``Telemetry.run`` + the two histogram records, without the trace (no exemplar);
- + exemplars: the same with the trace's root span as the worker passes it (root span found, context built,
  exemplar offered for bad-path runs);
- + log events: the same plus ``VerdictEvents.publish`` (``--verdict-events all``) into the SDK's real
  OTLP/HTTP log exporter, sending to a loopback sink that answers 200; its batch thread encodes and sends
  while the grading thread runs, as in the service, so the figure includes GIL contention.

A PrometheusReader is attached, as in the service (with no reader the SDK aggregates nothing).

    .venv/bin/python benchmarks/verdict_exports.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import traffic

from luckrate.adapters.otlp import records_from_request, request_from_protobuf, trajectory_from_spans
from luckrate.adapters.otlp.conventions import interning
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble.assembler import Assembler, Limits
from luckrate.service.export.prometheus import PrometheusReader
from luckrate.service.export.telemetry import Labels, Telemetry
from luckrate.service.export.verdict_events import EventOptions, VerdictEvents, otlp_exporter

SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.py"


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def graded_traces(specs) -> list:
    template = traffic.build()
    traces: list = []
    asm = Assembler(traces.append, limits=Limits(late_memory=10))
    tables = interning()
    for n in range(8):
        asm.add(records_from_request(request_from_protobuf(template.render(n, 1)), tables=tables)[0])
    asm.drain("root_ended")
    out = []
    for t in traces:
        traj = trajectory_from_spans(t.spans)
        spec = spec_for(specs, traj.agent)
        out.append((t, grade(traj, spec), spec))
    return out


def per_trace_us(items, telemetry: Telemetry, *, exemplars: bool, events: VerdictEvents | None) -> float:
    start = time.perf_counter()
    for t, g, spec in items:
        if exemplars:
            root = t.root_span_id
            telemetry.run(g, spec, spec.name, trace=(t.trace_id, root))
            if events is not None:
                events.publish(g, spec.name, t.trace_id, root)
        else:
            telemetry.run(g, spec, spec.name)
        telemetry.add("luckrate.grade.duration", 0.001)
        telemetry.add("luckrate.verdict.delay", 0.5)
    return (time.perf_counter() - start) / len(items) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    specs = load_specs(SPEC)
    items = graded_traces(specs)
    telemetry = Telemetry([PrometheusReader()], Labels(specs, 50))
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    events = VerdictEvents(
        otlp_exporter(f"http://127.0.0.1:{sink.server_address[1]}/v1/logs"),
        telemetry.add,
        EventOptions("all", max_queue=len(items) * 4),
    )
    variants = {
        "metrics": dict(exemplars=False, events=None),
        "+ exemplars": dict(exemplars=True, events=None),
        "+ log events": dict(exemplars=True, events=events),
    }
    results: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, kw in variants.items():
            results[name].append(per_trace_us(items, telemetry, **kw))
            events.provider.force_flush()  # each round starts with an empty queue
    events.shutdown(30)
    sink.shutdown()
    base = statistics.median(results["metrics"])
    bad = sum(not g.path_ok for _, g, _ in items)
    print(f"{len(items)} traces per round ({bad} with a bad path), µs per graded trace on the grading thread")
    print(f"{'variant':<13} {'median':>8} {'x metrics':>10}   rounds")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"{name:<13} {med:>8.1f} {med / base:>9.2f}x   {' '.join(f'{v:.1f}' for v in values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU per span of each stage of ``luckrate serve``, and bytes per buffered tool span, in one process.

The end-to-end figures in ``run.py`` say how fast the whole server is; this says where its time goes,
on the same traffic (``traffic.py``), without servers or threads, so each stage can be measured on its
own and a change to one stage can be checked A/B in seconds:

- decode: ``request_from_protobuf`` (upb);
- compact: ``records_from_request(packed=True)`` (what a receiver thread does to each accepted request);
- assemble: ``Assembler.add`` plus completing every trace (the assembler thread);
- adapt: ``trajectory_from_spans`` (spans -> trajectory, on the grader thread), unpacking each trace's
  spans into records first, as the grader thread does;
- grade: ``grade`` against the example spec;
- metrics: ``Telemetry.run`` and the two histogram records the worker makes per trace, counted in a
  ``Tally`` and handed to ``Telemetry`` once per round, as the grader thread does.

Memory: the bytes ``tracemalloc`` sees allocated by compacting and buffering tool-span-only requests in
an ``Assembler`` that never completes a trace, divided by the spans buffered (the Python-object part of
``run.py``'s resident-bytes figure; RSS adds allocator slack on top).

    .venv/bin/python benchmarks/stages.py [--rounds 5]

The grade stage alone, in instructions (the same count whatever else the machine runs): N rounds less 0 rounds,

    for n in 0 4; do PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        .venv/bin/python benchmarks/stages.py --grade-only $n 2>&1 | grep 'I *refs'; done

and divide the difference by 4 and by the spans it prints.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import traffic

from luckrate.adapters.otlp import records_from_request, request_from_protobuf, trajectory_from_spans
from luckrate.adapters.otlp.conventions import interning
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble.assembler import Assembler, Limits
from luckrate.service.grade.tally import Tally, apply
from luckrate.service.export.telemetry import Labels, Telemetry

SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.py"
REQUESTS = 8


def _time(fn, spans: int) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / spans * 1e6


def one_round(
    template: traffic.Template, specs, telemetry: Telemetry, tables, runs: list | None = None
) -> dict[str, float]:
    """µs per span of each stage, over ``REQUESTS`` requests with fresh trace ids; ``tables`` the compaction
    tables, one for the process as the service's intake holds one. ``runs``, when given, gets the round's
    ``(trajectory, spec)`` pairs (``--grade-only`` grades them again)."""
    bodies = [template.render(n, 1) for n in range(REQUESTS)]
    spans = template.spans * REQUESTS
    out: dict[str, float] = {}
    reqs: list = []
    out["decode"] = _time(lambda: reqs.extend(request_from_protobuf(b) for b in bodies), spans)
    batches: list = []
    out["compact"] = _time(
        lambda: batches.extend(records_from_request(r, packed=True, tables=tables)[0] for r in reqs), spans
    )
    traces: list = []
    asm = Assembler(traces.append, limits=Limits(late_memory=10))

    def assemble() -> None:
        for batch in batches:
            asm.add(batch)
        asm.drain("root_ended")

    out["assemble"] = _time(assemble, spans)
    trajs: list = []
    out["adapt"] = _time(lambda: trajs.extend(trajectory_from_spans(t.spans) for t in traces), spans)
    pairs = [(t, spec_for(specs, t.agent)) for t in trajs]
    if runs is not None:
        runs.extend(pairs)
    grades: list = []
    out["grade"] = _time(lambda: grades.extend(grade(t, s) for t, s in pairs), spans)

    def metrics() -> None:  # as the grader thread counts: in a Tally, handed to Telemetry once per round
        tally = Tally()
        for g, (_, s) in zip(grades, pairs):
            tally.run(g, s, s.name, trace=(b"\x01" * 16, b"\x02" * 8))
            tally.add("luckrate.grade.duration", 0.001)
            tally.add("luckrate.verdict.delay", 0.5)
        apply(tally.cut([]), telemetry)

    out["metrics"] = _time(metrics, spans)
    out["total"] = sum(out.values())
    return out


def bytes_per_tool_span(requests: int = 40) -> float:
    """Python-object bytes per buffered ``execute_tool`` span (compacted, held by an Assembler)."""
    template = traffic.build(tools_only=True)
    bodies = [template.render(n, 2) for n in range(requests)]
    asm = Assembler(lambda t: None, limits=Limits(root_grace=3600, idle_timeout=3600, max_trace_age=3600))
    tables = interning()
    asm.add(
        records_from_request(request_from_protobuf(bodies[0]), packed=True, tables=tables)[0]
    )  # warm: the shared table fills
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for body in bodies[1:]:
        req = request_from_protobuf(body)
        asm.add(records_from_request(req, packed=True, tables=tables)[0])
        del req
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / (template.spans * (requests - 1))


def grade_only(template: traffic.Template, specs, telemetry: Telemetry, tables, rounds: int) -> int:
    runs: list = []
    one_round(template, specs, telemetry, tables, runs)
    spans = template.spans * REQUESTS
    best = min((_time(lambda: [grade(t, s) for t, s in runs], spans) for _ in range(rounds)), default=None)
    print(
        f"grade {len(runs)} runs, {spans} spans, {rounds} rounds: best {best:.2f} µs/span"
        if best
        else "grade: 0 rounds"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument(
        "--grade-only",
        type=int,
        metavar="N",
        help="grade one round's runs N more times and print the best µs/span; under cachegrind, the instruction "
        "count with N less the count with 0 is N rounds of the grade stage alone, a figure load does not move",
    )
    args = parser.parse_args(argv)
    specs = load_specs(SPEC)
    telemetry = Telemetry([], Labels(specs, 50))
    template = traffic.build()
    tables = interning()
    if args.grade_only is not None:
        return grade_only(template, specs, telemetry, tables, args.grade_only)
    one_round(template, specs, telemetry, tables)  # warm-up
    rounds = [one_round(template, specs, telemetry, tables) for _ in range(args.rounds)]
    print(f"{'stage':<9} {'µs/span':>8}   rounds")
    for stage in rounds[0]:
        values = [r[stage] for r in rounds]
        print(f"{stage:<9} {statistics.median(values):>8.2f}   {' '.join(f'{v:.2f}' for v in values)}")
    if not args.no_memory:
        print(f"bytes per buffered tool span (tracemalloc): {bytes_per_tool_span():.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

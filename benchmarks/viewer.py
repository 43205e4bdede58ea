"""What the run viewer's bookkeeping costs: CPU per graded span on the grading thread, and bytes per held run
beyond the run's own data.

- CPU: ``Worker.handle`` (adapt, grade, count in a ``Tally``) over the demo-like traffic of ``stages.py``,
  without the viewer and with it (each run added to a ``RunRing`` of 1000, as ``luckrate serve`` does),
  rounds interleaved; the ratio is what the viewer adds per graded span.
- ``--workers N``: what crossing the pipe costs per graded span (``run_ring.pack`` and pickling the run in
  the grading process's report, unpickling and ``unpack`` in the receiving process).
- Memory: ``tracemalloc`` over adding runs already graded (their trajectory and verdict exist before, as
  they do when the grader hands them over) to a full ring: the ring's own cost per held run. With
  ``viewer_content = false`` the ring keeps a copy without content instead, counted too.

    .venv/bin/python benchmarks/viewer.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import sys
import time
import timeit
import tracemalloc
from pathlib import Path

import traffic

from luckrate.adapters.otlp import records_from_request, request_from_protobuf, trajectory_from_spans
from luckrate.adapters.otlp.conventions import interning
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble.assembler import Assembler, Limits
from luckrate.service.export.run_ring import RunRing, pack, unpack
from luckrate.service.grade.tally import Tally
from luckrate.service.grade.worker import Grading, Outlets, Worker

SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.py"


def completed_traces() -> list:
    template = traffic.build()
    traces: list = []
    asm = Assembler(traces.append, limits=Limits(late_memory=10))
    tables = interning()
    for n in range(8):
        asm.add(records_from_request(request_from_protobuf(template.render(n, 1)), tables=tables)[0])
    asm.drain("root_ended")
    return traces


def grading_us(traces, specs, ring: RunRing | None, spans: int) -> float:
    worker = Worker(
        Grading(specs, trajectory_from_spans), Tally(), Outlets(hold=ring.add if ring is not None else None)
    )
    gc.collect()
    start = time.process_time()  # CPU time: a shared machine's waits for a core are not counted
    for t in traces:
        worker.handle(t)
    return (time.process_time() - start) / spans * 1e6


def bytes_per_run(graded, content: bool) -> float:
    ring = RunRing(len(graded), content=content)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for g, traj, spec, trace_id in graded:
        ring.add(g, traj, spec, (trace_id.hex(),))  # the trace id's text is the ring's own, as in the worker
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / len(graded)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    specs = load_specs(SPEC)
    traces = completed_traces()
    spans = sum(len(t.spans) for t in traces)
    without, with_ring = [], []
    for _ in range(args.rounds):  # interleaved: load on a shared machine hits both alike
        without.append(grading_us(traces, specs, None, spans))
        with_ring.append(grading_us(traces, specs, RunRing(1000), spans))
    base, viewer = min(without), min(with_ring)
    print(f"{len(traces)} traces, {spans} spans, {args.rounds} rounds interleaved (min; median in brackets)")
    print("| grading thread | µs per graded span | x without |")
    print("|---|---|---|")
    print(f"| without the viewer | {base:.2f} ({statistics.median(without):.2f}) | 1.000 |")
    print(
        f"| with the viewer (ring of 1000) | {viewer:.2f} ({statistics.median(with_ring):.2f}) | "
        f"{viewer / base:.3f} ({statistics.median(with_ring) / statistics.median(without):.3f}) |"
    )

    graded = []
    for t in traces:
        traj = trajectory_from_spans(t.spans)
        spec = spec_for(specs, traj.agent)
        graded.append((grade(traj, spec), traj, spec, t.trace_id))
    ring = RunRing(1000)

    def add_all() -> None:
        for g, traj, spec, tid in graded:
            ring.add(g, traj, spec, (tid.hex(),))

    def cross_all() -> None:
        for g, traj, _spec, tid in graded:
            unpack(pickle.loads(pickle.dumps(pack(g, traj, (tid.hex(),)), protocol=pickle.HIGHEST_PROTOCOL)))

    alone = min(timeit.repeat(add_all, number=1, repeat=args.rounds)) / spans * 1e6
    print(f"| RunRing.add alone (timed apart from grading) | {alone:.3f} | {alone / base:.4f} |")
    crossing = min(timeit.repeat(cross_all, number=1, repeat=args.rounds)) / spans * 1e6
    size = statistics.mean(len(pickle.dumps(pack(g, traj, (t.hex(),)), protocol=5)) for g, traj, _s, t in graded)
    print(
        f"| --workers: pack, pickle, unpickle, unpack each run in its report | {crossing:.2f} | {crossing / base:.3f} |"
    )
    print(f"(a run pickles to {size:.0f} bytes on average)")

    many = graded * (1000 // len(graded) + 1)
    print("| ring | bytes per held run beyond its own data (tracemalloc) |")
    print("|---|---|")
    print(f"| content on | {bytes_per_run(many[:1000], True):.0f} |")
    print(f"| content off (a copy without content) | {bytes_per_run(many[:1000], False):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

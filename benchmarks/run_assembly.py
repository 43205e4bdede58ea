"""What assembling runs across traces (``luckrate serve --runs-by links|conversation``) costs per span, beside
compaction measured in the same run on the same traffic (``traffic.py``: one trace per run, no links, as
most instrumentations send).

- compact: ``records_from_request(packed=True)``, what a receiver thread does to every accepted request
  (the baseline);
- ties links / ties conversation: what the intake adds, reading each span's links (and with
  ``conversation`` its attributes) from the request; ``conversation`` when the request names the key
  (a request whose encoding does not is read for links only, as ``links`` is);
- run stage: ``RunAssembler.add`` for every completed trace plus grading them all when due, on the
  assembler's thread.

    .venv/bin/python benchmarks/run_assembly.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import traffic
from stages import REQUESTS, _time

from luckrate.adapters.otlp import records_from_request, request_from_protobuf
from luckrate.adapters.otlp.conventions import interning
from luckrate.adapters.otlp.runs import Assembly, ties_by_trace
from luckrate.service.assemble.assembler import Assembler, Limits
from luckrate.service.assemble.run_assembly import RunAssembler, RunLimits


def one_round(template: traffic.Template, tables) -> dict[str, float]:
    bodies = [template.render(n, 3) for n in range(REQUESTS)]
    spans = template.spans * REQUESTS
    reqs = [request_from_protobuf(b) for b in bodies]
    out: dict[str, float] = {}
    batches: list = []
    out["compact"] = _time(
        lambda: batches.extend(records_from_request(r, packed=True, tables=tables)[0] for r in reqs), spans
    )
    for mode in ("links", "conversation"):
        out[f"ties {mode}"] = _time(
            lambda c=(mode == "conversation"): [ties_by_trace(r, lambda t: True, c, Assembly()) for r in reqs], spans
        )
    traces: list = []
    asm = Assembler(traces.append, limits=Limits(late_memory=10))
    for batch in batches:
        asm.add(batch)
    asm.drain("root_ended")
    clock = [0.0]
    runs = RunAssembler(lambda run: None, RunLimits(wait=1.0, memory=10), clock=lambda: clock[0])

    def stage() -> None:
        for t in traces:
            runs.add(t)
        clock[0] += 2.0
        runs.expire()

    out["run stage"] = _time(stage, spans)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    template = traffic.build()
    tables = interning()
    one_round(template, tables)  # warm-up
    rounds = [one_round(template, tables) for _ in range(args.rounds)]
    base = statistics.median(r["compact"] for r in rounds)
    print(f"{'stage':<18} {'µs/span':>8} {'x compact':>10}   rounds")
    for stage in rounds[0]:
        values = [r[stage] for r in rounds]
        m = statistics.median(values)
        print(f"{stage:<18} {m:>8.3f} {m / base:>10.3f}   {' '.join(f'{v:.3f}' for v in values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

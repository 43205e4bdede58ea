"""Smoke test: benchmarks/collector.py runs end to end on its quick settings and prints every figure.

It starts real luckrate servers, the real collector and the load generator (about 20 s). It asserts that each
figure was measured, never a speed: speed belongs in benchmarks/, not in tests.
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.collector.harness import binary
from tests.service.harness import ROOT

FIGURES = (
    "saturated, straight to luckrate: spans/s graded",
    "saturated, through the collector: spans/s graded",
    "at 2,000 spans/s offered: luckrate CPU s per million spans, straight",
    "at 2,000 spans/s offered: luckrate CPU s per million spans, through the collector",
    "at 2,000 spans/s offered: collector CPU s per million spans",
)


def test_collector_benchmark_measures_every_figure() -> None:
    binary()
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "collector.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", line.strip()) for line in done.stdout.splitlines())}
    for figure in FIGURES:
        assert figure in rows, done.stdout
        value = float(rows[figure][0].replace(",", ""))
        assert value > 0, (figure, done.stdout)

"""Smoke test: the benchmark entry point runs end to end on tiny settings and prints its table.

It starts real servers and a real load generator (about 20 s). It asserts the table's shape and that
every figure was measured, never a speed: speed belongs in benchmarks/, not in tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("figure", "median of 1", "unit", "rounds", "vs null", "target")
FIGURES = (
    "null receiver gRPC: spans/s",
    "null receiver HTTP: spans/s",
    "serve gRPC: spans/s graded",
    "serve HTTP: spans/s graded",
    "serve gRPC: verdict delay p50, saturated",
    "serve gRPC: verdict delay p99, saturated",
    "serve gRPC: peak RSS",
    "serve --workers 2 (unpinned), gRPC: spans/s graded",
    "2 serve processes (1 per core), gRPC: spans/s graded",
    "resident bytes per buffered tool span",
    "grade 100 steps: µs per step",
)


def _run(script: str, *args: str, here: bool = False, timeout: int = 300) -> str:
    """Run ``benchmarks/<script>`` with ``args`` (from the benchmarks folder when ``here``); its stdout, once it
    exited 0."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT / "benchmarks" if here else ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def output() -> str:
    return _run("run.py", "--quick", timeout=600)


def test_header_has_the_expected_columns(output: str) -> None:
    header = output.splitlines()[0].split("  ")
    assert tuple(c.strip() for c in header if c.strip()) == COLUMNS


@pytest.mark.parametrize("figure", FIGURES)
def test_every_figure_is_measured(output: str, figure: str) -> None:
    line = next((ln for ln in output.splitlines() if ln.startswith(figure)), None)
    assert line is not None, f"no row {figure!r} in:\n{output}"
    cells = [c.strip() for c in line.split("  ") if c.strip()]
    median = cells[1]
    assert median != "—", line
    assert float(median.replace(",", "")) > 0, line


def test_throughput_rows_carry_a_ratio_to_the_null_receiver(output: str) -> None:
    graded = next(ln for ln in output.splitlines() if ln.startswith("serve gRPC: spans/s graded"))
    assert "x null gRPC" in graded
    assert ("met" in graded) or ("MISSED" in graded)


def test_the_write_ahead_log_benchmark_measures_every_figure() -> None:
    """benchmarks/wal.py --quick (about 15 s): a row per sync policy and the replay line, all measured."""
    out = _run("wal.py", "--quick", timeout=600)
    rows = {ln.split("|")[1].strip(): ln for ln in out.splitlines() if ln.startswith("| ") and "---" not in ln}
    assert set(rows) == {"`--wal`", "off", "interval", "request"}
    for mode in ("off", "interval", "request"):
        cells = [c.strip() for c in rows[mode].split("|")[1:-1]]
        assert "—" not in cells and float(cells[1].replace(",", "")) > 0, rows[mode]
    assert "spans/s read back and handed to grading" in out


def test_the_logs_path_benchmark_runs_and_prints_every_figure() -> None:
    """benchmarks/logs_path.py on one round of one copy: every form measured, both ratios printed."""
    out = _run("logs_path.py", "--rounds", "1", "--copies", "1", here=True)
    lines = out.splitlines()
    for mode, form in (
        ("legacy", "span events"),
        ("legacy", "log records"),
        ("latest.event_only", "span events"),
        ("latest.event_only", "log records"),
        ("latest.span_only", "span attributes"),
    ):
        assert any(line.startswith(f"{mode}, messages in {form}: µs per run") for line in lines), (mode, form)
    ratios = [line for line in lines if "log records / span events, per run" in line]
    assert len(ratios) == 2 and all(float(line.split("per run")[1].split()[0]) > 0 for line in ratios)


def test_the_keep_alive_benchmark_measures_every_answer() -> None:
    """benchmarks/http_keepalive.py on 20 requests per answer: a row per answer, each with its figures."""
    out = _run("http_keepalive.py", "--requests", "20", here=True)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines()}
    for answer in ("protobuf 200", "OTLP/JSON 200", "OTLP/JSON 400"):
        cells = rows[answer].strip("| ").split(" | ")
        assert float(cells[1]) > 0 and float(cells[2]) > 0, rows[answer]


def test_the_viewer_benchmark_runs_and_prints_every_figure() -> None:
    """benchmarks/viewer.py on one round: each row measured (a number where the figure goes)."""
    out = _run("viewer.py", "--rounds", "1", here=True)
    for row in (
        "without the viewer",
        "with the viewer (ring of 1000)",
        "RunRing.add alone",
        "--workers: pack, pickle, unpickle, unpack",
        "content on",
        "content off",
    ):
        (line,) = [x for x in out.splitlines() if row in x]
        assert float(line.split("|")[2].split()[0]) > 0, line

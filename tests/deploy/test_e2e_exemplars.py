"""End to end, from a taint alert to the trace: a real Prometheus with exemplar storage scrapes `luckrate serve`
(OpenMetrics, negotiated by Prometheus's own Accept header) while `luckrate demo` sends traffic through the
SDK's real OTLP/gRPC exporter. `/api/v1/query_exemplars` for the taint series must return exactly the trace ids
of the tainted demo runs, as luckrate's own verdict log lists them.

An exemplar is the trace of a series' *latest* increment, one per scrape, so the demo runs slowly enough
(4 runs/s: two tainted runs of one agent are 5 s apart) that Prometheus (scraping every second) sees each.
Prometheus comes from Debian's `prometheus` package (CI installs it); both servers bind 127.0.0.1 on free
ports with their own temporary directories and are stopped at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator

import pytest

from luckrate import demo
from tests.builders import SPEC
from tests.deploy.prometheus import get, run_prometheus, tainted_traces, wait_for
from tests.service.harness import Server

pytestmark = pytest.mark.usefixtures("prometheus_binary")


RUNS, RATE = 24, 4
"""Runs 3, 13 and 23 are tainted (3 and 23 by support-agent, 13 by billing-agent)."""


@pytest.fixture(scope="module")
def luckrate(tmp_path_factory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("luckrate")
    verdicts = tmp / "verdicts.jsonl"
    with Server("--http", "off", "--root-grace", "0.2", "--verdict-log", str(verdicts), spec=SPEC) as server:
        try:
            yield {**server.ports, "verdicts": verdicts}
        finally:
            server.terminate()


@pytest.fixture(scope="module")
def prometheus(luckrate, tmp_path_factory) -> Iterator[str]:
    yield from run_prometheus(
        tmp_path_factory.mktemp("prometheus"),
        luckrate["prometheus"],
        {"global": {"scrape_interval": "1s"}},
        "--enable-feature=exemplar-storage",
    )


@pytest.fixture(scope="module")
def traffic(luckrate, prometheus) -> dict:
    started = time.time() - 60
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "luckrate.cli",
            "demo",
            "--endpoint",
            f"127.0.0.1:{luckrate['grpc']}",
            "--rate",
            str(RATE),
            "--runs",
            str(RUNS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    tainted_runs = sum(demo.nth_run(i).kind == "tainted" for i in range(RUNS))
    tainted = wait_for(
        f"{tainted_runs} tainted traces in the verdict log",
        lambda: (ids := tainted_traces(luckrate["verdicts"])) and len(ids) == tainted_runs and ids,
    )
    return {"start": started, "tainted": set(tainted)}


def exemplar_trace_ids(base: str, query: str, start: float) -> dict[str, set[str]]:
    """Series (as JSON of its labels) -> trace ids of its stored exemplars."""
    params = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{time.time() + 60:.3f}"})
    body = get(f"{base}/api/v1/query_exemplars?{params}")
    if body is None:
        return {}
    doc = json.loads(body)
    assert doc["status"] == "success", doc
    return {
        json.dumps(s["seriesLabels"], sort_keys=True): {e["labels"]["trace_id"] for e in s["exemplars"]}
        for s in doc["data"]
    }


def all_ids(by_series: dict[str, set[str]]) -> set[str]:
    return set().union(*by_series.values()) if by_series else set()


def test_taint_exemplars_are_exactly_the_tainted_runs(prometheus: str, traffic: dict) -> None:
    want = traffic["tainted"]
    got = wait_for(
        "every tainted trace as a taint exemplar",
        lambda: (
            (ids := all_ids(exemplar_trace_ids(prometheus, "luckrate_taint_total", traffic["start"]))) >= want and ids
        ),
    )
    assert got == want


def test_bad_path_and_violation_exemplars_name_graded_traces_with_violations(
    prometheus: str, traffic: dict, luckrate: dict
) -> None:
    logged = {json.loads(line)["trace_id"] for line in luckrate["verdicts"].read_text().splitlines()}
    runs = wait_for(
        "bad-path run exemplars",
        lambda: exemplar_trace_ids(prometheus, 'luckrate_runs_total{path="bad"}', traffic["start"]),
    )
    violations = wait_for(
        "violation exemplars", lambda: exemplar_trace_ids(prometheus, "luckrate_violations_total", traffic["start"])
    )
    assert all_ids(runs) <= logged and all_ids(violations) <= logged
    assert all('"path": "bad"' in series for series in runs)  # ok-path runs carry none

"""The OpenTelemetry JS SDK's three OTLP trace exporters (HTTP/JSON, HTTP/protobuf, gRPC), each with and
without gzip, sending to the real server from a real Node process: every run graded as the core grades it.

Regression: the JS HTTP exporters send Transfer-Encoding: chunked without Content-Length, and luckrate
answered 411 to every export (issue #11). The exporters are pinned in js/package-lock.json; CI installs
them with `npm ci` (.ci/run).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import external
from tests.interop.harness import assert_graded_right, runs_for
from tests.service.harness import Server, record_runs

JS = Path(__file__).parent / "js"
PACKAGES = ("exporter-trace-otlp-http", "exporter-trace-otlp-proto", "exporter-trace-otlp-grpc", "sdk-trace-base")
CASES = [(exporter, compression) for exporter in ("http", "proto", "grpc") for compression in ("none", "gzip")]


@pytest.fixture(scope="module")
def server():
    if shutil.which("node") is None:
        external.missing("Node.js 20 or later (node)", "apt-get install -y nodejs npm")
    missing = [p for p in PACKAGES if not (JS / "node_modules" / "@opentelemetry" / p).is_dir()]
    if missing:
        external.missing(f"the npm package @opentelemetry/{missing[0]}", "npm ci --prefix tests/interop/js")
    with Server("--root-grace", "1") as s:
        yield s


@pytest.mark.parametrize("exporter, compression", CASES, ids=[f"{e}-{c}" for e, c in CASES])
def test_js_exporter_is_graded_right(server, tmp_path, exporter, compression):
    agent = f"js-{exporter}-{compression}"
    runs = runs_for(agent)
    runs_file = tmp_path / "runs.json"
    runs_file.write_text(json.dumps([dataclasses.asdict(r) for r in runs]))
    url = f"http://{server.grpc}" if exporter == "grpc" else server.http + "/v1/traces"
    done = subprocess.run(
        ["node", str(JS / "send.js"), exporter, url, compression, str(runs_file)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sent = json.loads(done.stdout.strip().splitlines()[-1])
    assert sent["spans"] == len(record_runs(runs)), sent  # every span exported: none failed
    assert_graded_right(server, agent, runs)

"""The /metrics body passes `promtool check metrics`, Prometheus's own linter.

Regression: every counter was reported "no help text": HELP and TYPE named the OpenMetrics family
(`x`) in the text format 0.0.4, where they name the sample (`x_total`). promtool comes from Debian's
`prometheus` package, which CI installs.
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.request


from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from tests import external
from tests.builders import config
from tests.service.harness import SPEC, parse_metrics, record_runs, runs, total, wait_until

promtool = shutil.which("promtool")


def test_metrics_body_passes_promtool_check_metrics():
    if promtool is None:
        external.missing("promtool", "apt-get install -y prometheus")
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    svc = build(config(http=None), load_specs(SPEC))
    svc.start()
    try:
        spans = record_runs(runs(["clean", "forbidden", "tainted"]))
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{svc.receivers[0].port}", insecure=True).export(spans)
        url = f"http://127.0.0.1:{svc.metrics.port}/metrics"

        def scrape():
            with urllib.request.urlopen(url, timeout=5) as r:
                body = r.read().decode()
            return body if total(parse_metrics(body), "luckrate_runs_total") == 3 else None

        body = wait_until(scrape, "the three runs to be graded")
    finally:
        assert svc.stop(10)
    # Every kind is in the body: counters, a gauge, histograms, labelled and unlabelled series.
    assert "luckrate_violations_total{" in body and "luckrate_grade_duration_seconds_bucket{" in body
    proc = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")

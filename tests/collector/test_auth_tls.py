"""Test 4: TLS and a bearer token from the real collector to the real luckrate, loaded from the shipped
otelcol.yaml plus overlays/tls-bearer.yaml (bearertokenauth on the exporter, the CA in tls.ca_file).

With the right token every trace is graded; with a wrong one luckrate grades nothing and counts each
refusal, and the collector reports the failure in its own otelcol_exporter_send_failed_spans (a 401 /
UNAUTHENTICATED is not retried). Certificates are made by the test with ``cryptography``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate import demo
from tests.collector.harness import (
    GRACE,
    BASE,
    OVERLAYS,
    Collector,
    delivered,
    exporter_spans,
    graded,
    offline_verdicts,
    run_counts,
    sdk_exporter,
    send,
    served_counts,
)
from tests.service.harness import Server, record_runs, total, wait_until

TOKEN = "s3cret-collector-token"
EXPORTER = {"grpc": "otlp/luckrate", "http": "otlphttp/luckrate"}


def _collector(tmp_path: Path, luckrate: Server, protocol: str, ca: Path, token: str) -> Collector:
    token_file = tmp_path / "collector-token"
    token_file.write_text(token)
    override = {
        "exporters": {
            "otlp/luckrate": {"endpoint": luckrate.grpc},
            "otlphttp/luckrate": {"endpoint": luckrate.http.replace("http://", "https://")},
        },
        "service": {"pipelines": {"traces": {"exporters": [EXPORTER[protocol]]}}},
    }
    env = {"LUCKRATE_CA_FILE": str(ca), "LUCKRATE_BEARER_TOKEN_FILE": str(token_file)}
    return Collector(tmp_path, BASE, OVERLAYS / "tls-bearer.yaml", override=override, env=env)


def _luckrate(tmp_path: Path, pki) -> Server:  # noqa: F811
    token = tmp_path / "luckrate-token"
    token.write_text(TOKEN + "\n")
    cert, key = pki["server"]
    return Server(
        "--root-grace", GRACE, "--tls-cert", str(cert), "--tls-key", str(key), "--bearer-token-file", str(token)
    )


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_right_token_over_tls_grades_everything(protocol: str, tmp_path: Path, pki) -> None:  # noqa: F811
    spans = record_runs([demo.nth_run(i) for i in range(20)])
    expected = offline_verdicts(spans, tmp_path)
    with _luckrate(tmp_path, pki) as luckrate, _collector(tmp_path, luckrate, protocol, pki["ca"], TOKEN) as collector:
        send(spans, sdk_exporter(collector, protocol))
        s = graded(luckrate, len(expected))
        assert served_counts(s) == run_counts(expected)
        assert total(s, "luckrate_spans_received_total", transport=protocol) == len(spans)
        assert total(s, "luckrate_requests_refused_total", reason="unauthenticated") == 0
        assert exporter_spans(delivered(collector, len(spans), EXPORTER[protocol]), "send_failed") == 0


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_wrong_token_grades_nothing_and_the_collector_reports_it(protocol: str, tmp_path: Path, pki) -> None:  # noqa: F811
    spans = record_runs([demo.nth_run(i) for i in range(20)])
    with (
        _luckrate(tmp_path, pki) as luckrate,
        _collector(tmp_path, luckrate, protocol, pki["ca"], "not-the-token") as collector,
    ):
        send(spans, sdk_exporter(collector, protocol))

        def failed():
            t = collector.telemetry()
            return t if exporter_spans(t, "send_failed", EXPORTER[protocol]) == len(spans) else None

        t = wait_until(failed, f"the collector to count {len(spans)} failed spans", timeout=60)
        assert exporter_spans(t, "sent", EXPORTER[protocol]) == 0
        s = luckrate.scrape()
        assert total(s, "luckrate_requests_refused_total", transport=protocol, reason="unauthenticated") > 0
        assert total(s, "luckrate_spans_received_total") == 0
        assert total(s, "luckrate_runs_total") == 0

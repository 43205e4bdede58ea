"""Tests 2 and 3: the SDK's real exporters → the real collector on the shipped otelcol.yaml → the real
``luckrate serve``.

2. Over OTLP/gRPC (otlp exporter) and OTLP/HTTP (otlphttp exporter, overlays/otlphttp.yaml), gzip on both
   legs: luckrate's run and taint counters equal ``luckrate grade --format otlp`` on the same traces.
3. Back-pressure: luckrate's span buffer is far smaller than the traffic, so it refuses batches; the
   collector's retry_on_failure and sending_queue (as shipped) deliver every span, luckrate's accounting
   identities hold, every trace is graded once, and the collector counts no failed span.

The tracing backend is left out of the traces pipeline (none runs here); every exporter aimed at luckrate is
loaded as shipped, with only its endpoint moved to the test's luckrate.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate import demo
from tests.collector.harness import (
    BASE,
    GRACE,
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
from tests.reliability.harness import identity, settled
from tests.service.harness import Server, record_runs, total

EXPORTER = {"grpc": "otlp/luckrate", "http": "otlphttp/luckrate"}


def _to(luckrate: Server, protocol: str) -> dict:
    """Override: aim luckrate's exporters at this luckrate, and the traces pipeline at one of them."""
    return {
        "exporters": {"otlp/luckrate": {"endpoint": luckrate.grpc}, "otlphttp/luckrate": {"endpoint": luckrate.http}},
        "service": {"pipelines": {"traces": {"exporters": [EXPORTER[protocol]]}}},
    }


def _configs(protocol: str) -> list[Path]:
    return [BASE, OVERLAYS / "otlphttp.yaml"] if protocol == "http" else [BASE]


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_collector_relays_every_trace_and_the_verdicts_match_the_cli(protocol: str, tmp_path: Path) -> None:
    spans = record_runs([demo.nth_run(i) for i in range(40)])
    expected = offline_verdicts(spans, tmp_path)
    assert len(expected) == 40
    with (
        Server("--root-grace", GRACE) as luckrate,
        Collector(tmp_path, *_configs(protocol), override=_to(luckrate, protocol)) as collector,
    ):
        send(spans, sdk_exporter(collector, protocol))
        s = graded(luckrate, len(expected))
        assert served_counts(s) == run_counts(expected)
        assert run_counts(expected)[1] > 0, "the traffic holds tainted runs"
        # Every span arrived over the leg under test, none twice; the collector counts no failure.
        assert total(s, "luckrate_spans_received_total", transport=protocol) == len(spans)
        assert total(s, "luckrate_spans_assembled_total") == len(spans)
        t = delivered(collector, len(spans), EXPORTER[protocol])
        assert exporter_spans(t, "send_failed") == 0


def test_back_pressure_is_retried_until_every_span_is_graded(tmp_path: Path) -> None:
    spans = record_runs([demo.nth_run(i) for i in range(200)])
    expected = offline_verdicts(spans, tmp_path)
    toml = tmp_path / "luckrate.toml"
    toml.write_text("retry_after = 1\n")  # seconds the collector is told to wait (RetryInfo)
    # 520 buffered spans: one shipped batch (send_batch_max_size 512) fits, a second does not until the
    # first is graded, 2 s after its traces' roots arrive. The traffic is ~3 times the buffer.
    with (
        Server("--config", str(toml), "--max-buffered-spans", "520", "--root-grace", "2") as luckrate,
        Collector(tmp_path, BASE, override=_to(luckrate, "grpc")) as collector,
    ):
        send(spans, sdk_exporter(collector, "grpc"), per_request=200)
        t = delivered(collector, len(spans), "otlp/luckrate")  # the last retries are through
        s = settled(luckrate)
        terms = identity(s)
        assert total(s, "luckrate_requests_refused_total", reason="buffer_full") > 0, "luckrate never pushed back"
        assert total(s, "luckrate_spans_rejected_total", reason="buffer_full") > 0
        # Nothing lost: every span sent was accepted once, and every trace graded once. Retries reorder
        # batches, so a trace's root can overtake some of its children; children that come more than
        # root_grace after the root was graded are counted late (docs/production.md, the collector).
        assert terms["spans_duplicate"] == 0  # only a resend after the exporter's 10 s timeout would make one
        assert terms["spans_assembled"] + terms["spans_late"] == len(spans)
        assert terms["runs"] == len(expected) == terms["traces_completed"]
        assert exporter_spans(t, "send_failed", "otlp/luckrate") == 0


def test_the_single_host_config_relays_every_trace_as_shipped(tmp_path: Path) -> None:
    # There was no config that ran on one host beside `luckrate serve`: the base one exports to a Tempo host
    # and a tracing backend only compose and a deployment have, and takes luckrate's own ports.
    single = BASE.parent / "otelcol-single-host.yaml"
    spans = record_runs([demo.nth_run(i) for i in range(20)])
    expected = offline_verdicts(spans, tmp_path)
    with (
        Server("--root-grace", GRACE) as luckrate,
        Collector(
            tmp_path,
            single,
            override={"exporters": {"otlp/luckrate": {"endpoint": luckrate.grpc}}},
            env={"TRACING_BACKEND_ENDPOINT": ""},
        ) as collector,
    ):
        send(spans, sdk_exporter(collector, "grpc"))
        s = graded(luckrate, len(expected))
        assert served_counts(s) == run_counts(expected)
        t = delivered(collector, len(spans), "otlp/luckrate")
        assert exporter_spans(t, "send_failed") == 0


def test_the_readme_snippet_reaches_luckrate_through_the_single_host_collector(tmp_path: Path) -> None:
    """The README's instrument snippet, as written, sends through collector-config/otelcol-single-host.yaml by
    OTEL_EXPORTER_OTLP_ENDPOINT alone (it used to hard-code luckrate's 127.0.0.1:4317), and luckrate pushes
    its metrics back with --otlp-metrics given the collector's base URL, as that file's comment says (that
    URL got a 404 on every push before luckrate appended /v1/metrics)."""
    import subprocess
    import sys
    import urllib.request

    from tests.collector.harness import free_port, parse_metrics, wait_until
    from tests.service.harness import sdk_env, snippet

    single = BASE.parent / "otelcol-single-host.yaml"
    luckrate_grpc = f"127.0.0.1:{free_port()}"
    with Collector(
        tmp_path, single, override={"exporters": {"otlp/luckrate": {"endpoint": luckrate_grpc}}}
    ) as collector:
        base = f"http://127.0.0.1:{collector.ports['http']}"
        flags = (
            "--grpc",
            luckrate_grpc,
            "--root-grace",
            "0.2",
            "--otlp-metrics",
            base,
            "--otlp-metrics-interval",
            "0.5",
        )
        with Server(*flags) as luckrate:
            script = tmp_path / "agent.py"
            script.write_text(snippet("README.md"), encoding="utf-8")
            env = sdk_env(f"http://{collector.grpc}")
            assert not {k for k in env if k.startswith("OTEL_")} - {"OTEL_EXPORTER_OTLP_ENDPOINT"}
            subprocess.run([sys.executable, str(script)], check=True, timeout=120, env=env, cwd=tmp_path)
            s = luckrate.wait_metric("luckrate_runs_total", 1, output="pass", path="ok")
            assert total(s, "luckrate_runs_total") == 1
            assert total(s, "luckrate_spans_assembled_total") == 3

            def pushed() -> dict | None:
                url = f"http://127.0.0.1:{collector.ports['prometheus']}/metrics"
                with urllib.request.urlopen(url, timeout=10) as r:
                    m = parse_metrics(r.read().decode())
                return m if total(m, "luckrate_runs_total", output="pass", path="ok") == 1 else None

            wait_until(pushed, "luckrate_runs_total on the collector's prometheus exporter (the --otlp-metrics push)")
    assert "404" not in "".join(luckrate.stderr)

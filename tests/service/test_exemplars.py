"""Exemplars: bad-path runs, violations and taint findings carry the graded trace's id in the OpenMetrics
format (parsed with prometheus-client's real OpenMetrics parser, which rejects malformed exposition); the
plain text format stays the default and carries none."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from luckrate.core.grade import grade
from luckrate.service.grade.completed import CompletedTrace
from luckrate.service.config import Endpoint
from luckrate.service.export.exemplars import LatestExemplar, trace_context
from luckrate.service.export.prometheus import MetricsServer, wants_openmetrics
from luckrate.service.grade.tally import Tally, apply
from luckrate.service.export.instruments import INSTRUMENTS
from luckrate.service.export.telemetry import Telemetry
from tests.builders import span, trajectory
from tests.scenarios import BY_NAME
from tests.service.harness import SPECS, parse_metrics

SPEC = SPECS["*"]
TRACE_A, TRACE_B = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736"), bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("00f067aa0ba902b7")


def exemplars(text: str) -> dict[tuple[str, tuple], str]:
    """(sample name, labels) -> exemplar trace id, from the OpenMetrics text."""
    out = {}
    for family in openmetrics_families(text):
        for s in family.samples:
            if s.exemplar is not None:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.exemplar.labels["trace_id"]
    return out


def run(t: Telemetry | Tally, scenario: str, trace: bytes, output_ok: bool | None = True) -> None:
    t.run(grade(trajectory(BY_NAME[scenario], output_ok=output_ok), SPEC), SPEC, SPEC.name, trace=(trace, SPAN))


def test_bad_path_runs_violations_and_taint_carry_the_trace(tele):
    t, reader = tele
    run(t, "injected", TRACE_A)  # taint: a bad path
    run(t, "clean", TRACE_B)  # a good path: no exemplar anywhere
    got = exemplars(reader.render(openmetrics=True))
    assert set(got.values()) == {TRACE_A.hex()}
    assert {name for name, _ in got} == {"luckrate_runs_total", "luckrate_violations_total", "luckrate_taint_total"}
    runs = {dict(labels)["path"] for name, labels in got if name == "luckrate_runs_total"}
    assert runs == {"bad"}


def test_a_tally_carries_the_same_exemplars_to_telemetry(tele):
    """The grader thread and grading processes count in a Tally; ``apply`` hands its exemplars on with the
    summed increment, so /metrics names the same traces as when Telemetry records each run itself."""
    t, reader = tele
    tally = Tally()
    run(tally, "injected", TRACE_A)
    run(tally, "clean", TRACE_B)
    run(tally, "injected", TRACE_B)
    apply(tally.cut([]), t)
    got = exemplars(reader.render(openmetrics=True))
    assert set(got.values()) == {TRACE_B.hex()}  # the latest increment's trace
    assert {name for name, _ in got} == {"luckrate_runs_total", "luckrate_violations_total", "luckrate_taint_total"}


def test_the_latest_increment_wins_and_stays_across_scrapes(tele):
    t, reader = tele
    run(t, "injected", TRACE_A)
    run(t, "injected", TRACE_B)
    first = exemplars(reader.render(openmetrics=True))
    assert set(first.values()) == {TRACE_B.hex()}
    # No increment since: the next scrape still names the trace behind the latest one (the SDK's default
    # reservoir would have forgotten it).
    assert exemplars(reader.render(openmetrics=True)) == first


def test_plain_text_is_the_default_and_has_no_exemplars(tele):
    t, reader = tele
    run(t, "injected", TRACE_A)
    text = reader.render()
    assert " # {" not in text and "# EOF" not in text
    assert (
        parse_metrics(text)[
            (
                "luckrate_taint_total",
                (("agent", "support"), ("privileged_tool", "send_email"), ("source_tool", "fetch_webpage")),
            )
        ]
        == 1
    )


def test_openmetrics_keeps_every_family_and_value(tele):
    t, reader = tele
    run(t, "injected", TRACE_A)
    t.add("luckrate.grade.duration", 0.003)
    t.add("luckrate.traces.active", 2)
    plain = parse_metrics(reader.render())
    text = reader.render(openmetrics=True)
    assert text.endswith("# EOF\n")
    om = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in openmetrics_families(text)
        for s in family.samples
    }
    assert om == plain


def test_only_declared_instruments_carry_exemplars():
    assert {i.name for i in INSTRUMENTS if i.exemplar} == {"luckrate.runs", "luckrate.violations", "luckrate.taint"}


def test_latest_reservoir_ignores_measurements_without_a_span():
    r = LatestExemplar()
    r.offer(1, 10, {}, trace_context(TRACE_A, SPAN))
    r.offer(1, 20, {}, None)  # no span in the current context: not an exemplar, the last one stays
    (e,) = r.collect({})
    assert (e.trace_id, e.span_id, e.time_unix_nano) == (int(TRACE_A.hex(), 16), int(SPAN.hex(), 16), 10)


@pytest.mark.parametrize(
    "accept, openmetrics",
    [
        (None, False),
        ("text/plain;version=0.0.4", False),
        ("*/*", False),
        # What Prometheus 2.x sends.
        (
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
            "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            True,
        ),
        ("text/plain;q=0.9, application/openmetrics-text; version=1.0.0; q=0.5", True),
        ("application/openmetrics-text;q=0", False),
        ("application/openmetrics-text;q=bogus", False),
    ],
)
def test_accept_negotiation(accept, openmetrics):
    assert wants_openmetrics(accept) is openmetrics


@pytest.mark.e2e  # a metrics server on a loopback port
def test_metrics_server_serves_openmetrics_when_asked(tele):
    t, reader = tele
    run(t, "injected", TRACE_A)
    server = MetricsServer(Endpoint("127.0.0.1", 0), reader)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        asked = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(asked, timeout=10) as r:
            assert r.headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
            assert set(exemplars(r.read().decode()).values()) == {TRACE_A.hex()}
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert " # {" not in r.read().decode()
    finally:
        server.shutdown()


def records(*spans: tuple[str, str, int]):
    """SpanRecords (span id hex, parent id hex, start) of one trace."""
    return tuple(
        span(int(s, 16), int(p, 16) if p else None, "x", start, start + 1, trace=TRACE_A) for s, p, start in spans
    )


@pytest.mark.parametrize(
    "spans, root",
    [
        ((("0000000000000002", "0000000000000001", 5), ("0000000000000001", "", 9)), "0000000000000001"),
        # No root arrived: the earliest span whose parent is missing.
        (
            (("0000000000000003", "0000000000000002", 5), ("0000000000000002", "0000000000000009", 7)),
            "0000000000000002",
        ),
        # Two parentless spans: the earliest.
        ((("0000000000000004", "", 8), ("0000000000000005", "", 3)), "0000000000000005"),
        ((), ""),
    ],
)
def test_root_span_id(spans, root):
    assert CompletedTrace(TRACE_A, records(*spans), "root_ended", 0.0).root_span_id.hex() == root

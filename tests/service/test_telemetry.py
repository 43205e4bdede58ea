"""Telemetry: instruments as declared, bounded labels, and the Prometheus text our reader serves,
parsed with prometheus-client's real parser."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from luckrate.core.grade import grade
from luckrate.service.config import Endpoint
from luckrate.service.export.prometheus import MetricsServer
from luckrate.service.export.instruments import INSTRUMENTS, ZERO_SERIES, prometheus_name
from luckrate.service.export.telemetry import OTHER, Labels
from tests.builders import trajectory
from tests.scenarios import BY_NAME
from tests.service.harness import SPECS, parse_metrics, total

ROOT = Path(__file__).resolve().parents[2]


NAMES = [
    ("luckrate.runs", "luckrate_runs_total"),
    ("luckrate.taint", "luckrate_taint_total"),
    ("luckrate.traces.active", "luckrate_traces_active"),
    ("luckrate.grade.duration", "luckrate_grade_duration_seconds"),
]


@pytest.mark.parametrize("otel, prom", NAMES)
def test_prometheus_names(otel, prom):
    assert prometheus_name(next(i for i in INSTRUMENTS if i.name == otel)) == prom


def test_runs_violations_and_taint_from_real_grades(tele):
    t, reader = tele
    spec = SPECS["*"]
    for name, ok in (("clean", True), ("injected", True), ("forbidden", False), ("user_supplied", None)):
        t.run(grade(trajectory(BY_NAME[name], output_ok=ok), spec), spec, spec.name)
    s = parse_metrics(reader.render())
    assert total(s, "luckrate_runs_total") == 4
    assert total(s, "luckrate_runs_total", output="pass", path="bad") == 1  # injected: lucky
    assert total(s, "luckrate_runs_total", output="pass", path="ok") == 1
    assert total(s, "luckrate_runs_total", output="unknown") == 1
    assert total(s, "luckrate_taint_total", privileged_tool="send_email", source_tool="fetch_webpage") == 1
    assert total(s, "luckrate_violations_total", check="forbidden", tool="delete_account", severity="hard") == 1


def test_loss_counters_start_at_zero(tele):
    # Regression: fixed-reason counters appeared only after their first increment, so a healthy service
    # showed "No data" on the loss panels and rate()-based alerts missed the very first loss.
    _, reader = tele
    s = parse_metrics(reader.render())
    for name, labels in (
        ("luckrate_spans_late_total", {}),
        ("luckrate_grade_errors_total", {}),
        ("luckrate_traces_ungraded_total", {"reason": "no_spec"}),
        ("luckrate_spans_rejected_total", {"reason": "buffer_full"}),
        ("luckrate_requests_refused_total", {"transport": "grpc", "reason": "too_large"}),
        ("luckrate_traces_completed_total", {"reason": "shutdown"}),
    ):
        key = (name, tuple(sorted(labels.items())))
        assert s[key] == 0, key
    assert total(s, "luckrate_runs_total") == 0 and not any(n == "luckrate_runs_total" for n, _ in s)


def test_agent_labels_first_n_then_other():
    labels = Labels(SPECS, max_agents=2)
    assert [labels.agent(a) for a in ("a", "b", "c", "a", None)] == ["a", "b", OTHER, "a", OTHER]


def test_agent_labels_with_named_specs_are_the_keys():
    named = {"refunds": SPECS["*"], "*": SPECS["*"]}
    labels = Labels(named, max_agents=20)
    assert [labels.agent(a) for a in ("refunds", "x")] == ["refunds", OTHER]


def test_tool_labels_come_from_the_spec_vocabulary():
    assert Labels.tool("send_email", SPECS["*"]) == "send_email"
    assert Labels.tool('evil"}\n', SPECS["*"]) == OTHER


def test_undeclared_attributes_are_refused(tele):
    t, _ = tele
    with pytest.raises(ValueError, match="luckrate.spans.rejected takes attributes"):
        t.add("luckrate.spans.rejected", 1, why="x")


@pytest.mark.parametrize(
    "name, attributes",
    [
        ("luckrate.spans.rejected", {"reason": "buffer_ful"}),
        ("luckrate.requests.refused", {"transport": "udp", "reason": "too_large"}),
        ("luckrate.log_requests.refused", {"transport": "http", "reason": "connection_limit"}),
        ("luckrate.runs", {"agent": "a", "spec": "s", "output": "pass", "path": "fine"}),
    ],
)
def test_a_value_outside_its_declared_set_is_refused(tele, name, attributes):
    t, _ = tele
    key = next(k for k, v in attributes.items() if v in {"buffer_ful", "udp", "connection_limit", "fine"})
    with pytest.raises(ValueError, match=rf"{name}: {key}='{attributes[key]}' is not one of"):
        t.add(name, 1, **attributes)


def test_policy_bounded_labels_take_any_value_the_policy_gives(tele):
    t, reader = tele
    t.add("luckrate.runs", agent="any agent", spec="any spec", output="pass", path="ok")
    assert total(parse_metrics(reader.render()), "luckrate_runs_total", agent="any agent") == 1


def test_zero_series_are_every_closed_counter_series():
    # What is exported at 0 is derived from the declarations: every counter whose labels are closed sets,
    # each combination of their values once.
    zero = dict(ZERO_SERIES)
    assert zero["luckrate.spans.accepted"] == ({},)
    assert len(zero["luckrate.requests.refused"]) == 2 * 9  # transports × refusal reasons
    assert {"transport": "http", "reason": "wal_full"} in zero["luckrate.requests.refused"]
    assert not {"luckrate.runs", "luckrate.traces.active", "luckrate.grade.duration"} & set(zero)


def test_histograms_and_gauges_render(tele):
    t, reader = tele
    t.add("luckrate.grade.duration", 0.003)
    t.add("luckrate.grade.duration", 7.0)
    t.add("luckrate.traces.active", 3)
    t.add("luckrate.traces.active", -1)
    s = parse_metrics(reader.render())
    assert s[("luckrate_grade_duration_seconds_count", ())] == 2
    assert s[("luckrate_grade_duration_seconds_bucket", (("le", "0.005"),))] == 1
    assert s[("luckrate_grade_duration_seconds_bucket", (("le", "+Inf"),))] == 2
    assert s[("luckrate_traces_active", ())] == 2


@pytest.mark.e2e  # a metrics server on a loopback port
def test_metrics_server_lifecycle(tele):
    t, reader = tele
    t.add("luckrate.grade.errors")
    server = MetricsServer(Endpoint("127.0.0.1", 0), reader)
    server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as r:
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert parse_metrics(r.read().decode())[("luckrate_grade_errors_total", ())] == 1
    finally:
        server.shutdown()
    server.shutdown()
    MetricsServer(Endpoint("127.0.0.1", 0), reader).shutdown()  # shutdown without start


def test_docs_metrics_table_matches_the_instruments():
    """The metrics table (docs/metrics.md) lists exactly what instruments.py declares."""
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(luckrate_[a-z_]+)`", text, re.M))
    assert documented == {prometheus_name(i) for i in INSTRUMENTS}

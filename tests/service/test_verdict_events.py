"""Verdict log events: what one record holds (through the SDK's logs pipeline into its in-memory exporter),
which runs get one, and that a slow logs endpoint costs records, counted, never a wait.

The slow endpoint is a real loopback socket that accepts connections and never answers, so the SDK's real
OTLP/HTTP log exporter blocks on it as it would on a hung collector."""

from __future__ import annotations

import socket
from collections import Counter

import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

from luckrate.core.grade import grade
from luckrate.service.export.verdict_events import (
    EVENT_NAME,
    MAX_LINES,
    EventOptions,
    VerdictEvents,
    explanation,
    otlp_exporter,
)
from tests.builders import trajectory
from tests.scenarios import BY_NAME
from tests.service.harness import SPECS

SPEC = SPECS["*"]
TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")


class Counts:
    """Records what VerdictEvents counts (the Telemetry.add signature)."""

    def __init__(self):
        self.dropped: Counter = Counter()

    def __call__(self, name: str, value: float = 1, **attributes: str) -> None:
        assert name == "luckrate.verdict_events.dropped" and set(attributes) == {"reason"}
        self.dropped[attributes["reason"]] += value


def graded(scenario: str, output_ok: bool | None = True, agent: str = "support"):
    return grade(trajectory(BY_NAME[scenario], agent=agent, output_ok=output_ok), SPEC)


def publish_all(mode: str, *grades, public_url: str | None = None) -> list:
    memory = InMemoryLogRecordExporter()
    events = VerdictEvents(memory, Counts(), EventOptions(mode, public_url=public_url))
    for g in grades:
        events.publish(g, SPEC.name, TRACE, SPAN)
    events.shutdown(10)
    return [r.log_record for r in memory.get_finished_logs()]


def test_a_record_for_a_tainted_run():
    (rec,) = publish_all("violations", graded("injected"))
    assert rec.event_name == EVENT_NAME == "gen_ai.evaluation.result"
    assert (f"{rec.trace_id:032x}", f"{rec.span_id:016x}") == (TRACE.hex(), SPAN.hex())
    attrs = dict(rec.attributes)
    explanation_lines = attrs.pop("gen_ai.evaluation.explanation").splitlines()
    assert attrs == {
        "gen_ai.evaluation.name": "luckrate.path",
        "gen_ai.evaluation.score.label": "bad",
        "luckrate.agent": "support",
        "luckrate.spec": SPEC.name,
        "luckrate.output": "pass",
        "luckrate.lucky": True,
        "luckrate.checks": ("taint",),
    }
    assert len(explanation_lines) == 1 and explanation_lines[0].startswith("taint (hard) step 2 send_email: ")
    assert rec.severity_text == "WARN"
    assert rec.body == "luckrate.path bad: taint"


def test_a_record_links_its_run_page_where_a_public_url_is_set():
    (rec,) = publish_all("violations", graded("injected"), public_url="https://luckrate.example/")
    assert rec.attributes["luckrate.run.url"] == f"https://luckrate.example/runs/{TRACE.hex()}"
    (plain,) = publish_all("violations", graded("injected"))
    assert "luckrate.run.url" not in plain.attributes


@pytest.mark.parametrize(
    "mode, scenarios, labels",
    [
        ("violations", ("clean", "injected", "forbidden", "user_supplied"), ["bad", "bad"]),
        ("all", ("clean", "injected", "forbidden", "user_supplied"), ["ok", "bad", "bad", "ok"]),
    ],
)
def test_mode_picks_the_runs(mode, scenarios, labels):
    recs = publish_all(mode, *(graded(s) for s in scenarios))
    assert [r.attributes["gen_ai.evaluation.score.label"] for r in recs] == labels
    for r in recs:
        if r.attributes["gen_ai.evaluation.score.label"] == "ok":
            assert "gen_ai.evaluation.explanation" not in r.attributes and r.attributes["luckrate.checks"] == ()


def test_values_from_span_data_are_cut():
    long_agent = "a" * 5000
    (rec,) = publish_all("violations", graded("injected", agent=long_agent))
    assert rec.attributes["luckrate.agent"] == "a" * 512 + "…"


def test_explanation_is_bounded():
    from dataclasses import replace

    g = graded("injected")
    many = replace(g, violations=g.violations * (MAX_LINES + 7))
    lines = explanation(many).splitlines()
    assert len(lines) == MAX_LINES + 1 and lines[-1] == "… and 7 more"


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be one of violations, all"):
        VerdictEvents(InMemoryLogRecordExporter(), Counts(), EventOptions(mode="some"))


@pytest.fixture
def hung_endpoint():
    """A loopback listener that accepts and never answers (a hung collector)."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as srv:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1/logs"


def test_a_hung_endpoint_costs_counted_records_not_waits(hung_endpoint):
    counts = Counts()
    events = VerdictEvents(
        otlp_exporter(hung_endpoint, timeout=30), counts, EventOptions(max_queue=4, batch_size=2, schedule_delay=0.05)
    )
    for _ in range(10):  # returns at once: the gate admits 4 (queued or stuck in export) and refuses 6
        events.publish(graded("injected"), SPEC.name, TRACE, SPAN)
    assert counts.dropped == {"queue_full": 6}
    events.shutdown(0.5)  # the exporter is still stuck: what it holds is counted, not waited for
    assert counts.dropped == {"queue_full": 6, "shutdown": 4}
    events.publish(graded("injected"), SPEC.name, TRACE, SPAN)  # after shutdown: ignored, nothing counted
    events.shutdown(0.5)
    assert sum(counts.dropped.values()) == 10


def test_lifecycle_shutdown_without_publish():
    exporter, counts = InMemoryLogRecordExporter(), Counts()
    events = VerdictEvents(exporter, counts)
    events.shutdown(5)
    events.shutdown(5)  # twice is safe
    assert exporter.get_finished_logs() == () and not counts.dropped  # nothing sent, nothing counted lost


def test_missing_exporter_package_stops_the_service_at_start(tmp_path):
    # The exporter is in the optional `otlp` extra: without it, --otlp-logs must refuse to start and say
    # what to install. The package is made unimportable in a child interpreter (it is installed here).
    import subprocess
    import sys

    from tests.service.harness import SPEC

    block = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('opentelemetry.exporter.otlp.proto.http'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from luckrate.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            block,
            "serve",
            "--spec",
            str(SPEC),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "off",
            "--prometheus",
            "off",
            "--viewer",
            "127.0.0.1:0",
            "--otlp-logs",
            "http://127.0.0.1:1/v1/logs",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert (
        "otlp_logs: needs the package opentelemetry-exporter-otlp-proto-http (pip install 'luckrate[otlp]')"
        in done.stderr
    )


def test_bad_verdict_events_value_is_refused():
    from luckrate.service.config import InvalidConfig, build_config

    with pytest.raises(InvalidConfig, match="verdict_events: expected one of violations, all, got 'some'"):
        build_config({"verdict_events": "some"}, "test")


def test_otlp_logs_must_be_an_http_url():
    from dataclasses import replace

    from luckrate.service.config import InvalidConfig, ServiceConfig, finalize
    from tests.service.harness import SPEC

    with pytest.raises(
        InvalidConfig,
        match="otlp_logs: expected an http\\(s\\) URL such as http://collector:4318, got 'collector:4318'",
    ):
        finalize(replace(ServiceConfig(spec=str(SPEC)), otlp_logs="collector:4318"), "test")

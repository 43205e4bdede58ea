"""The grading worker: spec routing, ungraded reasons, a failing trace does not stop it, the verdict log."""

from __future__ import annotations

import argparse
import json
import logging

import pytest

from luckrate.adapters.otlp import OutputRule, records_from_request, trajectory_from_spans
from luckrate.core.spec_loader import load_specs
from luckrate.service.grade.completed import CompletedTrace
from luckrate.service.export.prometheus import PrometheusReader
from luckrate.service.export.telemetry import Labels, Telemetry
from luckrate.service.grade.verdict_log import MAX_ECHO, VerdictLog
from luckrate.service.grade.worker import Grading, Outlets, Worker
from tests.service.harness import SPEC, by_trace, parse_metrics, record_runs, request_of, runs, total

SPECS = load_specs(SPEC)


@pytest.fixture(scope="module")
def traces() -> list[CompletedTrace]:
    """clean, tainted, forbidden as completed traces of real span records."""
    out = []
    for spans in by_trace(record_runs(runs(["clean", "tainted", "forbidden"]))):
        records, _ = records_from_request(request_of(spans))
        out.append(CompletedTrace(records[0].trace_id, tuple(records), "root_ended", 0.0))
    return out


def rig(specs=SPECS, adapt=None, verdict_log=None):
    reader = PrometheusReader()
    telemetry = Telemetry([reader], Labels(specs))
    released = []

    class Ledger:
        def release(self, spans, records=0):
            released.append(spans)

        def settle(self, trace_id):
            pass

    worker = Worker(
        Grading(specs, adapt or (lambda spans: trajectory_from_spans(spans, OutputRule()))),
        telemetry,
        Outlets(Ledger(), verdicts=verdict_log),
        clock=lambda: 2.5,
    )
    return worker, lambda: parse_metrics(reader.render()), released


def test_lifecycle_start_consume_shutdown(traces, tmp_path):
    log = tmp_path / "v.jsonl"
    worker, scrape, released = rig(verdict_log=VerdictLog(log))
    worker.start()
    for t in traces:
        worker.submit(t)
    assert worker.stop(timeout=30)
    s = scrape()
    assert total(s, "luckrate_runs_total") == 3
    assert total(s, "luckrate_runs_total", path="bad") == 2
    assert total(s, "luckrate_verdict_delay_seconds_sum") == 3 * 2.5
    assert sorted(released) == sorted(len(t.spans) for t in traces)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(v["check"] for line in lines for v in line["violations"]) == ["forbidden", "taint"]
    assert {line["trace_id"] for line in lines} <= {t.trace_id.hex() for t in traces}


def test_shutdown_without_start(traces):
    worker, scrape, _ = rig()
    worker.submit(traces[0])
    assert worker.stop(timeout=5)
    assert total(scrape(), "luckrate_runs_total") == 1


def test_an_exception_is_counted_logged_with_the_trace_id_and_the_worker_goes_on(traces, caplog):
    # A stand-in adapter that raises on one trace: no real input makes the real adapter crash on purpose.
    doomed = traces[1].trace_id

    def adapt(spans):
        if spans[0].trace_id == doomed:
            raise RuntimeError("boom")
        return trajectory_from_spans(spans, OutputRule())

    worker, scrape, released = rig(adapt=adapt)
    worker.start()
    with caplog.at_level(logging.ERROR, logger="luckrate.service.grade.worker"):
        for t in traces:
            worker.submit(t)
        assert worker.stop(timeout=30)
    s = scrape()
    assert (total(s, "luckrate_grade_errors_total"), total(s, "luckrate_runs_total")) == (1, 2)
    assert doomed.hex() in caplog.text
    assert len(released) == 3  # the failed trace's spans are released too


def test_no_spec_for_the_agent_is_ungraded(traces):
    named = {"billing-agent": SPECS["*"]}  # no "*" fallback; the runs' agent is support-agent
    worker, scrape, released = rig(specs=named)
    for t in traces:
        worker.handle(t)
    s = scrape()
    assert total(s, "luckrate_traces_ungraded_total", reason="no_spec") == 3
    assert total(s, "luckrate_runs_total") == 0


def test_verdict_log_bounds_echoed_values(tmp_path):
    from luckrate.core.grade import RunGrade
    from luckrate.core.violation import Severity, Violation

    g = RunGrade(
        "ab" * 16, "c", "x" * 10_000, True, (Violation("taint", Severity.HARD, 2, "send_email", "y" * 10_000),)
    )
    log = VerdictLog(tmp_path / "v.jsonl")
    log.write(g, "spec")
    log.close()
    line = json.loads((tmp_path / "v.jsonl").read_text())
    assert len(line["agent"]) == MAX_ECHO + 1 and len(line["violations"][0]["detail"]) == MAX_ECHO + 1
    assert (line["output"], line["spec"]) == ("pass", "spec")


@pytest.mark.parametrize(
    "every_run, logged", [(False, ["forbidden", "tainted"]), (True, ["clean", "forbidden", "tainted"])]
)
def test_verdict_log_all_writes_clean_runs_too(traces, tmp_path, every_run, logged):
    # A clean trace left no line: nobody could confirm it had been graded.
    log = tmp_path / "v.jsonl"
    worker, _, _ = rig(verdict_log=VerdictLog(log, every_run=every_run))
    for t in traces:
        worker.handle(t)
    worker.stop(timeout=5)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    kinds = [
        "clean" if not line["violations"] else "tainted" if line["violations"][0]["check"] == "taint" else "forbidden"
        for line in lines
    ]
    assert sorted(kinds) == logged
    assert {line["trace_id"] for line in lines} <= {t.trace_id.hex() for t in traces}


@pytest.mark.e2e  # the whole service: receivers on loopback ports, grading processes
@pytest.mark.parametrize("workers", [1, 2])
def test_verdict_log_all_reaches_every_grading_process(tmp_path, workers):
    """The flag is read where grading happens: in the receiving process, or in each grading process."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    from luckrate.service.app import add_arguments, build, config_from_args
    from tests.service.harness import wait_until

    log = tmp_path / "v.jsonl"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [
            "--spec",
            str(SPEC),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "off",
            "--prometheus",
            "127.0.0.1:0",
            "--viewer",
            "127.0.0.1:0",
            "--root-grace",
            "0.05",
            "--workers",
            str(workers),
            "--verdict-log",
            str(log),
            "--verdict-log-all",
        ]
    )
    svc = build(config_from_args(args), SPECS)
    svc.start()
    try:
        spans = record_runs(runs(["clean", "clean", "forbidden"]))
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{svc.receivers[0].port}", insecure=True).export(spans)
        wait_until(
            lambda: total(parse_metrics(svc.metrics.reader.render()), "luckrate_runs_total") == 3,
            "the three runs to be graded",
        )
    finally:
        assert svc.stop(20)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(len(line["violations"]) for line in lines) == [0, 0, 1]


def test_a_run_with_nothing_observable_is_counted_not_gradable_and_logged(tmp_path):
    # A real capture: the OpenAI client instrumentation with content capture off records the chat span only.
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from luckrate.core.grade import NOTHING_OBSERVABLE
    from tests.builders import CHAT_ONLY_CAPTURE

    request = ExportTraceServiceRequest.FromString(CHAT_ONLY_CAPTURE.read_bytes())
    records, _ = records_from_request(request)
    log = tmp_path / "v.jsonl"
    worker, scrape, _ = rig(verdict_log=VerdictLog(log))
    worker.handle(CompletedTrace(records[0].trace_id, tuple(records), "root_ended", 0.0))
    worker.stop(timeout=5)
    s = scrape()
    assert total(s, "luckrate_traces_ungraded_total", reason="not_gradable") == 1
    assert total(s, "luckrate_runs_total") == 0  # so out of the Luck Rate the dashboard divides
    assert total(s, "luckrate_violations_total") == 0
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["not_gradable"] == NOTHING_OBSERVABLE and line["violations"] == []
    assert line["trace_id"] == records[0].trace_id.hex()

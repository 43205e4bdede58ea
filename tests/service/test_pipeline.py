"""The grading pipeline, wired once from config, specs and a recorder: driven inline with a Tally as a grading
process drives it, and on two threads with Telemetry as the receiving process runs it. Real demo runs, real
OTLP requests, the real adapter and grader; the ledgers are the real ones of each process model."""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate import demo
from luckrate.adapters.otlp import records_from_request, request_from_protobuf
from luckrate.service.assemble.assembler import SpanBudget
from luckrate.service.export.prometheus import PrometheusReader
from luckrate.service.export.run_ring import RunRing
from luckrate.service.export.telemetry import Labels, Telemetry
from luckrate.service.grade.tally import Tally
from luckrate.service.grade.verdict_log import HeldLines, HeldVerdicts
from luckrate.service.grade.worker import Outlets
from luckrate.service.process.in_process import BudgetLedger, InProcess
from luckrate.service.process.pipeline import GradingPipeline, Sinks
from tests.builders import config
from tests.service.harness import SPECS, parse_metrics, record_runs, request_of, total

KINDS = ["clean", "tainted", "forbidden"]
CAPTURES = Path(__file__).resolve().parents[1] / "testdata" / "langchainjs-traceloop"


@pytest.fixture(scope="module")
def records() -> list:
    spans = record_runs([demo.make_run(kind, n, "support-agent") for n, kind in enumerate(KINDS)])
    return records_from_request(request_of(spans))[0]


def test_inline_it_grades_what_a_batch_completes_and_its_tally_carries_counts_and_ledger(records):
    cfg = config()
    tally, lines = Tally(marks=True), HeldLines()
    pipeline = GradingPipeline(cfg, SPECS, tally, Outlets(tally, verdicts=lines))
    pipeline.add(records)
    assert pipeline.active == 3 and not tally.runs
    pipeline.drain()
    report = tally.cut(lines.take())
    runs = {dict(pairs)["path"]: n for (name, pairs), n in report.counts.items() if name == "luckrate.runs"}
    assert runs == {"ok": 1, "bad": 2}
    assert report.settled == len(records) and len(report.traces) == 3  # every span's room, every trace's mark
    assert len(report.lines) == 2  # the two runs with violations
    assert pipeline.active == 0


def test_inline_without_the_write_ahead_log_keeps_no_marks(records):
    tally = Tally()
    pipeline = GradingPipeline(config(), SPECS, tally, Outlets(tally))
    pipeline.add(records)
    pipeline.drain()
    report = tally.cut([])
    assert report.settled == len(records) and report.traces == []


def test_in_process_it_counts_on_telemetry_and_gives_the_room_back(records):
    reader = PrometheusReader()
    telemetry = Telemetry([reader], Labels(SPECS))
    budget = SpanBudget(1000)
    grading = InProcess.build(config(), SPECS, telemetry, budget, Sinks())
    assert budget.try_acquire(len(records))
    grading.start()
    grading.handover().submit(records)
    assert grading.stop(30)
    s = parse_metrics(reader.render())
    assert total(s, "luckrate_runs_total") == 3 and total(s, "luckrate_runs_total", path="bad") == 2
    assert budget.used == 0


def test_the_receiving_process_ledger_holds_marks_for_the_flush():
    # With the write-ahead log, a trace's mark waits with its verdict line: both are written at the flush.
    budget, marked = SpanBudget(10), []
    held = HeldVerdicts(None, marked.extend)
    ledger = BudgetLedger(budget, held)
    assert budget.try_acquire(5)
    ledger.release(3, 2)
    ledger.settle(b"t" * 16)
    assert budget.used == 0 and marked == []
    held.flush()
    assert marked == [b"t" * 16]


def test_a_held_run_shows_the_tools_its_grade_names():
    # Traceloop's LangChain.js spans name each tool by its class with content off: the grade reads
    # DeleteAccountTool as the spec's delete_account, and the run the viewer holds must say the same.
    body = (CAPTURES / "forbidden.classtools.nocontent.langchainjs-traceloop.otlp").read_bytes()
    tally, ring = Tally(), RunRing(10)
    pipeline = GradingPipeline(config(), SPECS, tally, Outlets(tally, hold=ring.add))
    pipeline.add(records_from_request(request_from_protobuf(body))[0])
    pipeline.drain()
    (held,) = ring.newest()
    assert [s.tool for s in held.traj.steps] == ["lookup_order", "delete_account"]
    assert held.traj.tool_classes == ()
    assert [(v.check, v.tool) for v in held.grade.violations] == [("forbidden", "delete_account")]

"""End to end: `luckrate serve` as a subprocess, the openai-v2 captures of every content mode sent as a
Collector with a traces and a logs pipeline sends them (logs first, each pipeline on its own protocol), on
one process and on grading processes (``--workers 2``: records route to the process owning their trace).
Verdicts read back from /metrics; the logs counters' accounting checked once everything is graded."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub

from tests.scenarios import BY_NAME
from tests.service.harness import Server, identity, post, total

DATA = Path(__file__).resolve().parents[1] / "testdata" / "openai-v2"
NAMES = ("clean", "forbidden", "injected", "user_supplied")
MODES = (
    "legacy",
    "legacy.nocontent",
    "latest.span_only",
    "latest.event_only",
    "latest.span_and_event",
    "latest.nocontent",
)
CONTENT = ("legacy", "latest.span_only", "latest.event_only", "latest.span_and_event")
"""Modes whose captures hold arguments and results (provenance can be traced)."""
STEPS = (*CONTENT, "legacy.nocontent")
"""Modes whose captures name the tools called (latest.nocontent names none, on spans or in records)."""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_content_mode_through_serve_on_two_pipelines(workers):
    records = 0
    with Server("--workers", workers, "--root-grace", "0.3") as server:
        with grpc.insecure_channel(server.grpc) as channel:
            logs_pipeline = LogsServiceStub(channel)
            for mode in MODES:
                for name in NAMES:
                    stem = DATA / f"{name}.{mode}.openai-v2"
                    logs = ExportLogsServiceRequest.FromString(Path(f"{stem}.logs.otlp").read_bytes())
                    records += sum(len(sl.log_records) for rl in logs.resource_logs for sl in rl.scope_logs)
                    if logs.resource_logs:
                        logs_pipeline.Export(logs, timeout=10)
                    traces = Path(f"{stem}.traces.otlp").read_bytes()
                    assert post(server.http + "/v1/traces", traces, "application/x-protobuf")[0] == 200
        # latest.nocontent records no tool call and no content, on spans or in records: not gradable.
        blind = len(NAMES)
        s = server.wait_metric("luckrate_traces_ungraded_total", blind, reason="not_gradable")
        s = server.wait_metric("luckrate_runs_total", len(MODES) * len(NAMES) - blind)
        assert server.terminate() == 0
    assert records and total(s, "luckrate_log_records_accepted_total") == records
    assert total(s, "luckrate_log_records_assembled_total") == records
    assert total(s, "luckrate_log_records_dropped_total") == 0
    identity(s)
    expected: dict = {}
    for mode in STEPS:
        for name in NAMES:
            for check, tool in BY_NAME[name].expected:
                if check != "taint" or mode in CONTENT:
                    expected[(check, tool)] = expected.get((check, tool), 0) + 1
    for (check, tool), n in expected.items():
        assert total(s, "luckrate_violations_total", check=check, tool=tool) == n, (check, tool)

"""End to end: one run spread over several traces, sent to `luckrate serve --runs-by links` by the SDK's real
OTLP exporters, each trace on its own connection (gRPC and HTTP) and out of order, is graded as one run
with the verdicts ``luckrate grade`` gives the same spans as a file; with a cycle of links or a link to a
trace that never arrives the run is still graded, and the missing link counted. Before, the service graded
each trace alone: the delivery trace that ran the forbidden tool named no agent."""

from __future__ import annotations

import json

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from luckrate.adapters.otlp import read_otlp
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from tests.builders import Recorder, linked_run
from tests.service.harness import Server, by_trace, identity, total, wait_until

SPEC = {"tools": ["lookup_order", "delete_account"], "forbidden": ["delete_account"], "required": ["lookup_order"]}


def send_apart(server: Server, rec: Recorder) -> int:
    """Each trace by its own exporter (a connection of its own), alternating gRPC and HTTP, last trace first."""
    traces = by_trace(rec.exporter.get_finished_spans())[::-1]
    for i, spans in enumerate(traces):
        exporter = (
            GrpcSpanExporter(endpoint=server.grpc, insecure=True)
            if i % 2 == 0
            else HttpSpanExporter(endpoint=server.http + "/v1/traces")
        )
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
    return len(traces)


@pytest.mark.parametrize(
    "cycle, missing", [(False, False), (True, False), (False, True)], ids=["links", "a cycle", "a missing trace"]
)
def test_a_run_over_traces_on_different_connections_is_graded_once(tmp_path, cycle, missing):
    rec = Recorder()
    linked_run(rec, cycle=cycle, missing=missing)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    [expected] = read_otlp(rec.file(), "f")  # the file reader's verdicts on the same spans
    want = spec_from_dict(SPEC)
    checks = sorted((v.check, v.tool) for v in grade(expected, want).violations)
    assert ("forbidden", "delete_account") in checks
    with Server(
        "--runs-by", "links", "--run-wait", "0.5", "--root-grace", "0.2", "--workers", "1", spec=spec
    ) as server:
        traces = send_apart(server, rec)
        server.wait_metric("luckrate_runs_completed_total", 2)  # the agent's run and the HTTP trace
        # A run is counted completed when assembled, and graded after: wait for both verdicts to be exported
        # (a scrape between the two missed the run under load).
        server.wait_metric_at_least("luckrate_runs_total", 1)
        s = server.wait_metric_at_least("luckrate_traces_ungraded_total", 1, reason="invalid")
        assert server.terminate() == 0
    assert total(s, "luckrate_traces_completed_total") == traces == 4
    assert total(s, "luckrate_runs_total") == 1  # the HTTP trace holds no agent: not a run
    assert total(s, "luckrate_traces_ungraded_total", reason="invalid") == 1
    assert total(s, "luckrate_runs_total", agent="support_agent", output="unknown", path="bad") == 1
    got = sorted(
        (labels["check"], labels["tool"])
        for (name, items), value in s.items()
        if name == "luckrate_violations_total" and value
        for labels in [dict(items)]
    )
    assert got == checks
    assert total(s, "luckrate_runs_assembly_total", outcome="traces_joined") == 2
    assert total(s, "luckrate_runs_assembly_total", outcome="links_missing") == (1 if missing else 0)
    identity(s)


def test_each_trace_alone_by_default(tmp_path):
    rec = Recorder()
    linked_run(rec)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    with Server("--root-grace", "0.2", spec=spec) as server:
        send_apart(server, rec)
        s = server.wait_metric("luckrate_traces_completed_total", 4)
        s = server.wait_metric("luckrate_runs_total", 2)
        assert server.terminate() == 0
    # The agent's trace alone, and the delivery trace alone, naming no agent.
    assert total(s, "luckrate_runs_total", agent="support_agent") == 1
    assert total(s, "luckrate_runs_assembly_total") == 0


def test_runs_across_traces_refuse_several_grading_processes(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    with pytest.raises(AssertionError, match="exited: 2") as e:
        Server("--runs-by", "links", "--workers", "2", spec=spec)
    assert "workers: runs_by = 'links' grades in one process" in str(e.value)


def test_the_turns_of_a_conversation_are_one_run_when_asked(tmp_path):
    from tests.builders import TURNS, conversation

    rec = Recorder()
    conversation(rec, "c1", TURNS)  # the cancel is confirmed in the second turn's trace
    conversation(rec, "c2", [("cancel R-1", None, ["get", "cancel"])])  # unconfirmed, one trace
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tools": ["get", "cancel"], "confirm": ["cancel"]}))
    flags = ("--run-wait", "0.5", "--root-grace", "0.2", "--workers", "1")
    with Server("--runs-by", "conversation", *flags, spec=spec) as server:
        send_apart(server, rec)
        s = server.wait_metric("luckrate_runs_total", 2)
        assert server.terminate() == 0
    assert total(s, "luckrate_violations_total", check="confirm") == 1  # c2's only
    assert total(s, "luckrate_runs_assembly_total", outcome="traces_joined") == 1
    with Server("--runs-by", "links", *flags, spec=spec) as server:  # each turn alone: "yes" answers nothing
        send_apart(server, rec)
        s = server.wait_metric("luckrate_runs_total", 3)
        assert server.terminate() == 0
    assert total(s, "luckrate_violations_total", check="confirm") == 2


START_LINES = [
    # (flags, the start line's last word, the note logged beside it)
    ((), "runs-by=trace", "runs-by=trace: each trace is graded as one run, root_grace after its root span"),
    (("--runs-by", "links"), "runs-by=links", "runs-by=links: traces tied by span links are one run"),
    (("--runs-by", "conversation"), "runs-by=conversation", "sharing gen_ai.conversation.id are one run"),
]


@pytest.mark.parametrize("flags, last, note", START_LINES, ids=["default", "links", "conversation"])
def test_the_start_line_says_which_runs_by_is_in_force(flags, last, note):
    """`luckrate grade` groups traces by links by default and `luckrate serve` grades each trace alone; the
    start line said nothing of it, so the two disagreed on a multi-trace run with no hint why."""
    with Server(*flags) as server:
        words = server.start_line.split()
        assert words[:3] == ["luckrate", "serve:", "listening"] and words[-1] == last
        assert set(server.ports) == {"grpc", "http", "prometheus", "viewer"}  # the address pairs still read as before
        wait_until(lambda: note in "".join(server.stderr), "the runs-by note on stderr")

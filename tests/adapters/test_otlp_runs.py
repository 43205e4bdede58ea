"""One run over several traces of a file (adapters/otlp/runs.py). Each trace was graded alone or refused:
AutoGen's runtime tracing ties a run's traces only by span links, a hand-off may start a trace per agent,
and a chat front end may start one per user turn of a conversation. Traces here are made by the real
OpenTelemetry SDK (new root contexts, ``Link``s, the OTLP encoder) and read back as files are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters.otlp import read_otlp
from luckrate.adapters.otlp import runs as grouping
from luckrate.cli import main
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs, spec_from_dict
from tests.builders import TURNS, Recorder, conversation, linked_run


def test_traces_tied_by_links_are_one_run():
    rec = Recorder()
    linked_run(rec)
    runs = read_otlp(rec.file(), "f")
    [traj] = runs
    assert [(s.tool, s.agent) for s in traj.steps] == [
        ("lookup_order", "support_agent"),
        ("delete_account", "support_agent"),
    ]
    assert runs.assembly == {"traces_joined": 2}
    assert len(runs.skipped) == 1  # the HTTP trace


def test_each_trace_alone_when_asked():
    rec = Recorder()
    linked_run(rec)
    runs = read_otlp(rec.file(), "f", runs_by="trace")
    assert [[s.tool for s in t.steps] for t in runs] == [["lookup_order"], ["delete_account"]]
    assert runs[1].steps[0].agent is None  # the delivery trace alone names no agent
    assert len(runs.skipped) == 2 and runs.assembly == {}


@pytest.mark.parametrize(
    "cycle, missing, counts",
    [
        (True, False, {"traces_joined": 2}),
        (False, True, {"traces_joined": 2, "links_missing": 1}),
        (True, True, {"traces_joined": 2, "links_missing": 1}),
    ],
    ids=["a cycle of links", "a link to a trace that never arrives", "both"],
)
def test_bad_links_are_counted_never_a_crash(cycle, missing, counts):
    rec = Recorder()
    linked_run(rec, cycle=cycle, missing=missing)
    runs = read_otlp(rec.file(), "f")
    [traj] = runs
    assert [s.tool for s in traj.steps] == ["lookup_order", "delete_account"]
    assert runs.assembly == counts


CONFIRM = spec_from_dict({"tools": ["get", "cancel"], "confirm": ["cancel"]})


def test_a_conversation_over_traces_is_one_run_when_asked():
    rec = Recorder()
    conversation(rec, "c1", TURNS)
    conversation(rec, "c2", [("hello", "Hi!", [])])
    by_trace = read_otlp(rec.file(), "f")  # the default follows links only: three runs
    assert len(by_trace) == 3
    # Alone, the second turn's "yes" answers nothing, and R-1 comes from nowhere.
    assert [v.check for v in grade(by_trace[1], CONFIRM).violations] == ["confirm", "ungrounded"]
    runs = read_otlp(rec.file(), "f", runs_by="conversation")
    assert [[s.tool for s in t.steps] for t in runs] == [["get", "cancel"], []]
    assert [(m.role, m.text) for m in runs[0].messages] == [
        ("user", "cancel R-1"),
        ("agent", "R-1 is refundable. Cancel it?"),
        ("user", "yes"),
        ("agent", "Done."),
    ]
    assert grade(runs[0], CONFIRM).violations == ()
    assert runs.assembly == {"traces_joined": 1}


def test_a_conversation_that_never_ends_is_bounded(monkeypatch):
    monkeypatch.setattr(grouping, "MAX_TRACES_PER_RUN", 3)
    rec = Recorder()
    conversation(rec, "c1", [(f"turn {i}", "ok", ["get"]) for i in range(7)])
    runs = read_otlp(rec.file(), "f", runs_by="conversation")
    assert [len(t.steps) for t in runs] == [3, 3, 1]
    assert runs.assembly == {"traces_joined": 6, "runs_split": 2}


def test_cli_counts_the_assembly(tmp_path, capsys):
    rec = Recorder()
    linked_run(rec, missing=True)
    path = tmp_path / "day.otlp"
    path.write_bytes(rec.file())
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tools": ["lookup_order", "delete_account"]}))
    assert main(["grade", "--spec", str(spec), "--format", "otlp", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["runs"]) == 1
    assert report["assembly"] == {"traces_joined": 2, "links_missing": 1}
    assert main(["grade", "--spec", str(spec), "--format", "otlp", "--runs-by", "trace", str(path)]) == 0
    assert "Runs across traces" not in capsys.readouterr().out
    assert main(["grade", "--spec", str(spec), "--runs-by", "trace", str(path)]) == 0  # told OTLP by content
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r", "steps": [{"tool": "lookup_order"}]}))
    assert main(["grade", "--spec", str(spec), "--runs-by", "trace", str(runs)]) == 2
    assert "--runs-by applies to OTLP input" in capsys.readouterr().err


def test_suggest_reads_the_runs_grade_reads():
    # luckrate suggest read each trace alone (its own copy of the reading loop): the delivery trace that
    # ran delete_account named no agent, and the agent's run missed a step.
    from luckrate.adapters.otlp.readers import read_otlp_runs

    rec = Recorder()
    linked_run(rec)
    runs, errors = read_otlp_runs(rec.file(), "f", "otlp")
    assert [[(s.tool, s.agent) for s in t.steps] for t in runs] == [
        [("lookup_order", "support_agent"), ("delete_account", "support_agent")]
    ]
    assert len(errors) == 1 and "f" in str(errors[0])  # the HTTP trace, named with its file


AUTOGEN = Path(__file__).resolve().parents[1] / "testdata" / "autogen"
AUTOGEN_RUNS = ["clean", "forbidden", "injected", "user_supplied", "handoff"]
SCENARIO_SPEC = Path(__file__).resolve().parents[2] / "examples" / "spec.py"


@pytest.mark.parametrize("name", AUTOGEN_RUNS)
def test_autogen_runtime_traces_are_one_run(name):
    # Run as deployed (a team on autogen-core's runtime, no span around it), AutoGen starts a trace per
    # message delivery, tied to its sender's only by a span link, and a one-span create_agent trace per
    # agent, linked to nothing: each trace was graded alone. Read by links, the run is the same as the
    # one-trace capture of the same script, and the create_agent traces are skipped, not runs.
    split = AUTOGEN / f"{name}.split.autogen.otlp"
    runs = read_otlp(split.read_bytes(), str(split))
    [traj] = runs
    [one] = read_otlp((AUTOGEN / f"{name}.autogen.otlp").read_bytes(), name)
    assert [(s.tool, s.call_id, s.agent) for s in traj.steps] == [(s.tool, s.call_id, s.agent) for s in one.steps]
    assert traj.agent == one.agent
    spec = spec_for(load_specs(SCENARIO_SPEC), None)
    assert grade(traj, spec).violations == grade(one, spec).violations
    agents = 2 if name == "handoff" else 1
    assert len(runs.skipped) == agents  # the create_agent traces
    traces = {s.trace_id for s in _spans(split)}
    assert runs.assembly == {"traces_joined": len(traces) - agents - 1}
    alone = read_otlp(split.read_bytes(), str(split), runs_by="trace")
    # Alone, each agent's work is a run of its own (a Swarm hand-off: two) and the message deliveries
    # around it are skipped traces.
    assert [len(t.steps) for t in alone] == ([1, 2] if name == "handoff" else [len(traj.steps)])
    assert len(alone) + len(alone.skipped) == len(traces)


def test_an_export_of_several_autogen_runs_keeps_them_apart():
    # A day's export holds many runs' traces, interleaved: links tie each run's traces, never two runs.
    req = ExportTraceServiceRequest()
    for name in AUTOGEN_RUNS:
        req.resource_spans.extend(_request(AUTOGEN / f"{name}.split.autogen.otlp").resource_spans)
    runs = read_otlp(req.SerializeToString(), "day.otlp")
    assert [[s.tool for s in t.steps] for t in runs] == [
        [s.tool for s in read_otlp((AUTOGEN / f"{n}.autogen.otlp").read_bytes(), n)[0].steps] for n in AUTOGEN_RUNS
    ]
    assert len(runs.skipped) == 6


def _request(path: Path) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    req.ParseFromString(path.read_bytes())
    return req


def _spans(path: Path) -> list:
    return [s for rs in _request(path).resource_spans for ss in rs.scope_spans for s in ss.spans]

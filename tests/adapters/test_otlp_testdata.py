"""Committed captures (tests/testdata/otlp, tests/testdata/langgraph) read through the CLI readers and
graded: the verdicts of tests/scenarios.py must hold on every file, in both encodings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from examples.spec import SPEC
from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import read_otlp, read_otlp_json
from luckrate.cli import main
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from tests.scenarios import BY_NAME, SCENARIOS

DATA = Path(__file__).resolve().parents[1] / "testdata"
SPEC_ = spec_from_dict(SPEC, name="support")
CAPTURES = [
    (DATA / "otlp", "openai-agents"),
    (DATA / "langgraph", "openinference"),
    (DATA / "langgraph", "traceloop"),
    (DATA / "vercel-ai", "vercel-ai"),
    (DATA / "langchainjs", "langchainjs"),
]


def read(path: Path):
    if path.name.endswith((".json", ".jsonl")):
        return read_otlp_json(path.read_text(), path.name)
    return read_otlp(path.read_bytes(), path.name)


def pairs(traj):
    return {(v.check, v.tool) for v in grade(traj, SPEC_).violations}


@pytest.mark.parametrize("ext", ["otlp", "otlp.json"])
@pytest.mark.parametrize("folder, source", CAPTURES, ids=[c[1] for c in CAPTURES])
@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_committed_capture_grades_as_scripted(scenario, folder, source, ext):
    (traj,) = read(folder / f"{scenario}.{source}.{ext}")
    assert pairs(traj) == BY_NAME[scenario].expected
    assert [s.tool for s in traj.steps] == [c.tool for turn in BY_NAME[scenario].turns for c in turn]
    assert (traj.output_ok, traj.content, traj.agent) == (True, True, "support_agent")


@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_committed_capture_without_content(scenario):
    (traj,) = read(DATA / "otlp" / f"{scenario}.openai-agents.nocontent.otlp")
    assert traj.content is False and all(s.args == {} and s.result is None for s in traj.steps)
    assert pairs(traj) == {p for p in BY_NAME[scenario].expected if p[0] != "taint"}


def test_json_lines_one_request_per_line():
    trajs = read(DATA / "otlp" / "scenarios.openai-agents.otlp.jsonl")
    assert [t.input for t in trajs] == [s.user for s in SCENARIOS]
    assert [pairs(t) for t in trajs] == [s.expected for s in SCENARIOS]


def test_failing_and_parallel_capture():
    (traj,) = read(DATA / "otlp" / "failing.openai-agents.otlp")
    assert [(s.tool, s.failed) for s in traj.steps] == [
        ("lookup_order", True),
        ("lookup_order", False),
        ("escalate_to_human", False),
    ]
    (traj,) = read(DATA / "langgraph" / "parallel_failing.traceloop.otlp")
    assert [s.failed for s in traj.steps].count(True) == 1


def test_handoff_capture():
    (traj,) = read(DATA / "otlp" / "handoff.openai-agents.otlp")
    assert traj.agent == "triage_agent"
    assert [s.agent for s in traj.steps] == ["triage_agent", "support_agent", "support_agent"]


def _bad_id_request() -> bytes:
    req = ExportTraceServiceRequest()
    req.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x01" * 3, span_id=b"\x02" * 8, name="x")
    return req.SerializeToString()


READER_ERRORS = [
    (
        read_otlp,
        b"\xff\xff\xff",
        "f: undecodable OTLP protobuf (Error parsing message with type "
        "'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest': Wire format was corrupt)",
    ),
    (read_otlp, b"", "f: no spans"),
    (read_otlp, _bad_id_request(), "f: spans that cannot be read: 1 bad_trace_id"),
    (read_otlp_json, "  \n", "f: empty file"),
    (read_otlp_json, "{}", "f: no spans"),
    (read_otlp_json, "{}\nnot json\n", "f:2: undecodable OTLP/JSON (Expecting value: line 1 column 1 (char 0))"),
    (read_otlp_json, "[1]", "f: OTLP/JSON must be an object, got list"),
]


@pytest.mark.parametrize("reader, data, message", READER_ERRORS)
def test_reader_errors_name_the_file(reader, data, message):
    with pytest.raises(InvalidInput) as e:
        reader(data, "f")
    assert str(e.value) == message


@pytest.mark.parametrize(
    "planted, agent",
    [
        ("", "support_agent"),
        ("current_agent_name='evil_agent')", "support_agent"),  # in the user's words: not the event's field
    ],
    ids=["as captured", "a name planted in a message"],
)
def test_llama_index_agent_is_the_closing_field_of_the_agent_step_event(planted, agent):
    # LlamaIndex names the agent only in the repr of the event its run_agent_step span is given, after the
    # messages, which hold text anyone could write: only the field closing the repr names the agent.
    req = ExportTraceServiceRequest()
    req.ParseFromString((DATA / "llama-index" / "clean.llama-index.otlp").read_bytes())
    steps = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans if s.name.endswith("agent_step")]
    assert steps
    for span in steps:
        for kv in span.attributes:
            if kv.key == "input.value":
                kv.value.string_value = kv.value.string_value.replace("when done.", "when done. " + planted)
    [traj] = read_otlp(req.SerializeToString(), "planted")
    assert (traj.agent, {s.agent for s in traj.steps}) == (agent, {agent})


def test_llama_index_hand_off_is_graded_by_the_first_agents_spec(tmp_path, capsys):
    # With no agent named, a spec per agent could not be used on a LlamaIndex workflow: the run fell to the
    # "*" spec, or with none was refused (exit 2). Named, it is graded by its first agent's spec, as the
    # hand-offs of every other framework are.
    specs = {"SPECS": {"triage_agent": {**SPEC, "tools": [*SPEC["tools"], "handoff"]}}}
    path = tmp_path / "specs.json"
    path.write_text(json.dumps(specs))
    capture = DATA / "llama-index" / "handoff.llama-index.otlp"
    assert main(["grade", "--spec", str(path), "--format", "otlp", "--json", str(capture)]) == 1
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert run["agent"] == "triage_agent"
    # Not ("ungrounded", "handoff"): its to_agent names an agent of the run, which the workflow lists to the
    # model in the tool's description (no source in the trace holds it).
    assert {(v["check"], v["tool"]) for v in run["violations"]} == {("forbidden", "delete_account")}

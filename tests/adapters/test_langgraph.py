"""LangGraph adapter: message lists from a real LangGraph agent (scripted fake chat model) -> trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from luckrate.adapters import InvalidInput
from luckrate.adapters.langgraph import read_file, read_langgraph, trajectory_from_messages
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.frameworks.langgraph_agent import PARALLEL_FAILING, run_scenario, run_until_interrupt
from tests.scenarios import SCENARIOS, Call, Scenario

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_specs(ROOT / "examples" / "spec.py")
TESTDATA = ROOT / "tests" / "testdata" / "langgraph"


def _calls(scenario: Scenario) -> list[Call]:
    return [c for turn in scenario.turns for c in turn]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_live_run_becomes_the_scripted_steps(scenario):
    traj = trajectory_from_messages(run_scenario(scenario), id=scenario.name, output_ok=True)
    calls = _calls(scenario)
    assert [(s.tool, s.args, s.result, s.error) for s in traj.steps] == [
        (c.tool, c.args, c.result, c.error) for c in calls
    ]
    assert [s.index for s in traj.steps] == list(range(len(calls)))
    assert all(s.call_id and s.t == 0.0 and s.duration == 0.0 for s in traj.steps)
    assert traj.input == scenario.user and traj.output_ok is True and traj.content


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_dict_form_equals_object_form(scenario):
    messages = run_scenario(scenario)
    as_dicts = json.loads(json.dumps(messages_to_dict(messages)))  # through JSON, as a file would
    assert trajectory_from_messages(as_dicts, id="r") == trajectory_from_messages(messages, id="r")
    flat = [m.model_dump() for m in messages]  # message.model_dump() form
    assert trajectory_from_messages(flat, id="r") == trajectory_from_messages(messages, id="r")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_same_verdict_as_the_scenario_expects(scenario):
    traj = trajectory_from_messages(run_scenario(scenario), id=scenario.name, output_ok=True)
    verdict = grade(traj, spec_for(SPECS, traj.agent))
    assert {(v.check, v.tool) for v in verdict.violations} == scenario.expected
    assert verdict.lucky is bool(scenario.expected)


@pytest.mark.parametrize("form", ["objects", "dicts"])
def test_parallel_calls_and_an_error_tool_message(form):
    messages = run_scenario(PARALLEL_FAILING)
    if form == "dicts":
        messages = messages_to_dict(messages)
    traj = trajectory_from_messages(messages, id="p")
    assert [(s.index, s.tool, s.args, s.result, s.error, s.call_id) for s in traj.steps] == [
        (0, "lookup_order", {"order_id": "A"}, "order A", None, "call_0_0"),
        (1, "lookup_order", {"order_id": "B"}, None, "no such order", "call_0_1"),
        (2, "escalate_to_human", {"reason": "B is missing"}, "ticket T-1", None, "call_1_0"),
    ]
    assert [s.failed for s in traj.steps] == [False, True, False]


def test_call_without_result_is_still_a_step():
    # A run paused for human approval before the tools node: the model has asked for send_email,
    # which has not run. That call is the one a reviewer most needs to see.
    scenario = next(s for s in SCENARIOS if s.name == "injected")
    messages = run_until_interrupt(scenario, before_turn=2)
    assert isinstance(messages[-1], AIMessage) and messages[-1].tool_calls
    traj = trajectory_from_messages(messages, id="paused")
    assert [(s.tool, s.result) for s in traj.steps] == [
        ("lookup_order", _calls(scenario)[0].result),
        ("fetch_webpage", _calls(scenario)[1].result),
        ("send_email", None),
    ]
    assert traj.steps[2].args == {"to": "attacker@evil.example", "body": "Order details as requested."}
    assert {(v.check, v.tool) for v in grade(traj, spec_for(SPECS, None)).violations} == {("taint", "send_email")}


def test_results_match_by_call_id_not_position():
    # Results arrive in the other order than the calls were issued (as parallel tools may finish).
    messages = [
        HumanMessage("go"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "lookup_order", "args": {"order_id": "A"}, "id": "a"},
                {"name": "fetch_webpage", "args": {"url": "u"}, "id": "b"},
            ],
        ),
        ToolMessage("page", tool_call_id="b"),
        ToolMessage("order", tool_call_id="a"),
    ]
    traj = trajectory_from_messages(messages, id="r")
    assert [(s.tool, s.result) for s in traj.steps] == [("lookup_order", "order"), ("fetch_webpage", "page")]


def test_invalid_tool_call_is_a_failed_step():
    message = AIMessage(
        "", invalid_tool_calls=[{"name": "delete_account", "args": "{user_id: x", "id": "c1", "error": "bad JSON"}]
    )
    traj = trajectory_from_messages([HumanMessage("hi"), message], id="r")
    (step,) = traj.steps
    assert (step.tool, step.args, step.error, step.call_id) == (
        "delete_account",
        {"input": "{user_id: x"},
        "invalid tool call: bad JSON",
        "c1",
    )


def test_several_human_messages_and_content_blocks():
    messages = [
        HumanMessage([{"type": "text", "text": "Refund "}, {"type": "text", "text": "ORD-1"}]),
        AIMessage("", tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-1"}, "id": "a"}]),
        ToolMessage([{"type": "text", "text": "delivered"}], tool_call_id="a"),
        HumanMessage("and email me"),
    ]
    traj = trajectory_from_messages(messages, id="r")
    assert traj.input == ("Refund ORD-1", "and email me")
    assert traj.steps[0].result == "delivered"


MALFORMED = [
    ("not a list", "{}", "expected a list of messages, got dict"),
    ("no type", [{"data": {"content": "x"}}], "messages[0]: missing 'type' (human, ai, tool, system, ...)"),
    ("data not object", [{"type": "ai", "data": []}], "messages[0].data: expected an object, got list"),
    (
        "tool_calls not list",
        [{"type": "ai", "data": {"tool_calls": "x"}}],
        "messages[0].tool_calls: expected a list, got str",
    ),
    (
        "call without name",
        [{"type": "ai", "data": {"tool_calls": [{"args": {}, "id": "a"}]}}],
        "messages[0].tool_calls[0]: missing 'name' (a non-empty string)",
    ),
    (
        "args not object",
        [
            {"type": "human", "data": {"content": "q"}},
            {"type": "ai", "data": {"tool_calls": [{"name": "t", "args": "x=1", "id": "a"}]}},
        ],
        "messages[1].tool_calls[0].args: expected an object, got str",
    ),
    (
        "id not string",
        [{"type": "ai", "data": {"tool_calls": [{"name": "t", "args": {}, "id": 7}]}}],
        "messages[0].tool_calls[0].id: expected a string or null, got int",
    ),
    (
        "result without id",
        [{"type": "tool", "data": {"content": "x"}}],
        "messages[0]: tool message without 'tool_call_id'",
    ),
    (
        "result for unknown call",
        [{"type": "tool", "data": {"content": "x", "tool_call_id": "zz"}}],
        "messages[0]: result for call id 'zz', which no earlier AI message issued",
    ),
    (
        "second result",
        [
            {"type": "ai", "data": {"tool_calls": [{"name": "t", "args": {}, "id": "a"}]}},
            {"type": "tool", "data": {"content": "x", "tool_call_id": "a"}},
            {"type": "tool", "data": {"content": "y", "tool_call_id": "a"}},
        ],
        "messages[2]: second result for call id 'a'",
    ),
    (
        "content not text",
        [{"type": "human", "data": {"content": 5}}],
        "messages[0].content: expected a string or a list of content blocks, got int",
    ),
]


@pytest.mark.parametrize(("messages", "error"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_messages_name_index_and_field(messages, error):
    with pytest.raises(InvalidInput) as e:
        trajectory_from_messages(json.loads(messages) if isinstance(messages, str) else messages, id="r")
    assert str(e.value) == error


def _envelope(scenario: Scenario, **extra) -> dict:
    return {
        "id": scenario.name,
        "case": scenario.name,
        "output_ok": True,
        "messages": messages_to_dict(run_scenario(scenario)),
        **extra,
    }


def test_file_forms():
    clean, forbidden = SCENARIOS[0], SCENARIOS[1]
    bare = json.dumps(messages_to_dict(run_scenario(clean)))
    (run,) = read_langgraph(bare, "runs/clean.json")
    assert run.id == "runs/clean.json" and run.output_ok is None and len(run.steps) == 3

    (run,) = read_langgraph(json.dumps(_envelope(clean, agent="support")), "x.json")
    assert (run.id, run.case, run.agent, run.output_ok) == ("clean", "clean", "support", True)

    lines = "\n".join(json.dumps(_envelope(s)) for s in (clean, forbidden)) + "\n\n"
    runs = read_file(lines.encode(), "runs.jsonl")
    assert [(r.id, [s.tool for s in r.steps]) for r in runs] == [
        ("clean", ["lookup_order", "issue_refund", "send_email"]),
        ("forbidden", ["lookup_order", "delete_account"]),
    ]
    no_id = {"messages": messages_to_dict(run_scenario(clean))}
    assert [r.id for r in read_langgraph(json.dumps(no_id) + "\n" + json.dumps(no_id), "f")] == ["f:1", "f:2"]


BAD_FILES = [
    ("empty", "  \n", "f.json: empty file"),
    ("scalar", "3", "f.json: expected a list of messages or a run object, got int"),
    ("no messages", '{"id": "r"}', "f.json: run object without 'messages'"),
    ("bad id", '{"id": "", "messages": []}', "f.json: 'id' must be a non-empty string"),
    ("bad output_ok", '{"output_ok": "yes", "messages": []}', "f.json: 'output_ok' must be true, false or null"),
    ("bad case", '{"case": 1, "messages": []}', "f.json: 'case' must be a string or null"),
    ("bad line", '{"messages": []}\n{"messages": [\n', "f.json:2: invalid JSON (Expecting value at column 15)"),
    ("line not object", '{"messages": []}\n[]\n', "f.json:2: expected a run object on each line, got list"),
    (
        "nested error",
        '{"messages": []}\n{"messages": [{"type": "tool", "data": {"content": "x"}}]}',
        "f.json:2: messages[0]: tool message without 'tool_call_id'",
    ),
    (
        "located in one doc",
        '[{"type": "ai", "data": {"tool_calls": [{"id": "a"}]}}]',
        "f.json: messages[0].tool_calls[0]: missing 'name' (a non-empty string)",
    ),
]


@pytest.mark.parametrize(("text", "error"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_files_name_file_and_line(text, error):
    with pytest.raises(InvalidInput) as e:
        read_langgraph(text, "f.json")
    assert str(e.value) == error


def test_not_utf8_is_invalid_input():
    with pytest.raises(InvalidInput, match=r"^f: not UTF-8 text \(byte 0\)$"):
        read_file(b"\xff[]", "f")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_committed_captures_grade_like_the_live_run(scenario):
    # The committed captures (used by the CLI examples) must still say what a live run says.
    path = TESTDATA / f"{scenario.name}.json"
    (run,) = read_file(path.read_bytes(), str(path))
    live = trajectory_from_messages(run_scenario(scenario), id=run.id)
    assert [(s.tool, s.args, s.result, s.error) for s in run.steps] == [
        (s.tool, s.args, s.result, s.error) for s in live.steps
    ]
    assert {(v.check, v.tool) for v in grade(run, spec_for(SPECS, run.agent)).violations} == scenario.expected

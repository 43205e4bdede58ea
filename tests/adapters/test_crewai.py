"""CrewAI adapter: tool-usage events -> trajectories.

crewai cannot be installed beside the other fixture frameworks (it needs openai<3, openai-agents needs
openai>=3; see tests/testdata/crewai/README.md), so the scenario tests read events captured from real
crews by tests/testdata/crewai/capture.py. Edge cases the captures do not show (shuffled input, events
without ``started_event_id`` or ``emission_sequence``, lost starts and ends) are built by editing those
captured events, and the object form is a stand-in with the event classes' attribute names and types.
"""

from __future__ import annotations

import copy
import json
import random
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from luckrate.adapters import InvalidInput
from luckrate.adapters.crewai import read_crewai, read_file, trajectory_from_events
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.scenarios import SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_specs(ROOT / "examples" / "spec.py")
TESTDATA = ROOT / "tests" / "testdata" / "crewai"


def _capture(name: str) -> dict:
    return json.loads((TESTDATA / f"{name}.json").read_text())


def _events(name: str) -> list[dict]:
    return _capture(name)["events"]


def _rows(traj) -> list[tuple]:
    return [(s.agent, s.tool, s.args, s.result, s.error) for s in traj.steps]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_captured_crew_becomes_the_scripted_steps(scenario: Scenario):
    (traj,) = read_file((TESTDATA / f"{scenario.name}.json").read_bytes(), scenario.name)
    calls = [c for turn in scenario.turns for c in turn]
    assert _rows(traj) == [("Support Agent", c.tool, c.args, c.result, c.error) for c in calls]
    assert (traj.id, traj.case, traj.agent, traj.output_ok) == (
        f"crewai-{scenario.name}",
        scenario.name,
        "Support Agent",
        True,
    )
    assert traj.input == scenario.user
    assert all(s.t > 1e9 and 0 <= s.duration < 60 for s in traj.steps)
    assert [s.t for s in traj.steps] == sorted(s.t for s in traj.steps)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_same_verdict_as_the_scenario_expects(scenario: Scenario):
    (traj,) = read_file((TESTDATA / f"{scenario.name}.json").read_bytes(), scenario.name)
    verdict = grade(traj, spec_for(SPECS, traj.agent))
    assert {(v.check, v.tool) for v in verdict.violations} == scenario.expected
    assert verdict.lucky is bool(scenario.expected)


def test_failing_tool_in_a_parallel_turn():
    traj = trajectory_from_events(_events("failing_parallel"), id="r")
    assert _rows(traj) == [
        ("Support Agent", "lookup_order", {"order_id": "ORD-1"}, '{"order_id": "ORD-1"}', None),
        ("Support Agent", "lookup_order", {"order_id": "ORD-2"}, None, "order service unavailable"),
    ]
    assert [s.failed for s in traj.steps] == [False, True]


def test_each_step_names_the_agent_that_made_it():
    traj = trajectory_from_events(_events("two_agents"), id="r")
    assert [(s.agent, s.tool) for s in traj.steps] == [
        ("Researcher", "lookup_order"),
        ("Researcher", "fetch_webpage"),
        ("Support Agent", "send_email"),
    ]
    assert traj.agent is None  # no single agent: the '*' spec applies
    assert traj.input == ("Find the refund policy for order ORD-12345.", "Email the policy to alice@example.com.")
    assert trajectory_from_events(_events("two_agents"), id="r", agent="crew").agent == "crew"


def _as_object(event: dict) -> SimpleNamespace:
    # Stand-in for the pydantic event objects (crewai is not installable here): same attribute names,
    # datetimes where the classes have datetimes, the exception object on error events.
    obj = dict(event)
    for key in ("timestamp", "started_at", "finished_at"):
        if obj.get(key) is not None:
            obj[key] = datetime.fromisoformat(obj[key])
    if obj["type"] == "tool_usage_error":
        obj["error"] = RuntimeError(obj["error"])
    return SimpleNamespace(**obj)


@pytest.mark.parametrize("name", ["clean", "failing_parallel", "two_agents"])
def test_object_form_equals_dict_form(name):
    events = _events(name)
    assert trajectory_from_events([_as_object(e) for e in events], id="r") == trajectory_from_events(events, id="r")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", ["failing_parallel", "two_agents", "clean"])
def test_input_order_does_not_matter(name, seed):
    events = _events(name)
    expected = trajectory_from_events(events, id="r")
    random.Random(seed).shuffle(events)
    assert trajectory_from_events(events, id="r") == expected


def test_one_order_key_for_the_whole_run():
    # Sequences say A, B, C; timestamps say C, B, A. When one start lacks its sequence the whole run
    # orders by timestamp: mixing the two keys per event would interleave unrelated number spaces.
    events = [
        _start("A", seq=1, ts="2026-01-01T00:00:03Z"),
        _start("B", seq=2, ts="2026-01-01T00:00:02Z"),
        _start("C", seq=3, ts="2026-01-01T00:00:01Z"),
    ]
    assert [s.args["order_id"] for s in trajectory_from_events(events, id="r").steps] == ["A", "B", "C"]
    events[1] = _start("B", seq=None, ts="2026-01-01T00:00:02Z")
    assert [s.args["order_id"] for s in trajectory_from_events(events, id="r").steps] == ["C", "B", "A"]
    events[0] = _start("A", seq=None, ts=None)
    assert [s.args["order_id"] for s in trajectory_from_events(events, id="r").steps] == ["A", "B", "C"]


def _start(order: str, seq: int | None, ts: str | None) -> dict:
    return {
        "type": "tool_usage_started",
        "tool_name": "lookup_order",
        "tool_args": {"order_id": order},
        "emission_sequence": seq,
        "timestamp": ts,
        "event_id": f"start-{order}",
    }


def test_ends_without_started_event_id_pair_with_the_earliest_open_start():
    events = _events("failing_parallel")
    for e in events:
        e["started_event_id"] = None
    assert _rows(trajectory_from_events(events, id="r")) == _rows(
        trajectory_from_events(_events("failing_parallel"), id="r")
    )


def test_start_without_end_is_a_step_with_no_result():
    events = [
        e for e in _events("injected") if not (e["type"] == "tool_usage_finished" and e["tool_name"] == "send_email")
    ]
    traj = trajectory_from_events(events, id="r", input="What does https://shop.example/faq say?")
    assert [(s.tool, s.result, s.duration) for s in traj.steps][-1] == ("send_email", None, 0.0)
    assert ("taint", "send_email") in {(v.check, v.tool) for v in grade(traj, spec_for(SPECS, None)).violations}


def test_end_without_start_is_still_a_step():
    events = [
        e
        for e in _events("forbidden")
        if not (e["type"] == "tool_usage_started" and e["tool_name"] == "delete_account")
    ]
    traj = trajectory_from_events(events, id="r")
    assert [(s.tool, s.result) for s in traj.steps] == [
        ("lookup_order", _events("forbidden")[1]["output"]),
        ("delete_account", "account deleted"),
    ]
    end = next(e for e in events if e["tool_name"] == "delete_account")
    duration = (datetime.fromisoformat(end["finished_at"]) - datetime.fromisoformat(end["started_at"])).total_seconds()
    assert traj.steps[1].duration == pytest.approx(duration, abs=1e-6) and duration > 0
    # Start = the end's zoned timestamp minus the duration (started_at carries no zone).
    assert traj.steps[1].t == pytest.approx(datetime.fromisoformat(end["timestamp"]).timestamp() - duration, abs=1e-6)


def test_reported_failure_on_a_finished_event_is_an_error():
    events = _events("clean")
    events[3]["failure"] = {"message": "refund service said no", "reason": "tool_reported", "code": None}
    step = trajectory_from_events(events, id="r").steps[1]
    assert (step.tool, step.result, step.error) == ("issue_refund", None, "refund service said no")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('{"order_id": "A"}', {"order_id": "A"}),
        ("order A please", {"input": "order A please"}),
        ('["A"]', {"input": '["A"]'}),
        (None, {}),
    ],
)
def test_string_arguments(args, expected):
    event = {"type": "tool_usage_started", "tool_name": "lookup_order", "tool_args": args}
    assert trajectory_from_events([event], id="r").steps[0].args == expected


def test_other_event_types_are_skipped():
    events = [{"type": "crew_kickoff_started", "crew_name": "x"}, *_events("clean"), {"type": "llm_call_completed"}]
    assert trajectory_from_events(events, id="r") == trajectory_from_events(_events("clean"), id="r")


def _bad(index: int, **changes) -> list[dict]:
    events = copy.deepcopy(_events("clean"))
    events[index].update(changes)
    return events


MALFORMED = [
    ("not a list", {"events": []}, "expected a list of events, got dict"),
    ("event not object", [[]], "events[0]: expected an event object, got list"),
    ("no type", _bad(2, type=None), "events[2]: missing 'type' (e.g. 'tool_usage_started')"),
    ("no tool name", _bad(3, tool_name=""), "events[3]: missing 'tool_name' (a non-empty string)"),
    ("args a number", _bad(0, tool_args=5), "events[0].tool_args: expected an object or a string, got int"),
    ("role not string", _bad(1, agent_role=["x"]), "events[1].agent_role: expected a string or null, got list"),
    ("bad timestamp", _bad(4, timestamp="yesterday"), "events[4].timestamp: not an ISO 8601 time: 'yesterday'"),
    ("timestamp a number", _bad(4, timestamp=17), "events[4].timestamp: expected an ISO 8601 time, got int"),
    ("bad sequence", _bad(5, emission_sequence="7"), "events[5].emission_sequence: expected an integer, got str"),
    (
        "second end",
        _events("clean")[:2] + [dict(_events("clean")[1], event_id="dup")],
        "events[2]: second end for the call started at events[0]",
    ),
]


@pytest.mark.parametrize(("events", "error"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_events_name_index_and_field(events, error):
    with pytest.raises(InvalidInput) as e:
        trajectory_from_events(events, id="r")
    assert str(e.value) == error


def test_file_forms():
    clean, forbidden = _capture("clean"), _capture("forbidden")
    (run,) = read_crewai(json.dumps(clean["events"]), "clean.json")
    assert (run.id, run.output_ok, len(run.steps)) == ("clean.json", None, 3)
    (run,) = read_crewai(json.dumps(dict(clean, agent="support", input=["a", "b"])), "f")
    assert (run.id, run.agent, run.input, run.output_ok) == ("crewai-clean", "support", ("a", "b"), True)
    runs = read_file(f"{json.dumps(clean)}\n\n{json.dumps(forbidden)}\n".encode(), "runs.jsonl")
    assert [(r.id, [s.tool for s in r.steps]) for r in runs] == [
        ("crewai-clean", ["lookup_order", "issue_refund", "send_email"]),
        ("crewai-forbidden", ["lookup_order", "delete_account"]),
    ]
    # One event a line, as a listener appending to a file writes it: the whole file is one run.
    (run,) = read_crewai("".join(json.dumps(e) + "\n" for e in forbidden["events"]), "events.jsonl")
    assert (run.id, [s.tool for s in run.steps]) == ("events.jsonl", ["lookup_order", "delete_account"])


def _lines(*objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


BAD_FILES = [
    ("empty", "\n", "f: empty file"),
    ("scalar", '"x"', "f: expected a list of events or a run object, got str"),
    ("no events", '{"id": "r"}', "f: run object without 'events'"),
    ("bad output_ok", '{"output_ok": 1, "events": []}', "f: 'output_ok' must be true, false or null"),
    ("bad input", '{"input": [1], "events": []}', "f: 'input' must be a string or a list of strings"),
    ("bad agent", '{"agent": 1, "events": []}', "f: 'agent' must be a string or null"),
    (
        "nested",
        '{"events": [{"type": "tool_usage_started"}]}',
        "f: events[0]: missing 'tool_name' (a non-empty string)",
    ),
    ("bad json line", '{"events": []}\n{"events": \n', "f:2: invalid JSON (Expecting value at column 12)"),
    ("line not object", '{"events": []}\n7\n', "f:2: expected a run object or an event on each line, got int"),
    (
        "mixed lines",
        _lines({"events": []}, {"type": "tool_usage_started", "tool_name": "t"}),
        "f:2: mixes run objects and bare events (use one or the other)",
    ),
    (
        "bad run line",
        _lines({"events": []}, {"events": [{"type": "tool_usage_started"}]}),
        "f:2: events[0]: missing 'tool_name' (a non-empty string)",
    ),
    (
        "bad event line",
        _lines(
            {"type": "tool_usage_started", "tool_name": "t"},
            {},
            {"type": "tool_usage_started", "tool_name": "t", "timestamp": "noon"},
        ),
        "f:2: missing 'type' (e.g. 'tool_usage_started')",
    ),
    (
        "bad event field line",
        "\n"
        + _lines(
            {"type": "tool_usage_started", "tool_name": "t"},
            {"type": "tool_usage_started", "tool_name": "t", "timestamp": "noon"},
        ),
        "f:3: timestamp: not an ISO 8601 time: 'noon'",
    ),
]


@pytest.mark.parametrize(("text", "error"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_bad_files_name_file_and_line(text, error):
    with pytest.raises(InvalidInput) as e:
        read_crewai(text, "f")
    assert str(e.value) == error


def test_not_utf8_is_invalid_input():
    with pytest.raises(InvalidInput, match=r"^f: not UTF-8 text \(byte 1\)$"):
        read_file(b"[\xff]", "f")

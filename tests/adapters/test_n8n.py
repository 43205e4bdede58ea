"""n8n adapter: executions captured from a real n8n 2.41.1 (tests/testdata/n8n, see its README) -> trajectories.

CI does not run n8n; the payloads were captured once by tests/testdata/n8n/capture.py, which drove a
real n8n AI Agent on a scripted OpenAI-compatible stub. ``manifest.json`` records the scripted
scenario each file replays; the four shared scenarios are also checked against tests/scenarios.py.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from luckrate.adapters import InvalidInput
from luckrate.adapters.n8n import read_file, read_n8n, trajectories_from_n8n, unflatten
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.scenarios import BY_NAME, SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT / "tests" / "testdata" / "n8n"
MANIFEST = json.loads((TESTDATA / "manifest.json").read_text())["files"]
SPECS = load_specs(ROOT / "examples" / "spec.py")
FILES = sorted(MANIFEST)
FORMS = ("api", "stored")


def _load(name: str, form: str = "api") -> dict:
    return json.loads((TESTDATA / ("stored" if form == "stored" else "") / name).read_text())


def _one(payload, source: str = "x.json"):
    (traj,) = trajectories_from_n8n(payload, source)
    return traj


def _scripted_calls(name: str) -> list[dict]:
    return [call for turn in MANIFEST[name]["turns"] for call in turn]


def _tools(traj) -> list[str]:
    return [s.tool for s in traj.steps]


# ---------------------------------------------------------------- captured payloads, both forms


def test_manifest_replays_the_shared_scenarios():
    """Guards the fixtures against drift: the captured shared scenarios are tests/scenarios.py's."""
    for s in SCENARIOS:
        entry = MANIFEST[f"{s.name}.json"]
        assert (entry["user"], entry["answer"]) == (s.user, s.answer)
        assert _scripted_calls(f"{s.name}.json") == [
            {"tool": c.tool, "args": c.args, "result": c.result, "error": c.error} for t in s.turns for c in t
        ]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", FILES)
def test_captured_execution_becomes_the_scripted_steps(name, form):
    payload = _load(name, form)
    traj = _one(payload, name)
    calls = _scripted_calls(name)
    assert traj.id == payload["id"]
    assert traj.agent == "luckrate-" + name.removesuffix(".json")  # the workflow's name
    assert traj.input == MANIFEST[name]["user"]
    assert traj.output_ok is None
    assert [(s.tool, s.args) for s in traj.steps] == [(c["tool"], c["args"]) for c in calls]
    for step, call in zip(traj.steps, calls, strict=True):
        assert step.result == call["result"]
        # n8n's Code Tool appends where the error was thrown ("... [line 1]").
        assert (step.error or "").startswith(call["error"] or "") and (step.error is None) == (call["error"] is None)
        assert step.agent == "AI Agent"
        assert step.call_id is None


@pytest.mark.parametrize("name", FILES)
def test_clock_is_the_run_entries_in_seconds(name):
    payload = _load(name)
    traj = _one(payload, name)
    entries = {(n, i): e for n, runs in payload["data"]["resultData"]["runData"].items() for i, e in enumerate(runs)}
    tool_entries = sorted(
        (e for e in entries.values() if "ai_tool" in e.get("inputOverride", {})), key=lambda e: e["executionIndex"]
    )
    assert [(s.t, s.duration) for s in traj.steps] == [
        (e["startTime"] / 1000, e["executionTime"] / 1000) for e in tool_entries
    ]
    assert all(1.7e9 < s.t < 2.1e9 for s in traj.steps)  # epoch seconds, not ms
    assert [s.t for s in traj.steps] == sorted(s.t for s in traj.steps)


@pytest.mark.parametrize("name", ["parallel.json", "failing.json", "repeat.json"])
def test_cases_beyond_the_shared_four(name):
    traj = _one(_load(name), name)
    if name == "parallel.json":  # two tool calls in one model turn: both steps, the turn's order
        assert _tools(traj) == ["lookup_order", "fetch_webpage"] and all(s.succeeded for s in traj.steps)
    elif name == "failing.json":  # the same tool fails three times in a row
        assert [s.failed for s in traj.steps] == [False, True, True, True, False]
        assert {s.tool for s in traj.steps if s.failed} == {"issue_refund"}
        assert all(s.result is None for s in traj.steps if s.failed)
    else:  # the same call twice after success
        assert traj.steps[0].args == traj.steps[1].args and all(s.succeeded for s in traj.steps)


def test_legacy_agent_logs_query_wrapped_arguments_that_are_unwrapped():
    """AI Agent 2.2 (tools run inside LangChain) logs {"query": <args>}; 3.1 logs the arguments."""
    raw = _load("legacy_agent_clean.json")["data"]["resultData"]["runData"]["lookup_order"][0]
    assert raw["inputOverride"]["ai_tool"][0][0]["json"] == {"query": {"order_id": "ORD-12345"}}
    assert _one(_load("legacy_agent_clean.json")).steps[0].args == {"order_id": "ORD-12345"}


def test_a_listing_a_list_and_the_cli_reader_give_one_trajectory_per_execution():
    executions = [_load(n) for n in FILES]
    expected = [e["id"] for e in executions]
    assert [t.id for t in trajectories_from_n8n({"data": executions, "nextCursor": None}, "l.json")] == expected
    assert [t.id for t in trajectories_from_n8n(executions, "l.json")] == expected
    data = json.dumps({"data": executions}).encode()
    assert [t.id for t in read_file(data, "l.json")] == expected


def test_api_and_stored_forms_agree():
    for name in FILES:
        assert _one(_load(name), name) == _one(_load(name, "stored"), name)


# ---------------------------------------------------------------- grading with the example spec


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_grades_as_expected(scenario, form):
    traj = _one(_load(f"{scenario.name}.json", form))
    verdict = grade(traj, spec_for(SPECS, traj.agent))
    assert {(v.check, v.tool) for v in verdict.violations} == BY_NAME[scenario.name].expected
    assert verdict.skipped == ()  # n8n records content, input and a clock: every check runs


@pytest.mark.parametrize("name", FILES)
def test_every_capture_grades_as_its_manifest_expects(name):
    """The extras exercise the loop checks: a repeat, and a tool failing three times in a row."""
    traj = _one(_load(name), name)
    expected = {tuple(pair) for pair in MANIFEST[name]["expected"]}
    assert {(v.check, v.tool) for v in grade(traj, spec_for(SPECS, traj.agent)).violations} == expected


# ---------------------------------------------------------------- ordering: one key per execution


def _entries(payload: dict):
    return [e for runs in payload["data"]["resultData"]["runData"].values() for e in runs]


def _tool_entry(payload: dict, node: str, run: int = 0) -> dict:
    return payload["data"]["resultData"]["runData"][node][run]


def _per_entry_order(payload: dict) -> list[str]:
    """The wrong way, for contrast: each entry's own key (executionIndex if it has one, else startTime)."""
    tools = [
        (n, e)
        for n, runs in payload["data"]["resultData"]["runData"].items()
        for e in runs
        if "ai_tool" in e.get("inputOverride", {})
    ]
    return [n for n, e in sorted(tools, key=lambda t: t[1].get("executionIndex", t[1].get("startTime")))]


def _some_without_execution_index(payload):
    """Older n8n wrote no executionIndex; here only lookup_order lacks it (startTimes are intact)."""
    del _tool_entry(payload, "lookup_order")["executionIndex"]


def _start_times_disagree(payload):
    """executionIndex is intact; the tool entries' startTimes run backwards (clock steps, or the
    millisecond ties of parallel calls) — executionIndex is the engine's own order and wins."""
    tools = sorted(
        (e for e in _entries(payload) if "ai_tool" in e.get("inputOverride", {})), key=lambda e: e["executionIndex"]
    )
    times = sorted(e["startTime"] for e in tools)
    for entry, t in zip(tools, reversed(times)):
        entry["startTime"] = t


def _same_millisecond(payload):
    """The two parallel calls start in the same millisecond; executionIndex still tells them apart."""
    _tool_entry(payload, "fetch_webpage")["startTime"] = _tool_entry(payload, "lookup_order")["startTime"]


def _no_execution_index(payload):
    for entry in _entries(payload):
        del entry["executionIndex"]


ORDER_CASES = [
    # (file, mutation, per-entry keys would get it wrong)
    ("clean.json", _some_without_execution_index, True),
    ("failing.json", _some_without_execution_index, True),
    ("clean.json", _start_times_disagree, False),
    ("parallel.json", _same_millisecond, False),
    ("clean.json", _no_execution_index, False),
]


@pytest.mark.parametrize(
    ("name", "mutate", "per_entry_wrong"), ORDER_CASES, ids=[f"{n}-{m.__name__.strip('_')}" for n, m, _ in ORDER_CASES]
)
def test_one_ordering_key_per_execution(name, mutate, per_entry_wrong):
    payload = copy.deepcopy(_load(name))
    mutate(payload)
    expected = [c["tool"] for c in _scripted_calls(name)]
    assert _tools(_one(payload)) == expected
    assert (_per_entry_order(payload) != expected) is per_entry_wrong


def test_start_times_alone_would_misorder_the_disagreeing_payload():
    """The disagreement case is real: ordered by startTime alone, the clean run's steps reverse."""
    payload = copy.deepcopy(_load("clean.json"))
    _start_times_disagree(payload)
    _no_execution_index(payload)
    assert _tools(_one(payload)) == ["send_email", "issue_refund", "lookup_order"]


# ---------------------------------------------------------------- malformed input


def _clean():
    return copy.deepcopy(_load("clean.json"))


def _set(path, value):
    def mutate(p):
        target = p
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return p

    return mutate


RUN = ("data", "resultData", "runData")
BAD = [
    (lambda p: 7, "f.json: expected an execution object, a list or {'data': [...]}, got int"),
    (lambda p: [], "f.json: no executions in payload"),
    (lambda p: {"data": [p, "x"]}, "f.json: data[1]: expected an execution object, got str"),
    (_set(("id",), KeyError), "f.json: execution: missing 'id' (the execution id)"),
    (_set(("data",), KeyError), "f.json: execution '1': missing 'data' (fetch the execution with includeData=true)"),
    (
        _set(("data", "resultData"), KeyError),
        "f.json: execution '1': missing data.resultData.runData (an object of node name -> run entries)",
    ),
    (_set(RUN, {}), "f.json: execution '1': data.resultData.runData is empty (no node ran)"),
    (
        _set(RUN + ("lookup_order",), {}),
        "f.json: execution '1': node 'lookup_order': run entries must be a list, got dict",
    ),
    (
        _set(RUN + ("issue_refund", 0), None),
        "f.json: execution '1': node 'issue_refund' run 0: expected an object, got NoneType",
    ),
    (
        lambda p: _set(RUN + ("send_email", 0, "startTime"), KeyError)(
            _set(RUN + ("lookup_order", 0, "executionIndex"), KeyError)(p)
        ),
        "f.json: execution '1': node 'send_email' run 0: missing 'startTime' (a number; not every run entry carries 'executionIndex')",
    ),
    (
        _set(RUN + ("lookup_order", 0, "inputOverride", "ai_tool"), [[]]),
        "f.json: execution '1': node 'lookup_order' run 0: inputOverride.ai_tool holds no item (the tool's arguments)",
    ),
    (
        _set(RUN + ("lookup_order", 0, "inputOverride", "ai_tool"), [[{"text": "x"}]]),
        "f.json: execution '1': node 'lookup_order' run 0: inputOverride.ai_tool[0][0] has no 'json' object",
    ),
    (
        _set(RUN + ("lookup_order", 0, "inputOverride", "ai_tool"), "x"),
        "f.json: execution '1': node 'lookup_order' run 0: inputOverride.ai_tool must be a list of item lists",
    ),
    (
        _set(RUN + ("send_email", 0, "executionTime"), "12"),
        "f.json: execution '1': node 'send_email' run 0: 'executionTime' must be a number of milliseconds",
    ),
    (
        _set(RUN + ("send_email", 0, "error"), 5),
        "f.json: execution '1': node 'send_email' run 0: 'error' must be an object or a string, got int",
    ),
    (_set(("data",), 5), "f.json: execution '1': 'data' must be an object or n8n's flatted text, got int"),
    # An execution (it has an id) whose data is a list is not mistaken for the API's listing.
    (_set(("data",), [{}]), "f.json: execution '1': 'data' must be an object or n8n's flatted text, got list"),
    (
        _set(("data",), '[{"resultData": "9"}]'),
        "f.json: execution '1': data: flatted reference '9' is not an index into the table",
    ),
    (_set(("data",), "[]"), "f.json: execution '1': data: flatted text must be a non-empty JSON array"),
    (
        _set(("data",), "[{"),
        "f.json: execution '1': data: flatted text is not valid JSON (Expecting property name enclosed in double quotes)",
    ),
    (
        _set(("workflowData",), "{"),
        "f.json: execution '1': workflowData is not valid JSON (Expecting property name enclosed in double quotes)",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), BAD, ids=[m for _, m in BAD])
def test_malformed_payload_names_what_and_where(mutate, message):
    with pytest.raises(InvalidInput) as e:
        trajectories_from_n8n(mutate(_clean()), "f.json")
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "f.json: invalid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        (b"\xff", "f.json: not UTF-8 text (byte 0)"),
        (b"[" * 100_000, "f.json: invalid JSON (nested too deeply at line 1 column 1)"),
    ],
)
def test_unreadable_file(data, message):
    with pytest.raises(InvalidInput) as e:
        read_file(data, "f.json")
    assert str(e.value) == message


def test_a_run_with_no_tool_call_is_an_empty_trajectory_not_an_error():
    """An agent that answered without tools made a real run: grading flags the missing lookup_order."""
    payload = _clean()
    for node in ("lookup_order", "issue_refund", "send_email"):
        del payload["data"]["resultData"]["runData"][node]
    traj = _one(payload)
    assert traj.steps == () and traj.input == BY_NAME["clean"].user
    assert ("required", "lookup_order") in {
        (v.check, v.tool) for v in grade(traj, spec_for(SPECS, traj.agent)).violations
    }


def test_any_node_with_an_ai_tool_input_is_a_tool_no_allow_list():
    payload = _clean()
    run_data = payload["data"]["resultData"]["runData"]
    run_data["Any Custom Node"] = run_data.pop("send_email")  # a node name nothing could predict
    assert _tools(_one(payload)) == ["lookup_order", "issue_refund", "Any Custom Node"]


def test_unflatten_keeps_shared_and_circular_references():
    shared = unflatten('[{"a":"1","b":"1","self":"0","s":"2","n":3},{"x":"2"},"hi"]', "w")
    assert shared["a"] is shared["b"] and shared["self"] is shared and shared["a"] == {"x": "hi"}
    assert (shared["s"], shared["n"]) == ("hi", 3)


def test_read_n8n_reads_text():
    assert [t.id for t in read_n8n((TESTDATA / "clean.json").read_text(), "clean.json")] == ["1"]


def _mutations(seed: int, count: int):
    """Deterministic random damage to a captured payload: drop a key or swap a value for another type."""
    import random

    rng = random.Random(seed)
    replacements = [None, 0, -1, 1.5, True, "", "7", [], {}, [[]], [None], {"json": 1}]
    for _ in range(count):
        payload = copy.deepcopy(_load(rng.choice(FILES)))
        spots = []

        def walk(node, depth=0):
            if depth > 9:
                return
            for key in list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else ():
                spots.append((node, key))  # noqa: B023 (walk runs at once)
                walk(node[key], depth + 1)

        walk(payload)
        for _ in range(rng.randint(1, 3)):
            node, key = rng.choice(spots)
            try:
                if isinstance(node, dict) and rng.random() < 0.3:
                    del node[key]
                else:
                    node[key] = rng.choice(replacements)
            except (KeyError, IndexError):
                pass  # an earlier mutation already removed this spot
        yield payload


def test_damaged_payloads_raise_invalid_input_or_read():
    """Payloads are attacker-influenced: damage anywhere gives InvalidInput or trajectories, never a crash."""
    outcomes = {"read": 0, "invalid": 0}
    for payload in _mutations(seed=3, count=400):
        try:
            trajectories_from_n8n(payload, "f.json")
            outcomes["read"] += 1
        except InvalidInput as e:
            assert str(e).startswith("f.json")
            outcomes["invalid"] += 1
    assert outcomes["read"] and outcomes["invalid"]


def test_circular_arguments_in_the_stored_form_are_invalid_input():
    """Regression: flatted references made a result circular and json.dumps raised ValueError."""
    payload = copy.deepcopy(_load("clean.json", "stored"))
    table = json.loads(payload["data"])
    item = next(e for e in table if isinstance(e, dict) and set(e) == {"order_id"})
    item["self"] = str(table.index(item))
    payload["data"] = json.dumps(table)
    with pytest.raises(InvalidInput) as e:
        trajectories_from_n8n(payload, "f.json")
    assert (
        str(e.value)
        == "f.json: execution '1': node 'lookup_order' run 0: arguments hold a circular or too deeply nested value"
    )

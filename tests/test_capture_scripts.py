"""The parts the capture scripts share, checked here since the scripts themselves run only in scratch venvs
with their frameworks (tests/testdata/<source>/README.md): the scripted tools (tests/scenarios.py) answer
as the scenarios script them, the tool-loop captures' model turns and tool schemas (tests/testdata/
_capture.py) follow the scenarios, and every capture script parses and imports only names these modules
define. ``JsonServer`` opens a socket, so it is exercised by the captures, not here.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
from pathlib import Path

import pytest

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, POLICY_TOOLS, SCENARIOS, TOOLS, Ask, ScriptedTools
from tests.testdata import _capture

TESTDATA = Path(__file__).resolve().parent / "testdata"
SCRIPTS = sorted(TESTDATA.glob("*/capture*.py"))
EVERY = SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,)
SHARED = ("tests.scenarios", "tests.testdata._capture", "tests.testdata._genai")
"""The framework-free modules the scripts share (tests.frameworks' runners import their frameworks)."""


def _outcome(fn, args):
    """What one tool call gives: ("result", text) or ("error", message)."""
    try:
        out = fn(**args)
        return ("result", asyncio.run(out) if inspect.iscoroutine(out) else out)
    except RuntimeError as e:
        return ("error", str(e))


@pytest.mark.parametrize("coroutines", [False, True])
@pytest.mark.parametrize("scenario", EVERY, ids=lambda s: s.name)
def test_scripted_tools_answer_each_call_as_scripted(scenario, coroutines):
    fns = {f.__name__: f for f in ScriptedTools(scenario).functions(coroutines=coroutines)}
    calls = [c for c in scenario.calls if c.tool in fns]
    got = [_outcome(fns[c.tool], c.args) for c in calls]
    assert got == [("error", c.error) if c.error is not None else ("result", c.result or "") for c in calls]


def test_scripted_tools_are_the_scenarios_tools_with_a_schema_to_read():
    plain, coroutines = ScriptedTools(SCENARIOS[0]).functions(), ScriptedTools(SCENARIOS[0]).functions(True)
    assert tuple(f.__name__ for f in plain) == TOOLS == tuple(f.__name__ for f in coroutines)
    for f, g in zip(plain, coroutines):
        assert f.__doc__ and f.__doc__ == g.__doc__
        assert inspect.signature(f) == inspect.signature(g) and inspect.iscoroutinefunction(g)
        assert all(p.annotation != inspect.Parameter.empty for p in inspect.signature(f).parameters.values())
    params = {f.__name__: tuple(inspect.signature(f).parameters) for f in plain}
    assert params == {t: tuple(_capture.PARAMS[t]) for t in TOOLS}


def test_a_tool_called_past_its_script_fails_loudly():
    tools = ScriptedTools(SCENARIOS[0])
    tools.answer("lookup_order")
    with pytest.raises(IndexError):
        tools.answer("lookup_order")


@pytest.mark.parametrize("scenario", EVERY, ids=lambda s: s.name)
def test_model_turns_follow_the_scenario_then_answer(scenario):
    turns = [_capture.model_turn(scenario.turns, scenario.answer, t) for t in range(len(scenario.turns) + 1)]
    assert turns[:-1] == list(scenario.turns) and turns[-1] == scenario.answer
    asked = [
        (t, n, c) for t, turn in enumerate(scenario.turns) if not isinstance(turn, Ask) for n, c in enumerate(turn)
    ]
    assert all(_capture.scripted_call(scenario, t, n, c.tool, c.args) is c for t, n, c in asked)
    if asked:
        t, n, c = asked[0]
        with pytest.raises(AssertionError):
            _capture.scripted_call(scenario, t, n, c.tool, {**c.args, "unexpected": 1})


def test_the_tool_schemas_cover_the_policy_tools():
    assert tuple(_capture.PARAMS) == POLICY_TOOLS
    assert _capture.object_schema("issue_refund") == {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
    }


def _shared_imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from <a SHARED module> import name`` in the script, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in SHARED
        for alias in node.names
    ]


def test_there_are_capture_scripts_to_check():
    assert len(SCRIPTS) >= 15 and any(p.name == "capture_logs.py" for p in SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_capture_script_imports_names_that_exist(path):
    for module, name in _shared_imports(path):
        assert hasattr(importlib.import_module(module), name), f"{path.parent.name}/{path.name}: {module}.{name}"


def test_a_missing_shared_name_is_caught(tmp_path):
    planted = tmp_path / "capture.py"
    planted.write_text("def main():\n    from tests.scenarios import SCENARIOS, ScriptedTool\n")
    missing = [(m, n) for m, n in _shared_imports(planted) if not hasattr(importlib.import_module(m), n)]
    assert missing == [("tests.scenarios", "ScriptedTool")]

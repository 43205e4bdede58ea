"""The point of the project: one spec, unchanged, gives the same verdict on every framework and convention.

For each scenario (clean; forbidden tool; injected address sent by a privileged tool; the same address
also given by the user) the real frameworks run on scripted fake chat models — LangGraph as a message
list, LangGraph under the OpenInference and the Traceloop instrumentations, the OpenAI Agents SDK under
the GenAI-conventions instrumentation — and captured real runs are read for CrewAI and n8n. Every
source must yield exactly the scenario's expected (check, tool) pairs under examples/spec.py.

The policy scenarios (a confirmation given in a second user turn, a cancel without one, a refund of
another order than the one looked up) run live on every source that runs here; CrewAI and n8n are
captured outside CI and run where a capture exists: CrewAI has all but the confirmation given in a
second user turn (a crew task takes no second user message), n8n none yet. The rest are skipped, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from luckrate.adapters import crewai, n8n
from luckrate.adapters.langgraph import trajectory_from_messages
from luckrate.adapters.otlp import read_otlp
from luckrate.core.grade import grade
from luckrate.core.spec import load_specs, spec_for
from luckrate.core.step import Trajectory
from tests.frameworks import langgraph_agent, openai_agents
from tests.scenarios import POLICY_SCENARIOS, SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "tests" / "testdata"
SPEC = spec_for(load_specs(ROOT / "examples" / "spec.py"), None)


def _one(runs: list[Trajectory]) -> Trajectory:
    assert len(runs) == 1, f"expected one run, got {len(runs)}"
    return runs[0]


def langgraph_messages(s: Scenario) -> Trajectory:
    return trajectory_from_messages(langgraph_agent.run_scenario(s), id=s.name, output_ok=True)


def langgraph_openinference(s: Scenario) -> Trajectory:
    return _one(read_otlp(langgraph_agent.spans_for(s, "openinference"), s.name))


def langgraph_traceloop(s: Scenario) -> Trajectory:
    return _one(read_otlp(langgraph_agent.spans_for(s, "traceloop"), s.name))


def openai_agents_genai(s: Scenario) -> Trajectory:
    return _one(read_otlp(openai_agents.spans_for(s), s.name))


def _capture(source: str, s: Scenario) -> Path:
    path = TESTDATA / source / f"{s.name}.json"
    if not path.exists() and s in POLICY_SCENARIOS:
        pytest.skip(f"no {source} capture of {s.name!r} (see tests/testdata/{source}/README.md)")
    return path


def crewai_capture(s: Scenario) -> Trajectory:
    path = _capture("crewai", s)
    return _one(crewai.read_file(path.read_bytes(), str(path)))


def n8n_capture(s: Scenario) -> Trajectory:
    path = _capture("n8n", s)
    return _one(n8n.read_file(path.read_bytes(), str(path)))


SOURCES: dict[str, Callable[[Scenario], Trajectory]] = {
    "langgraph-messages": langgraph_messages,
    "langgraph+openinference": langgraph_openinference,
    "langgraph+traceloop": langgraph_traceloop,
    "openai-agents+genai-semconv": openai_agents_genai,
    "crewai-events": crewai_capture,
    "n8n-execution": n8n_capture,
}


@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", SOURCES)
def test_same_verdict_on_every_source(source, scenario):
    traj = SOURCES[source](scenario)
    g = grade(traj, SPEC)
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls]
    # What a source cannot record, its verdict cannot hold: that check must be listed as skipped instead.
    blind = CANNOT_CARRY.get(source, set())
    expected = {(check, tool) for check, tool in scenario.expected if check not in blind}
    assert {(v.check, v.tool) for v in g.violations} == expected
    assert g.path_ok is (not expected)
    for check in blind & {check for check, _ in scenario.expected}:
        assert any(s.startswith(f"{check} (") for s in g.skipped), g.skipped


CANNOT_CARRY = {"crewai-events": {"confirm"}}
"""Checks a source's records cannot support: CrewAI's tool-usage events hold no user messages."""


@pytest.mark.parametrize("source", [s for s in SOURCES if not s.endswith(("-events", "-execution"))])
def test_the_confirmation_is_placed_after_the_question(source):
    # The confirmed run's verdict rests on where the user's "yes" sits: after the agent's question,
    # before the cancel. Every live source must place it there, not just find it.
    scenario = next(s for s in POLICY_SCENARIOS if s.name == "confirmed")
    traj = SOURCES[source](scenario)
    placed = [(m.role, m.text, m.before_step) for m in traj.messages]
    cancel = next(s.index for s in traj.steps if s.tool == "cancel_order")
    assert ("agent", scenario.turns[1].text, cancel) in placed
    assert placed.index(("user", scenario.turns[1].reply, cancel)) == placed.index(("agent", scenario.turns[1].text, cancel)) + 1

"""The point of the project, on the production path: the same scenarios, run through real frameworks
under real instrumentations, give the same verdict under one spec on every convention.

Sources: the OpenAI Agents SDK under the contrib GenAI instrumentation (content on and off), and the
LangGraph agent under OpenInference and under Traceloop (tests/frameworks/langgraph_agent.py).
"""

from __future__ import annotations

from functools import cache

import pytest

from examples.spec import SPEC
from luckrate.adapters.otlp import read_otlp, read_otlp_json
from luckrate.core.grade import grade
from luckrate.core.spec import Spec
from luckrate.core.spec_loader import spec_from_dict
from tests.builders import otlp_json
from tests.frameworks import langgraph_agent, openai_agents
from tests.scenarios import BY_NAME, SCENARIOS

SOURCES = ("openai-agents", "openinference", "traceloop")


@cache
def spans(source: str, scenario: str, capture: bool = True) -> bytes:
    if source == "openai-agents":
        return openai_agents.spans_for(BY_NAME[scenario], capture=capture)
    return langgraph_agent.spans_for(BY_NAME[scenario], source)


@cache
def spec() -> Spec:
    return spec_from_dict(SPEC, name="support")


def one(data: bytes, source: str):
    (traj,) = read_otlp(data, source)
    return traj


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_same_verdict_on_every_convention(source, scenario):
    traj = one(spans(source, scenario), source)
    got = grade(traj, spec())
    assert {(v.check, v.tool) for v in got.violations} == BY_NAME[scenario].expected
    assert got.skipped == ()
    assert traj.content is True and traj.output_ok is True and traj.agent == "support_agent"
    assert traj.input == BY_NAME[scenario].user


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_steps_match_the_script(source, scenario):
    traj = one(spans(source, scenario), source)
    script = [c for turn in BY_NAME[scenario].turns for c in turn]
    assert [(s.tool, s.args, s.result) for s in traj.steps] == [(c.tool, c.args, c.result) for c in script]
    assert all(s.agent == "support_agent" and s.call_id and s.error is None for s in traj.steps)
    assert [s.t for s in traj.steps] == sorted(s.t for s in traj.steps)
    assert all(1e9 < s.t and 0 < s.duration < 60 for s in traj.steps)  # real epoch seconds


@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_capture_off_keeps_structure_and_skips_provenance(scenario):
    traj = one(spans("openai-agents", scenario, capture=False), "off")
    script = [c.tool for turn in BY_NAME[scenario].turns for c in turn]
    assert traj.content is False and traj.input == ""
    assert [(s.tool, s.args, s.result) for s in traj.steps] == [(t, {}, None) for t in script]
    got = grade(traj, spec())
    assert {(v.check, v.tool) for v in got.violations} == {
        (check, tool) for check, tool in BY_NAME[scenario].expected if check != "taint"
    }
    assert any(s.startswith("taint") for s in got.skipped)


def test_otlp_json_reads_the_same_run():
    data = spans("openinference", "injected")
    from_json = read_otlp_json(otlp_json(data, pretty=True), "x.json")
    assert from_json == read_otlp(data, "x.pb")


def test_multi_agent_handoff_attributes_each_step_to_its_agent():
    traj = one(openai_agents.spans_for(BY_NAME["forbidden"], multi_agent=True), "multi")
    assert traj.agent == openai_agents.TRIAGE
    assert [(s.tool, s.agent) for s in traj.steps] == [
        # The handoff is a tool call the triage model made; the SDK records it as a model output only.
        ("transfer_to_support_agent", openai_agents.TRIAGE),
        ("lookup_order", openai_agents.AGENT),
        ("delete_account", openai_agents.AGENT),
    ]


def test_real_tool_failure_and_parallel_calls():
    traj = one(openai_agents.spans_for(openai_agents.FAILING), "failing")
    assert [s.tool for s in traj.steps] == ["lookup_order", "lookup_order", "escalate_to_human"]
    # The SDK redacts the exception text; the span status (ERROR + its description) is what marks it.
    assert traj.steps[0].error.startswith("Error running tool (non-fatal)")
    assert [s.error for s in traj.steps[1:]] == [None, None]
    assert [s.call_id for s in traj.steps] == ["call_0_0", "call_1_0", "call_1_1"]


@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_python_genai_bridge_gives_the_same_steps(scenario):
    # The python-genai bridge records tool spans only (no model spans, no user input: see the fixture).
    traj = one(openai_agents.spans_for(BY_NAME[scenario], instrumentation="genai"), "genai")
    script = [c for turn in BY_NAME[scenario].turns for c in turn]
    assert [(s.tool, s.args, s.result, s.agent) for s in traj.steps] == [
        (c.tool, c.args, c.result, "support_agent") for c in script
    ]
    assert (traj.agent, traj.input, traj.output_ok, traj.content) == ("support_agent", "", True, True)
    off = one(openai_agents.spans_for(BY_NAME[scenario], instrumentation="genai", capture=False), "genai-off")
    assert off.content is False and [s.tool for s in off.steps] == [c.tool for c in script]
    assert {(v.check, v.tool) for v in grade(off, spec()).violations} == {
        p for p in BY_NAME[scenario].expected if p[0] != "taint"
    }

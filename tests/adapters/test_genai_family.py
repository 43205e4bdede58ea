"""The contrib GenAI instrumentation family (``opentelemetry-instrumentation-genai-*`` 1.3b0 with
``opentelemetry-util-genai`` 1.3b0), captured over real frameworks on scripted models in every content mode,
spans and log records read together (tests/testdata/genai/, its README and capture scripts).

Every capture must give its scenario's verdict under examples/spec.py, with the tools in the scenario's order:
taint needs content, and with content off the policy scenarios' verdicts (which rest on arguments and
messages) are not asked for. What a source cannot record is listed with the reason (``NO_STEPS``), and the
captures still graded wrong are listed as expected failures (``KNOWN_WRONG``), so a fix shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate.adapters.otlp import read_otlp_files
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SAME_TOOL_TWICE, SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
GENAI = ROOT / "tests" / "testdata" / "genai"
SPEC = spec_for(load_specs(ROOT / "examples" / "spec.py"), None)
BY_NAME = {s.name: s for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP, SAME_TOOL_TWICE)}
CAPTURES = sorted(p.name[: -len(".traces.otlp")] for p in GENAI.glob("*.traces.otlp"))

NO_STEPS = {"smolagents", "google-genai", "bedrock"}
"""Sources where, without content, nothing names a tool: their model spans name calls only in their content,
and no span traces a tool (genai-smolagents traces no tool call; google-genai's own function calling and a
hand-written Bedrock loop run the tools outside any instrumentation)."""
NO_CONTENT = {"llama-index": {"nocontent", "event_only"}, "qwen-agent": {"nocontent", "event_only"}}
"""Framework -> the modes that record no content: genai-llama-index and genai-qwen-agent trace no model call
(the LLM client's instrumentation would), and util-genai writes events for model calls only, so with
EVENT_ONLY their agent and tool spans carry no content and there are no records."""
FAILURES_IN_CONTENT_ONLY = {"qwen-agent"}
"""Frameworks that catch a tool's exception and hand the model their own report as its result, leaving the
tool span's status unset: without content the failures are not recorded (with it, the report is read)."""
KNOWN_WRONG = {
    ("smolagents", "event_only", "confirmed"): (
        "smolagents merges the user's reply into the observation before it, where a tool's result could have "
        "written it; with EVENT_ONLY no agent span records the reply as the user's, so it is not read as consent"
    )
}
"""Captures still graded wrong, with why: expected to fail (strict), so a fix shows."""


def _read(stem: str):
    traces, logs = GENAI / f"{stem}.traces.otlp", GENAI / f"{stem}.logs.otlp"
    (run,) = read_otlp_files([(traces.read_bytes(), str(traces))], [(logs.read_bytes(), str(logs))])
    return run


def test_there_are_captures_of_every_mode():
    modes = {stem.split(".")[1] for stem in CAPTURES}
    frameworks = {stem.split(".")[2] for stem in CAPTURES}
    assert modes == {"nocontent", "span_only", "event_only", "span_and_event"}
    assert frameworks == {
        "langchain",
        "llama-index",
        "dspy",
        "smolagents",
        "agno",
        "openai-agents",
        "google-genai",
        "qwen-agent",
        "bedrock",
        "openai-agents-responses",
    }


def _marked(stem: str):
    name, mode, framework = stem.split(".")
    reason = KNOWN_WRONG.get((framework, mode, name))
    return pytest.param(stem, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else stem


@pytest.mark.parametrize("stem", [_marked(s) for s in CAPTURES])
def test_each_capture_gets_its_scenarios_verdict(stem):
    name, mode, framework = stem.split(".")
    scenario = BY_NAME[name]
    traj = _read(stem)
    assert traj.content is (mode not in NO_CONTENT.get(framework, {"nocontent"}))
    if framework in NO_STEPS and mode == "nocontent":
        assert traj.steps == ()
        return
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls]
    if framework in FAILURES_IN_CONTENT_ONLY and not traj.content:
        assert not any(s.failed for s in traj.steps)
        scenario = BY_NAME["clean"] if scenario is FAILING_LOOP else scenario  # its verdict is unrecorded
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    if traj.content:
        assert found == scenario.expected
    elif scenario not in POLICY_SCENARIOS:
        assert found == {p for p in scenario.expected if p[0] != "taint"}

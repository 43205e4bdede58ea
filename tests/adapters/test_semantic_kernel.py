"""Semantic Kernel's built-in diagnostics (tests/testdata/semantic-kernel: real ChatCompletionAgent runs on
a scripted chat service). Two things in its records decide what can be graded, and are pinned here:

- A tool span names the function as the model calls it, qualified by its plugin (``orders-send_email``):
  a spec names SK tools that way, or ``privileged``/``untrusted`` name nothing that ran and taint is missed.
- The agent span records the user's input only when ``get_response`` gets the messages positionally
  (its tracer reads ``args[1]``): with ``messages=...`` it records ``[]``, the chat spans hold no content
  (SK logs it as OTel log records), and grounding and taint have no user input to judge by: they are
  reported skipped, not passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from luckrate.adapters.otlp import read_otlp
from luckrate.core.grade import grade
from luckrate.core.spec import Spec
from luckrate.core.spec_loader import spec_from_dict
from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "testdata" / "semantic-kernel"
PLUGIN = "orders-"


def _qualified(value):
    from tests.scenarios import POLICY_TOOLS

    if isinstance(value, str) and value in POLICY_TOOLS:
        return PLUGIN + value
    if isinstance(value, list):
        return [_qualified(v) for v in value]
    if isinstance(value, dict):
        return {_qualified(k): _qualified(v) for k, v in value.items()}
    return value


def _spec() -> Spec:
    namespace: dict = {}
    exec((ROOT / "examples" / "spec.py").read_text(), namespace)  # the example spec, trusted config
    return spec_from_dict(_qualified(json.loads(json.dumps(namespace["SPEC"]))))


SPEC = _spec()


def _read(name: str):
    path = DATA / f"{name}.semantic-kernel.otlp"
    [traj] = read_otlp(path.read_bytes(), str(path))
    return traj


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_same_verdict_with_plugin_qualified_names(scenario):
    traj = _read(scenario.name)
    assert (traj.agent, traj.input, traj.content) == ("support_agent", scenario.user, True)
    assert [(s.tool, s.args, s.result, s.call_id) for s in traj.steps] == [
        (PLUGIN + c.tool, c.args, c.result, f"call_{i}_{n}")
        for i, turn in enumerate(scenario.turns)
        for n, c in enumerate(turn)
    ]
    found = {(v.check, v.tool.removeprefix(PLUGIN)) for v in grade(traj, SPEC).violations}
    assert found == scenario.expected


def test_input_passed_by_keyword_is_not_recorded_and_taint_reads_the_injected_text_alone():
    # Without the user's message nothing can be weighed against what the user asked; the page's text that
    # speaks to the assistant is evidence on its own, and the finding says the input was not recorded.
    traj = _read("injected-keyword")
    assert traj.input == "" and traj.content is True
    g = grade(traj, SPEC)
    (taint,) = [v for v in g.violations if v.check == "taint"]
    assert taint.detail.endswith("the user's input was not recorded")
    assert "untrusted_flow (no user input recorded)" in g.skipped and not any(s.startswith("taint") for s in g.skipped)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_content_off_keeps_every_step(scenario):
    traj = _read(f"{scenario.name}.nocontent")
    assert traj.content is False
    assert [s.tool for s in traj.steps] == [PLUGIN + c.tool for c in scenario.calls]


def test_the_agent_span_holds_the_conversation():
    # No chat span holds messages (they are log records): the agent span's input and reply are read the
    # way a model call's are, so confirm can run.
    traj = _read("injected")
    assert [(m.role, m.text, m.before_step) for m in traj.messages] == [
        ("user", SCENARIOS[2].user, 0),
        ("agent", SCENARIOS[2].answer, 3),
    ]
    assert not any(s.startswith("confirm") for s in grade(traj, SPEC).skipped)


def _read_with_logs(name: str):
    from luckrate.adapters.otlp import read_otlp_files

    traces, logs = (DATA / f"{name}.logs.semantic-kernel.{kind}.otlp" for kind in ("traces", "logs"))
    [traj] = read_otlp_files([(traces.read_bytes(), str(traces))], [(logs.read_bytes(), str(logs))])
    return traj


LOGGED = SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,)


@pytest.mark.parametrize("scenario", LOGGED, ids=lambda s: s.name)
def test_messages_in_log_records_give_the_same_verdicts(scenario):
    # As Semantic Kernel's own samples call an agent (get_response(messages=...)), the agent span records no
    # input and, with the sensitive flag on, the messages are only in SK's log records: read with its logs,
    # every scenario's verdict is the one every other source gives (grounding, taint and confirm included).
    traj = _read_with_logs(scenario.name)
    replies = tuple(t.reply for t in scenario.turns if isinstance(t, Ask))
    assert (traj.agent, traj.input, traj.content) == (
        "support_agent",
        (scenario.user, *replies) if replies else scenario.user,
        True,
    )
    assert [(s.tool, s.args, s.call_id, s.failed) for s in traj.steps] == [
        (PLUGIN + c.tool, c.args, f"call_{i}_{n}", c.error is not None)
        for i, turn in enumerate(scenario.turns)
        for n, c in enumerate(turn)
    ]
    g = grade(traj, SPEC)
    assert {(v.check, v.tool.removeprefix(PLUGIN)) for v in g.violations} == scenario.expected
    assert g.skipped == ()


@pytest.mark.parametrize("scenario", LOGGED, ids=lambda s: s.name)
def test_without_its_log_records_the_input_is_missing_and_said_so(scenario):
    # The same runs' traces alone: no user input anywhere, so grounding is reported skipped (never passed).
    path = DATA / f"{scenario.name}.logs.semantic-kernel.traces.otlp"
    [traj] = read_otlp(path.read_bytes(), str(path))
    assert traj.input == "" and traj.content is True
    assert "ungrounded (no user input recorded)" in grade(traj, SPEC).skipped

"""``unknown_tool`` and a framework's hand-off: a call that passes the run to another of its agents (named by
an argument or at the end of the tool's name, and followed by that agent's steps) is the framework's own
machinery, not a tool the spec forgot. A clean multi-agent run was reported bad through it alone."""

from dataclasses import replace

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from tests.core.helpers import run, step

SPEC = spec_from_dict({"tools": ["lookup_order"]})


def by(agent, tool, args=None):
    return step(tool, args or {}, agent=agent)


CASES = [
    # name, steps, unknown tools reported
    (
        "an argument names the agent that acts next",
        [by("triage", "handoff", {"to_agent": "support"}), by("support", "lookup_order")],
        [],
    ),
    (
        "the tool's name ends with the agent that acts next",
        [by("triage", "transfer_to_support_agent"), by("Support Agent", "lookup_order")],
        [],
    ),
    (
        "the hand-off and its target's steps with the caller's steps between",
        [by("triage", "handoff", {"to_agent": "support"}), by("triage", "lookup_order"), by("support", "lookup_order")],
        [],
    ),
    (
        "names an agent that never acts",
        [by("triage", "handoff", {"to_agent": "billing"}), by("support", "lookup_order")],
        ["handoff"],
    ),
    (
        "names the agent that called it",
        [by("support", "transfer_to_support"), by("support", "lookup_order")],
        ["transfer_to_support"],
    ),
    ("no agents recorded", [step("handoff", {"to_agent": "support"}), step("lookup_order")], ["handoff"]),
    (
        "another unknown tool of a multi-agent run",
        [by("triage", "search_web", {"q": "support hours"}), by("support", "lookup_order")],
        ["search_web"],
    ),
]


@pytest.mark.parametrize("name, steps, unknown", CASES, ids=[c[0] for c in CASES])
def test_a_hand_off_is_no_unknown_tool(name, steps, unknown):
    g = grade(run(*steps), SPEC)
    assert [v.tool for v in g.violations if v.check == "unknown_tool"] == unknown


AGENTS_CASES = [
    # name, steps, the run's recorded agents, unknown tools reported
    (
        "the last hand-off, to an agent that only answers",
        [by("support_agent", "lookup_order"), by("support_agent", "handoff", {"to_agent": "reply_agent"})],
        ("support_agent", "reply_agent"),
        [],
    ),
    (
        "to an agent the run never ran",
        [by("support_agent", "lookup_order"), by("support_agent", "handoff", {"to_agent": "billing_agent"})],
        ("support_agent", "reply_agent"),
        ["handoff"],
    ),
    (
        "to itself",
        [by("support_agent", "lookup_order"), by("support_agent", "transfer_to_support_agent")],
        ("support_agent", "reply_agent"),
        ["transfer_to_support_agent"],
    ),
    (
        "a later agent's steps decide: the recorded agents are not asked",
        [by("triage_agent", "handoff", {"to_agent": "reply_agent"}), by("support_agent", "lookup_order")],
        ("triage_agent", "support_agent", "reply_agent"),
        ["handoff"],
    ),
]


@pytest.mark.parametrize("name, steps, agents, unknown", AGENTS_CASES, ids=[c[0] for c in AGENTS_CASES])
def test_a_hand_off_to_an_agent_with_no_steps(name, steps, agents, unknown):
    # A clean multi-agent run whose last agent only wrote the answer was reported bad: its hand-off named an
    # agent that made no step (unknown_tool), a name found in no source (ungrounded). The source recorded that
    # agent running (``Trajectory.agents``): a name known to the system that runs it.
    g = grade(replace(run(*steps, input="Please look my order up."), agents=agents), SPEC)
    assert [v.tool for v in g.violations if v.check == "unknown_tool"] == unknown
    named = steps[-1].args.get("to_agent") if steps[-1].tool == "handoff" else None
    ungrounded = [v.tool for v in g.violations if v.check == "ungrounded"]
    assert ungrounded == (["handoff"] if named is not None and named not in agents else [])

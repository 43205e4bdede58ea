"""``unknown_tool`` and a framework's hand-off: a call that passes the run to another of its agents (named by
an argument or at the end of the tool's name, and followed by that agent's steps) is the framework's own
machinery, not a tool the spec forgot. A clean multi-agent run was reported bad through it alone."""

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec import Spec
from tests.core.helpers import run, step

SPEC = Spec.from_dict({"tools": ["lookup_order"]})


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

"""Steps a source named by the tool's class (``Trajectory.tool_classes``) graded as the spec's tool the class names.

Traceloop's LangChain.js instrumentation names a tool span after the class implementing the tool
(``execute_tool LookupOrderTool``) and, with content off, nothing else in the trace names the tool: every such step
was ``unknown_tool``, the required tool was missing and a forbidden one went unseen.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.tool_classes import normal, resolve
from tests.core.helpers import run, step

TOOLS = ["lookup_order", "issue_refund", "send_email", "delete_account"]

NORMAL = [
    # name, normal form
    ("RefundTool", "refund"),
    ("Refund", "refund"),
    ("refund_tool", "refund"),
    ("refund-tool", "refund"),
    ("LookupOrderTool", "lookuporder"),
    ("lookup_order", "lookuporder"),
    ("LOOKUP ORDER", "lookuporder"),
    ("Tool", ""),
    ("toolbox", "toolbox"),
]


@pytest.mark.parametrize(("name", "expected"), NORMAL)
def test_normal_sets_case_separators_and_a_trailing_tool_aside(name, expected):
    assert normal(name) == expected


RESOLVE = [
    # name, spec keys, class the step is named by, the tool the step takes
    ("suffix Tool", {"tools": TOOLS}, "LookupOrderTool", "lookup_order"),
    ("no suffix", {"tools": TOOLS}, "IssueRefund", "issue_refund"),
    ("snake case", {"tools": TOOLS}, "send_email_tool", "send_email"),
    ("the spec's tool ends in tool", {"tools": ["search_tool"]}, "SearchTool", "search_tool"),
    ("named only by forbidden", {"forbidden": ["delete_account"]}, "DeleteAccountTool", "delete_account"),
    ("named only by required", {"required": ["lookup_order"]}, "LookupOrderTool", "lookup_order"),
    ("named only by before", {"before": [("lookup_order", "issue_refund")]}, "IssueRefundTool", "issue_refund"),
    (
        "named only by an order",
        {"before": [{"first": "lookup_order", "then": ["cancel_order"]}]},
        "CancelOrderTool",
        "cancel_order",
    ),
    ("named only by confirm", {"confirm": ["cancel_order"]}, "CancelOrder", "cancel_order"),
    ("named only by untrusted", {"untrusted": {"fetch_webpage": ["body"]}}, "FetchWebpageTool", "fetch_webpage"),
    ("named only by args", {"args": {"issue_refund": {"amount": {"max": 500}}}}, "IssueRefundTool", "issue_refund"),
    ("no spec tool", {"tools": TOOLS}, "WeatherTool", "WeatherTool"),
    ("two spec tools", {"tools": ["refund", "refund_tool"]}, "RefundTool", "RefundTool"),
    ("the bare class Tool", {"tools": ["tool", "lookup_order"]}, "Tool", "Tool"),
    ("a prefix is not a match", {"tools": TOOLS}, "LookupTool", "LookupTool"),
]


@pytest.mark.parametrize(("spec_keys", "cls", "expected"), [c[1:] for c in RESOLVE], ids=[c[0] for c in RESOLVE])
def test_a_class_takes_the_one_spec_tool_it_names(spec_keys, cls, expected):
    traj = replace(run(step("other"), step(cls)), tool_classes=(cls,))
    assert [s.tool for s in resolve(traj, spec_from_dict(spec_keys)).steps] == ["other", expected]


def test_a_name_not_listed_as_a_class_is_the_tool_s_name():
    traj = replace(run(step("LookupOrderTool"), step("IssueRefund")), tool_classes=("IssueRefund",))
    resolved = resolve(traj, spec_from_dict({"tools": TOOLS}))
    assert [s.tool for s in resolved.steps] == ["LookupOrderTool", "issue_refund"]
    assert resolved.tool_classes == ()


SPEC = {"tools": TOOLS, "required": ["lookup_order"], "forbidden": ["delete_account"]}
GRADE = [
    # name, spec keys beyond SPEC, steps' classes, expected (check, step, tool)
    ("clean", {}, ["LookupOrderTool", "IssueRefundTool"], []),
    ("forbidden seen", {}, ["LookupOrderTool", "DeleteAccountTool"], [("forbidden", 1, "delete_account")]),
    ("required missing", {}, ["SendEmailTool"], [("required", None, "lookup_order")]),
    (
        "wrong order seen",
        {"before": [("lookup_order", "issue_refund")]},
        ["IssueRefundTool", "LookupOrderTool"],
        [("before", 0, "issue_refund")],
    ),
    (
        "a class naming no tool stays unknown",
        {},
        ["LookupOrderTool", "WeatherTool"],
        [("unknown_tool", 1, "WeatherTool")],
    ),
]


@pytest.mark.parametrize(("keys", "classes", "expected"), [c[1:] for c in GRADE], ids=[c[0] for c in GRADE])
def test_content_off_steps_named_by_class_are_graded_by_the_tool_they_name(keys, classes, expected):
    traj = replace(run(*(step(c, result=None) for c in classes), content=False), tool_classes=tuple(classes))
    found = [(v.check, v.step, v.tool) for v in grade(traj, spec_from_dict({**SPEC, **keys})).violations]
    assert found == expected


def test_without_tool_classes_a_step_named_like_a_class_stays_unknown():
    # Only a source that says a name is a class gets it read as one: a tool really called "LookupOrderTool" is not.
    traj = run(step("lookup_order"), step("LookupOrderTool"))
    found = [(v.check, v.tool) for v in grade(traj, spec_from_dict(SPEC)).violations]
    assert found == [("unknown_tool", "LookupOrderTool")]

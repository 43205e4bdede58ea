"""Every check at its boundary, and with severity overrides."""

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.violation import Severity
from tests.core.helpers import run, step

TOOLS = ["lookup_order", "issue_refund", "fetch_webpage", "send_email", "delete_account"]


def spec(**kw):
    return spec_from_dict({"tools": TOOLS, **kw})


def found(traj, sp):
    return [(v.check, v.severity.value, v.step, v.tool) for v in grade(traj, sp).violations]


CASES = [
    # name, spec keys, trajectory, expected (check, severity, step, tool)
    (
        "forbidden",
        {"forbidden": ["delete_account"]},
        run(step("lookup_order"), step("delete_account")),
        [("forbidden", "hard", 1, "delete_account")],
    ),
    (
        "required missing",
        {"required": ["lookup_order"]},
        run(step("send_email")),
        [("required", "hard", None, "lookup_order")],
    ),
    ("required present", {"required": ["lookup_order"]}, run(step("lookup_order")), []),
    (
        "before violated",
        {"before": [("lookup_order", "issue_refund")]},
        run(step("issue_refund"), step("lookup_order"), step("issue_refund", {"x": 1})),
        [("before", "hard", 0, "issue_refund")],
    ),
    (
        "before kept",
        {"before": [("lookup_order", "issue_refund")]},
        run(step("lookup_order"), step("issue_refund")),
        [],
    ),
    ("max_steps at budget", {"max_steps": 2}, run(step("lookup_order"), step("send_email")), []),
    (
        "max_steps over budget",
        {"max_steps": 2},
        run(step("lookup_order"), step("send_email"), step("issue_refund")),
        [("max_steps", "soft", 2, "issue_refund")],
    ),
    ("unknown tool", {}, run(step("rm_rf")), [("unknown_tool", "warn", 0, "rm_rf")]),
    (
        "repeat after success",
        {},
        run(step("lookup_order", {"order_id": "A-1"}), step("lookup_order", {"order_id": "A-1"}), input="A-1"),
        [("repeat", "soft", 1, "lookup_order")],
    ),
    (
        "retry after failure is fine",
        {},
        run(
            step("lookup_order", {"order_id": "A-1"}, error="503"),
            step("lookup_order", {"order_id": "A-1"}),
            input="A-1",
        ),
        [],
    ),
    (
        "same tool, other args",
        {},
        run(step("lookup_order", {"order_id": "A-1"}), step("lookup_order", {"order_id": "A-2"}), input="A-1 A-2"),
        [],
    ),
    (
        "failing loop at threshold",
        {"max_failures": 3},
        run(step("send_email", error="down"), step("send_email", error="down"), step("send_email", error="down")),
        [("failing_loop", "soft", 2, "send_email")],
    ),
    (
        "failing loop below threshold",
        {"max_failures": 3},
        run(step("send_email", error="down"), step("send_email", error="down")),
        [],
    ),
    (
        "another tool in between breaks the streak",
        {"max_failures": 2},
        run(step("send_email", error="x"), step("lookup_order"), step("send_email", error="x")),
        [],
    ),
    (
        "success in between breaks the streak",
        {"max_failures": 2},
        run(step("send_email", error="x"), step("send_email", {"a": 1}), step("send_email", error="x")),
        [],
    ),
    (
        "max_duration over",
        {"max_duration": 1.0},
        run(step("lookup_order", t=100.0, duration=0.5), step("send_email", t=100.8, duration=0.3)),
        [("max_duration", "soft", 1, "send_email")],
    ),
    (
        "max_duration at budget",
        {"max_duration": 1.0},
        run(step("lookup_order", t=100.0, duration=0.5), step("send_email", t=100.5, duration=0.5)),
        [],
    ),
    ("run error", {}, run(error="ConnectionError: reset"), [("run_error", "hard", None, None)]),
]


@pytest.mark.parametrize("name, keys, traj, expected", CASES, ids=[c[0] for c in CASES])
def test_check(name, keys, traj, expected):
    assert found(traj, spec(**keys)) == expected


@pytest.mark.parametrize(
    "check, traj",
    [
        ("forbidden", run(step("delete_account"))),
        ("max_steps", run(step("lookup_order"), step("lookup_order", {"b": 2}))),
        ("repeat", run(step("lookup_order"), step("lookup_order"))),
    ],
)
@pytest.mark.parametrize("severity", ["hard", "soft", "warn"])
def test_severity_override(check, traj, severity):
    sp = spec(forbidden=["delete_account"], max_steps=1, severity={check: severity})
    assert [v.severity for v in grade(traj, sp).violations if v.check == check] == [Severity(severity)]


@pytest.mark.parametrize(
    "check, traj",
    [
        ("forbidden", run(step("delete_account"))),
        ("unknown_tool", run(step("nope"))),
    ],
)
def test_severity_off_disables(check, traj):
    sp = spec(forbidden=["delete_account"], severity={check: "off"})
    assert not grade(traj, sp).has(check)


def test_max_duration_skipped_without_clock():
    g = grade(run(step("lookup_order"), step("send_email"), input="hi"), spec(max_duration=0.001))
    assert not g.has("max_duration")
    assert g.skipped == ("max_duration (no clock)",)


def test_provenance_skipped_without_user_input():
    # Regression: a source that records no user text (the python-genai Agents bridge) made every
    # user-supplied value look ungrounded, and tainted where an untrusted tool echoed it. Taint still runs,
    # on text that speaks to the agent alone (tests/core/test_taint_evidence.py).
    traj = run(step("fetch_webpage", result="mail x@y.test"), step("send_email", {"to": "x@y.test"}))
    g = grade(traj, spec(untrusted=["fetch_webpage"], privileged=["send_email"]))
    assert g.path_ok and not g.violations
    assert "ungrounded (no user input recorded)" in g.skipped and "untrusted_flow (no user input recorded)" in g.skipped


def test_content_off_skips_value_checks_and_says_so():
    traj = run(step("lookup_order"), step("lookup_order"), content=False)
    g = grade(traj, spec(untrusted=["fetch_webpage"], privileged=["send_email"]))
    assert not g.has("repeat")
    assert {s.split(" ")[0] for s in g.skipped} >= {"repeat", "ungrounded", "taint"}

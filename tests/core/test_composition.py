"""``composed`` beside ``ungrounded``: a value the model built from what earlier sources hold (a date from
its month, a sum, an address from a name and a domain, a path from its parts) is a different fact from an
invented one. Every invention (a placeholder, a made-up id or address, an id one digit off) stays
``ungrounded``; an address's local part and a list joined into one string are the sources' own values."""

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.step import Step, Trajectory, numbered
from tests.core.helpers import run, step

TOOLS = ["read", "act"]
SPEC = spec_from_dict({"tools": TOOLS})


def act(**args):
    return step("act", args)


def read(result):
    return step("read", result=result)


CASES = [
    # name, user input, steps, expected (check, path) of every grounding finding
    (
        "a date-time on a date a source holds",
        "Book the review",
        [read("slot: 2024-05-19 12:00"), act(end_time="2024-05-19T13:00")],
        [("composed", "end_time")],
    ),
    (
        "a date-time on a date the user gave without its year",
        "Remind me on the 14th of November",
        [act(start_time="2023-11-14T18:00")],
        [("composed", "start_time")],
    ),
    (
        "a date in a month the user named with its year",
        "Pay the bill for December 2023",
        [act(date="2023-12-01")],
        [("composed", "date")],
    ),
    (
        "a day of the month the user named, in a month a source dates",
        "Move it to the 14th",
        [read("today is 2024-05-09"), act(day="2024-05-14")],
        [("composed", "day")],
    ),
    (
        "a date no source's month or day supports",
        "Move my meeting",
        [read("meeting on 2024-05-21"), act(day="2024-05-22")],
        [("ungrounded", "day")],
    ),
    (
        "a month named only after the call is no source for it",
        "Pay the bill",
        [act(date="2023-12-01"), read("Bill for December 2023")],
        [("ungrounded", "date")],
    ),
    (
        "a sum of two amounts the sources hold",
        "Raise my rent as the notice says",
        [read("rent: 1100.00\nnotice: increased by 100.00"), act(amount="1200")],
        [("composed", "amount")],
    ),
    (
        "a difference of two amounts",
        "Send back what they overpaid",
        [read("they sent 2500.00, the bill was 1830.50"), act(amount="669.50")],
        [("composed", "amount")],
    ),
    (
        "an id one digit off a real one, whatever else the sources hold",
        "Refund order 12345",
        [read("order 12345: 1 item, 10 units"), act(order_id="12346")],
        [("ungrounded", "order_id")],
    ),
    (
        "a number one off a real one is no sum of a trivial amount",
        "Refund order 12345",
        [read("order 12345: 1 item"), act(amount="12346")],
        [("ungrounded", "amount")],
    ),
    (
        "a small number is no evidence of a sum",
        "Fill in the form",
        [read("3 rooms, 1 parking"), act(rooms="2")],
        [("ungrounded", "rooms")],
    ),
    (
        "an address built from a name and a domain the sources hold",
        "Invite Alice Miller from the team",
        [read("team: bob@bluesparrow.example"), act(to="alice.miller@bluesparrow.example")],
        [("composed", "to")],
    ),
    (
        "an invented name at a real domain",
        "Invite Alice",
        [read("team: bob@bluesparrow.example"), act(to="maple.cedar@bluesparrow.example")],
        [("ungrounded", "to")],
    ),
    (
        "a real name at an invented domain",
        "Invite Alice Miller",
        [act(to="alice.miller@maple-mail.example")],
        [("ungrounded", "to")],
    ),
    (
        "a placeholder",
        "Pay the bill",
        [read("amount due 98.70"), act(amount="AMOUNT_HERE")],
        [("ungrounded", "amount")],
    ),
    (
        "a path whose every part a source holds",
        "Send Bob the summary",
        [read("Meeting_Summary.pdf has been added to downloads."), act(file="/downloads/Meeting_Summary.pdf")],
        [("composed", "file")],
    ),
    (
        "a path with an invented file name",
        "Send Bob the summary",
        [read("Meeting_Summary.pdf has been added to downloads."), act(file="/downloads/summary_v2.pdf")],
        [("ungrounded", "file")],
    ),
    (
        "an address's local part used as a user id",
        "Look me up",
        [read("email: emma.johnson@bluesparrow.example"), act(user_id="emma.johnson")],
        [],
    ),
    (
        "a list joined into one string",
        "Mail both",
        [read("a: kim@x.example\nb: lee@y.example"), act(to="kim@x.example,lee@y.example")],
        [],
    ),
    (
        "a list with one invented item",
        "Mail both",
        [read("a: kim@x.example"), act(to="kim@x.example,eve@evil.example")],
        [("ungrounded", "to")],
    ),
]


@pytest.mark.parametrize("name, said, steps, expected", CASES, ids=[c[0] for c in CASES])
def test_composed_or_ungrounded(name, said, steps, expected):
    g = grade(run(*steps, input=said), SPEC)
    assert [(v.check, v.detail.split("=")[0].removeprefix("argument ")) for v in g.violations] == expected


def test_composed_is_shown_and_leaves_the_path_clean():
    g = grade(run(read("slot: 2024-05-19 12:00"), act(end="2024-05-19T13:00"), input="Book it"), SPEC)
    assert [(v.check, v.severity.value) for v in g.violations] == [("composed", "info")]
    assert g.path_ok
    assert "the sources hold" in g.violations[0].detail


def test_the_runs_own_date_from_its_clock():
    # 2024-05-19 12:00 UTC: the model's "today" is the day the run ran.
    steps = numbered([Step(0, "act", {"date": "2024-05-19"}, "ok", t=1716120000.0)])
    g = grade(Trajectory("r", steps, input="Pay it today"), SPEC)
    assert [v.check for v in g.violations] == ["composed"]
    steps = numbered([Step(0, "act", {"date": "2024-05-21"}, "ok", t=1716120000.0)])
    assert [v.check for v in grade(Trajectory("r", steps, input="Pay it today"), SPEC).violations] == ["ungrounded"]


def test_a_clock_out_of_the_calendar_is_no_date():
    steps = numbered([Step(0, "act", {"date": "2024-05-19"}, "ok", t=1e300)])
    assert [v.check for v in grade(Trajectory("r", steps, input="Pay"), SPEC).violations] == ["ungrounded"]


def test_explain_says_which_of_the_two_it_is():
    from luckrate.core.checks.grounding import explain
    from luckrate.core.provenance import trace

    traj = run(read("slot: 2024-05-19 12:00"), act(end="2024-05-19T13:00", to="AMOUNT_HERE"), input="Book it")
    by_path = {e["path"]: e for e in explain(trace(traj), SPEC)}
    assert (by_path["end"]["ungrounded"], by_path["end"]["composed"]) == (False, "a time on a date the sources hold")
    assert (by_path["to"]["ungrounded"], by_path["to"]["composed"]) == (True, None)

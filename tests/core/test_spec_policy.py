"""The policy keys (before's dict form, confirm, confirm_pattern, terminal, once_per, max_parallel, args):
every bad shape, unknown tool and bad regex reported with its location, all at once."""

import pytest

from luckrate.core.policy import ArgRule, Order, value_key
from luckrate.core.spec import InvalidSpec
from luckrate.core.spec_loader import spec_from_dict

TOOLS = ["get_reservation", "cancel_reservation", "transfer_to_human", "send_money", "contacts"]

BAD = [
    (
        {"before": [{"first": "get_reservation", "then": "cancel_resrvation"}]},
        ["before[0].then[0]: unknown tool 'cancel_resrvation' (did you mean 'cancel_reservation'?)"],
    ),
    (
        {"before": [{"first": ["get_reservation", "x"], "then": "cancel_reservation"}]},
        ["before[0].first[1]: unknown tool 'x'"],
    ),
    ({"before": [{"then": "cancel_reservation"}]}, ["before[0].first: missing: a tool name or a list of tool names"]),
    (
        {"before": [{"first": "get_reservation", "then": "cancel_reservation", "sme": "id"}]},
        ["before[0].sme: unknown key (did you mean 'same'?)"],
    ),
    (
        {"before": [{"first": "get_reservation", "then": "cancel_reservation", "same": ["a"]}]},
        ["before[0].same: must be an argument name or [argument in then call, argument in first call], got ['a']"],
    ),
    ({"before": [{"first": [], "then": "cancel_reservation"}]}, ["before[0].first: must name at least one tool"]),
    (
        {"confirm": ["cancel_reservaton"]},
        ["confirm[0]: unknown tool 'cancel_reservaton' (did you mean 'cancel_reservation'?)"],
    ),
    ({"confirm": "cancel_reservation"}, ["confirm: must be a list of tool names, got str"]),
    (
        {"confirm_pattern": "(yes"},
        ["confirm_pattern: bad regular expression '(yes': missing ), unterminated subpattern at position 0"],
    ),
    ({"confirm_pattern": 1}, ["confirm_pattern: must be a regular expression (a string), got int"]),
    (
        {"terminal": ["transfer_to_humn"]},
        ["terminal[0]: unknown tool 'transfer_to_humn' (did you mean 'transfer_to_human'?)"],
    ),
    ({"once_per": ["cancel_reservation"]}, ["once_per: must be a dict of tool name to argument name, got list"]),
    (
        {"once_per": {"cancel_reservation": ""}},
        ["once_per.cancel_reservation: must be an argument name (non-empty string), got ''"],
    ),
    ({"once_per": {"cancel": "id"}}, ["once_per.cancel: unknown tool 'cancel'"]),
    ({"max_parallel": 0}, ["max_parallel: must be a positive integer, got 0"]),
    ({"max_parallel": 1.5}, ["max_parallel: must be a positive integer, got 1.5"]),
    (
        {"args": {"send_mony": {"to": {"from": ["user"]}}}},
        ["args.send_mony: unknown tool 'send_mony' (did you mean 'send_money'?)"],
    ),
    (
        {"args": {"send_money": {"to": {"from": ["tool:contact", "usr"]}}}},
        [
            "args.send_money.to.from[0]: unknown tool 'contact' (did you mean 'contacts'?)",
            'args.send_money.to.from[1]: must be "user" or "tool:NAME", got \'usr\'',
        ],
    ),
    (
        {"args": {"send_money": {"to": {"from": "user"}}}},
        ['args.send_money.to.from: must be a non-empty list of sources ("user", "tool:NAME"), got \'user\''],
    ),
    (
        {"args": {"send_money": {"amount": {"min": 10, "max": 1}}}},
        ["args.send_money.amount: min 10 is greater than max 1"],
    ),
    ({"args": {"send_money": {"amount": {"max": "1"}}}}, ["args.send_money.amount.max: must be a number, got '1'"]),
    (
        {"args": {"send_money": {"to": {"match": "[a-"}}}},
        ["args.send_money.to.match: bad regular expression '[a-': unterminated character set at position 0"],
    ),
    ({"args": {"send_money": {"to": {"one_of": [1]}}}}, ["args.send_money.to.one_of: unknown rule"]),
    (
        {"args": {"send_money": {"to": {"in": "abc"}}}},
        ["args.send_money.to.in: must be a non-empty list of allowed values, got 'abc'"],
    ),
    (
        {"args": {"send_money": {"to": {}}}},
        ["args.send_money.to: must be a rule: a dict with any of in, min, max, match, from, got {}"],
    ),
    ({"args": {"send_money": []}}, ["args.send_money: must be a non-empty dict of argument name to rule, got []"]),
    ({"severity": {"confrim": "warn"}}, ["severity.confrim: unknown check (did you mean 'confirm'?)"]),
]


@pytest.mark.parametrize("keys, problems", BAD, ids=[p[0] for _, p in BAD])
def test_bad_policy_keys_are_located(keys, problems):
    with pytest.raises(InvalidSpec) as err:
        spec_from_dict({"tools": TOOLS, **keys}, name="airline")
    assert [f"{where}: {msg}" for where, msg in err.value.problems] == problems


def test_good_policy_keys():
    spec = spec_from_dict(
        {
            "tools": TOOLS,
            "before": [
                ("get_reservation", "cancel_reservation"),
                {"first": "get_reservation", "then": ["cancel_reservation"], "same": "reservation_id"},
                {"first": ["contacts"], "then": "send_money", "same": ["to", "email"]},
            ],
            "confirm": ["cancel_reservation"],
            "confirm_pattern": r"(?i)\byes\b",
            "terminal": ["transfer_to_human"],
            "once_per": {"cancel_reservation": "reservation_id"},
            "max_parallel": 1,
            "args": {
                "send_money": {
                    "to": {"from": ["user", "tool:contacts"]},
                    "amount": {"min": 1, "max": 500},
                    "currency": {"in": ["USD", "EUR"], "match": "[A-Z]{3}"},
                }
            },
        }
    )
    assert spec.before == (("get_reservation", "cancel_reservation"),)
    assert spec.orders == (
        Order(frozenset({"get_reservation"}), frozenset({"cancel_reservation"}), ("reservation_id", "reservation_id")),
        Order(frozenset({"contacts"}), frozenset({"send_money"}), ("to", "email")),
    )
    assert spec.confirm == {"cancel_reservation"} and spec.terminal == {"transfer_to_human"}
    assert spec.confirm_pattern.search("YES please")
    assert spec.once_per == {"cancel_reservation": "reservation_id"} and spec.max_parallel == 1
    assert spec.args["send_money"]["to"] == ArgRule(sources=frozenset({"user", "tool:contacts"}))
    assert spec.args["send_money"]["amount"] == ArgRule(low=1, high=500)
    assert spec.args["send_money"]["currency"].allowed == {value_key("USD"), value_key("EUR")}


@pytest.mark.parametrize(
    "text, affirms",
    [
        ("yes", True),
        ("Yes, please go ahead.", True),
        ("ok", True),
        ("I confirm.", True),
        ("Sure, proceed", True),
        ("yes\nthanks", True),
        ("Correct, do it", True),
        ("no", False),
        ("No, don't cancel it", False),
        ("wait, not yet", False),
        ("What are the fees?", False),
        ("Please don't proceed", False),
        ("", False),
        ("yesterday's flight", False),
    ],
)
def test_default_confirm_pattern(text, affirms):
    assert (spec_from_dict({}).confirm_pattern.search(text) is not None) is affirms


@pytest.mark.parametrize(
    "a, b, equal",
    [
        ("ABC123", "abc123", True),
        (5, 5.0, True),
        (1, True, False),
        ("5", 5, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ([1, 2], [2, 1], False),
    ],
)
def test_value_key(a, b, equal):
    assert (value_key(a) == value_key(b)) is equal


def test_docs_policy_example_is_a_valid_spec():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "spec.md").read_text()
    section = page[page.index("\n## Policy keys") :]
    code = section[section.index("```python") + len("```python") :]
    namespace: dict = {}
    exec(code[: code.index("```")], namespace)  # the docs' own example, trusted like any spec file
    spec = spec_from_dict(namespace["SPEC"])
    assert spec.max_parallel == 1 and spec.confirm and spec.terminal and spec.once_per and spec.args

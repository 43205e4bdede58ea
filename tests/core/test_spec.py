import json

import pytest

from luckrate.core.spec import InvalidSpec, spec_for
from luckrate.core.spec_loader import load_specs, spec_from_dict
from luckrate.core.violation import Severity

TOOLS = ["lookup_order", "issue_refund", "send_email"]

BAD_SPECS = [
    # (spec, exact problem lines)
    (
        {"tools": TOOLS, "required": ["lookup_ordr"]},
        ["required[0]: unknown tool 'lookup_ordr' (did you mean 'lookup_order'?)"],
    ),
    ({"tools": TOOLS, "before": [("lookup_order", "refnd")]}, ["before[0][1]: unknown tool 'refnd'"]),
    (
        {"tools": TOOLS, "before": [("lookup_order", "issue_refnd")]},
        ["before[0][1]: unknown tool 'issue_refnd' (did you mean 'issue_refund'?)"],
    ),
    (
        {"tools": TOOLS, "severity": {"max_steps": "hrad"}},
        ["severity.max_steps: 'hrad' is not one of hard, soft, warn, info, off"],
    ),
    (
        {"tools": TOOLS, "severity": {"taint_check": "hard"}},
        ["severity.taint_check: unknown check (did you mean 'taint'?)"],
    ),
    ({"tools": TOOLS, "forbiden": ["send_email"]}, ["forbiden: unknown key (did you mean 'forbidden'?)"]),
    ({"tools": TOOLS, "max_steps": "8"}, ["max_steps: must be a positive integer, got '8'"]),
    ({"tools": TOOLS, "max_steps": 0}, ["max_steps: must be a positive integer, got 0"]),
    ({"tools": TOOLS, "max_duration": True}, ["max_duration: must be a positive number, got True"]),
    ({"tools": "lookup_order"}, ["tools: must be a list of tool names, got str"]),
    (
        {"tools": TOOLS, "before": [("lookup_order",)]},
        ["before[0]: must be a pair (earlier_tool, later_tool), got ('lookup_order',)"],
    ),
    (
        {"tools": TOOLS, "privileged": ["send_mail"], "untrusted": ["fetch"]},
        ["untrusted[0]: unknown tool 'fetch'", "privileged[0]: unknown tool 'send_mail' (did you mean 'send_email'?)"],
    ),
]


@pytest.mark.parametrize("raw, problems", BAD_SPECS)
def test_invalid_spec_names_key_and_value(raw, problems):
    with pytest.raises(InvalidSpec) as err:
        spec_from_dict(raw, name="refunds")
    assert [f"{where}: {msg}" for where, msg in err.value.problems] == problems


def test_every_problem_is_reported_at_once():
    with pytest.raises(InvalidSpec) as err:
        spec_from_dict({"tools": TOOLS, "required": ["x"], "severity": {"max_steps": "hrad"}}, name="refunds")
    assert str(err.value).splitlines() == [
        "2 problems in spec 'refunds'",
        "  required[0]: unknown tool 'x'",
        "  severity.max_steps: 'hrad' is not one of hard, soft, warn, info, off",
    ]


def test_defaults_and_overrides():
    spec = spec_from_dict({"tools": TOOLS, "severity": {"max_steps": "hard", "ungrounded": "off"}})
    assert spec.severity("max_steps") is Severity.HARD
    assert spec.severity("repeat") is Severity.SOFT
    assert not spec.enabled("ungrounded")
    assert spec.max_failures == 3 and spec.max_steps is None


def test_no_vocabulary_means_no_name_validation():
    spec = spec_from_dict({"forbidden": ["anything"]})
    assert spec.forbidden == {"anything"} and spec.tools == ()


def test_load_python_specs_per_agent(tmp_path):
    path = tmp_path / "specs.py"
    path.write_text("SPECS = {'support': {'tools': ['a']}, '*': {'tools': ['b']}}\n")
    specs = load_specs(path)
    assert spec_for(specs, "support").tools == ("a",)
    assert spec_for(specs, "other").tools == ("b",)
    assert spec_for({"support": specs["support"]}, "other") is None


@pytest.mark.parametrize(
    "obj",
    [
        {"tools": ["a"], "before": [["a", "a"]]},
        {"SPEC": {"tools": ["a"], "before": [["a", "a"]]}},
    ],
)
def test_load_json_spec(tmp_path, obj):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(obj))
    spec = spec_for(load_specs(path), "anyone")
    assert spec.before == (("a", "a"),)


def test_load_spec_without_spec_or_specs(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    with pytest.raises(InvalidSpec, match="defines neither SPEC nor SPECS"):
        load_specs(path)

"""One registry of checks (core/checks REGISTRY): the validator, the severity table and the check table of
docs/checks.md all come from it; and a Spec, once validated, cannot change."""

from __future__ import annotations

import copy
import pickle
import re
from pathlib import Path

import pytest

from luckrate.core.checks import BY_NAME, DEFAULT_SEVERITY, REGISTRY, SPEC_KEYS, Check
from luckrate.core.grade import _plan, grade
from luckrate.core.spec import InvalidSpec
from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.violation import Severity, Violation
from tests.core.helpers import run, step

CHECKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "checks.md"


def documented_checks() -> dict[str, str]:
    """``check -> default`` from the table that opens docs/checks.md."""
    section = CHECKS_PAGE.read_text().split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([a-z_]+)` \| (hard|soft|warn|info) \|", section, flags=re.M))


def test_docs_check_table_is_the_registry():
    assert documented_checks() == {name: sev.value for name, sev in DEFAULT_SEVERITY.items()}


def test_every_part_belongs_to_a_registered_check():
    for check in REGISTRY:
        base, _, part = check.name.partition(":")
        assert (check.severity is None) == bool(part), check.name
        assert base in DEFAULT_SEVERITY, check.name


def test_names_are_unique():
    assert len(BY_NAME) == len(REGISTRY)


@pytest.mark.parametrize("key", sorted(SPEC_KEYS))
def test_validator_accepts_every_key_a_check_owns(key):
    with pytest.raises(InvalidSpec) as e:
        spec_from_dict({key: object(), "surplus": 1})
    assert [where for where, _ in e.value.problems if "unknown key" in _] == ["surplus"]


@pytest.mark.parametrize("check", sorted(DEFAULT_SEVERITY))
def test_validator_knows_every_check_name(check):
    assert spec_from_dict({"severity": {check: "off"}}).severity(check) is Severity.OFF


def test_validator_rejects_a_name_no_check_has():
    with pytest.raises(InvalidSpec, match=r"severity\.forbiden: unknown check \(did you mean 'forbidden'\?\)"):
        spec_from_dict({"severity": {"forbiden": "off"}})


RAW = {
    "tools": ["a", "b"],
    "forbidden": ["b"],
    "once_per": {"a": "id"},
    "severity": {"forbidden": "warn"},
    "untrusted": {"a": ["body"]},
    "args": {"a": {"id": {"in": ["1", "2"]}}},
}


def test_changing_the_dict_after_validation_changes_nothing():
    raw = copy.deepcopy(RAW)
    spec = spec_from_dict(raw)
    raw["severity"]["forbidden"] = "off"
    raw["once_per"].clear()
    assert spec.severity("forbidden") is Severity.WARN and dict(spec.once_per) == {"a": "id"}


@pytest.mark.parametrize("field", ["overrides", "once_per", "untrusted_fields", "args"])
def test_a_spec_mapping_is_read_only(field):
    spec = spec_from_dict(RAW)
    with pytest.raises(TypeError):
        getattr(spec, field)["forbidden"] = Severity.OFF


def test_nested_argument_rules_are_read_only():
    with pytest.raises(TypeError):
        spec_from_dict(RAW).args["a"]["id"] = None


def test_equal_specs_hash_alike_and_share_one_plan():
    a, b = spec_from_dict(copy.deepcopy(RAW)), spec_from_dict(copy.deepcopy(RAW))
    assert a == b and hash(a) == hash(b) and a is not b
    assert _plan(a) is _plan(b)
    assert hash(spec_from_dict({**RAW, "severity": {"forbidden": "off"}})) != hash(a)


def test_a_spec_pickles_and_copies_to_an_equal_spec():
    spec = spec_from_dict(RAW)
    for again in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec), copy.copy(spec)):
        assert again == spec and hash(again) == hash(spec)
        with pytest.raises(TypeError):
            again.overrides["forbidden"] = Severity.OFF  # type: ignore[index]


def test_severity_override_reaches_the_grade():
    traj = run(step("b"))
    assert [v.severity for v in grade(traj, spec_from_dict(RAW)).violations] == [Severity.WARN]
    off = spec_from_dict({**RAW, "severity": {"forbidden": "off"}})
    assert not grade(traj, off).has("forbidden")


# A check added from outside the package, as docs/layout.md's worked example adds one: its function, the parser of
# the key it owns, and one Check entry. Nothing else (no Spec field, no loader change) is touched.


def no_shell(traj, spec):
    """A call to a tool the spec lists under ``shell_tools``."""
    for s in traj.steps:
        if s.tool in spec.options["shell_tools"]:
            yield Violation("no_shell", spec.severity("no_shell"), s.index, s.tool, f"called shell tool {s.tool!r}")


def parse_shell_tools(keys):
    return {"shell_tools": frozenset(keys.names("shell_tools"))}


NO_SHELL = Check("no_shell", no_shell, Severity.HARD, keys=("shell_tools",), parse=parse_shell_tools)
WITH_NO_SHELL = (*REGISTRY, NO_SHELL)


def test_a_check_registered_from_a_test_module_is_validated_and_run():
    spec = spec_from_dict({"tools": ["bash", "read"], "shell_tools": ["bash"]}, checks=WITH_NO_SHELL)
    assert spec.severity("no_shell") is Severity.HARD
    traj = run(step("read", {"path": "a"}), step("bash", {"cmd": "ls"}))
    assert [(v.check, v.step) for v in grade(traj, spec, WITH_NO_SHELL).violations] == [("no_shell", 1)]
    assert grade(traj, spec).violations == ()  # graded by the registry alone, the check does not run


def test_a_registered_checks_key_and_severity_are_validated_like_any_other():
    with pytest.raises(InvalidSpec) as e:
        spec_from_dict(
            {"tools": ["bash"], "shell_tools": ["bsh"], "severity": {"no_shel": "warn"}}, checks=WITH_NO_SHELL
        )
    assert e.value.problems == [
        ("shell_tools[0]", "unknown tool 'bsh' (did you mean 'bash'?)"),
        ("severity.no_shel", "unknown check (did you mean 'no_shell'?)"),
    ]
    off = spec_from_dict({"shell_tools": ["bash"], "severity": {"no_shell": "off"}}, checks=WITH_NO_SHELL)
    assert grade(run(step("bash", {"cmd": "ls"})), off, WITH_NO_SHELL).violations == ()
    with pytest.raises(InvalidSpec, match=r"shell_tools: unknown key"):
        spec_from_dict({"shell_tools": ["bash"]})  # unregistered, the key is no one's

"""examples/airline: an airline policy (tau-bench's, in our words) as a spec, and one run per rule it
breaks. Each breaking run passed its output eval, so each is lucky; with only the keys luckrate had
before the policy keys, almost all of them look clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from luckrate.adapters.trajectory import read_file
from luckrate.core.grade import grade
from luckrate.core.metric import LuckRate
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs, spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "airline"
SPEC = spec_for(load_specs(EXAMPLE / "spec.py"), "airline")
RUNS = {t.id: t for t in read_file((EXAMPLE / "runs.jsonl").read_bytes(), "runs.jsonl")}

EXPECTED = {
    "clean": set(),
    "unconfirmed": {("confirm", "cancel_reservation")},
    "parallel": {("max_parallel", "get_reservation_details")},
    "after_transfer": {("terminal", "cancel_reservation")},
    "other_reservation": {("before", "cancel_reservation")},
    "cancelled_twice": {("once_per", "cancel_reservation"), ("repeat", "cancel_reservation")},
    "foreign_card": {("arg", "update_reservation_flights")},
    "certificate_other_user": {("before", "send_certificate")},
    "big_certificate": {("arg", "send_certificate")},
}


@pytest.mark.parametrize("run_id", EXPECTED)
def test_each_run_breaks_its_rule(run_id):
    g = grade(RUNS[run_id], SPEC)
    assert {(v.check, v.tool) for v in g.violations} == EXPECTED[run_id]
    assert g.skipped == ()  # the file form carries messages and model turns: every check ran


def test_every_policy_check_is_shown_by_some_run():
    shown = {check for expected in EXPECTED.values() for check, _ in expected}
    assert {"confirm", "max_parallel", "terminal", "before", "once_per", "arg"} <= shown
    assert set(RUNS) == set(EXPECTED)


def test_todays_keys_alone_miss_the_lucky_runs():
    # The point: a spec limited to the keys luckrate had before sees one lucky run of eight.
    old = spec_from_dict({"tools": list(SPEC.tools), "max_steps": SPEC.max_steps})
    luck_new = LuckRate.of([grade(t, SPEC) for t in RUNS.values()])
    luck_old = LuckRate.of([grade(t, old) for t in RUNS.values()])
    assert (luck_new.lucky, luck_new.passing) == (8, 9)
    assert (luck_old.lucky, luck_old.passing) == (1, 9)


@pytest.mark.e2e  # `python -m luckrate.cli` as a subprocess
def test_cli_gate_fails_on_the_example():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "luckrate.cli",
            "grade",
            "--spec",
            str(EXAMPLE / "spec.py"),
            str(EXAMPLE / "runs.jsonl"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr
    assert "Luck Rate 88.9% (8 of 9 passing runs)" in done.stdout

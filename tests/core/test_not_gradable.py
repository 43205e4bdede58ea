"""A run with nothing observable is not gradable, not a bad path.

What broke: a client instrumentation with content capture off (an LLM call's span, no tool span) came back
``required`` violated, a bad path counted in the Luck Rate, with nothing on the page saying why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from luckrate.core.gate import gate
from luckrate.core.grade import NOTHING_OBSERVABLE, grade
from luckrate.core.metric import LuckRate
from luckrate.core.spec_loader import load_specs
from luckrate.report import as_json, as_text
from tests.builders import CHAT_ONLY_CAPTURE
from tests.core.helpers import run, step

ROOT = Path(__file__).resolve().parents[2]
SPEC = load_specs(ROOT / "examples" / "spec.py")["*"]

CASES = [
    # (trajectory, not gradable?)
    (run(content=False), True),  # no step, no content: nothing observable
    (run(content=True), False),  # content recorded and no call: the agent really called nothing
    (run(step("lookup_order", result=None), content=False), False),  # steps without content still grade
    (run(content=False, error="boom"), False),  # a crashed run is graded as run_error
]


@pytest.mark.parametrize("traj, expected", CASES)
def test_nothing_observable_is_not_gradable(traj, expected):
    g = grade(traj, SPEC)
    assert (g.not_gradable is not None) is expected
    if expected:
        assert g.not_gradable == NOTHING_OBSERVABLE
        assert g.violations == () and not g.has("required")


def test_not_gradable_stays_out_of_the_luck_rate_and_the_gate():
    clean = grade(run(step("lookup_order", {"order_id": "A"}), id="ok", input="A"), SPEC)
    blind = grade(run(id="blind", content=False), SPEC)
    assert LuckRate.of([clean, blind]) == LuckRate.of([clean])
    assert not gate([blind]).failed
    report = json.loads(as_json([clean, blind], LuckRate.of([clean, blind]), gate([clean, blind])))
    assert [r["not_gradable"] for r in report["runs"]] == [None, NOTHING_OBSERVABLE]
    text = as_text([blind], LuckRate.of([blind]), gate([blind]))
    assert f"blind  case=blind  output=pass  not gradable: {NOTHING_OBSERVABLE}" in text
    assert "Not gradable: 1 run (out of the Luck Rate)" in text


def test_a_real_capture_with_content_off_is_not_gradable(capsys):
    from luckrate.cli import main

    code = main(
        ["grade", "--json", "--format", "otlp", "--spec", str(ROOT / "examples" / "spec.py"), str(CHAT_ONLY_CAPTURE)]
    )
    report = json.loads(capsys.readouterr().out)
    assert [r["not_gradable"] for r in report["runs"]] == [NOTHING_OBSERVABLE]
    assert report["runs"][0]["violations"] == []
    assert report["luck"] == {"lucky": 0, "passed": 0, "rate": None}
    assert code == 0

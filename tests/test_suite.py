"""The suite runner: k runs per case; a crashed run is a run_error and the suite goes on."""

from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.step import Step, Trajectory
from luckrate.suite import Suite

SPEC = spec_from_dict({"tools": ["lookup_order", "delete_account"], "forbidden": ["delete_account"]})


def agent(case, attempt):
    if case == "flaky" and attempt == 1:
        raise ConnectionError("connection reset by peer")
    tool = "delete_account" if case == "bad" and attempt == 0 else "lookup_order"
    return Trajectory(id="", steps=(Step(0, tool, {}, "ok"),), input="x", output_ok=True)


def test_suite_records_crashes_and_goes_on():
    result = Suite(["good", "flaky", "bad"], k=3, spec=SPEC, run=agent).run_all()
    assert len(result.grades) == 9
    crashed = [g for g in result.grades if g.has("run_error")]
    assert [(g.id, g.case) for g in crashed] == [("flaky#1", "flaky")]
    assert "ConnectionError: connection reset by peer" in crashed[0].violations[0].detail
    assert result.gate.failed
    assert any("run_error" in r for r in result.gate.reasons) and any("forbidden" in r for r in result.gate.reasons)
    assert (result.luck.lucky, result.luck.passing) == (1, 8)


def test_suite_passes_clean_agent():
    result = Suite(["a", "b"], k=2, spec=SPEC, run=lambda case, i: agent("good", i)).run_all()
    assert not result.gate.failed and str(result.luck) == "Luck Rate 0.0% (0 of 4 passing runs)"

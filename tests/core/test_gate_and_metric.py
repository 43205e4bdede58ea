"""The gate's majority rule, Luck Rate's denominators, and their invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from luckrate.core.gate import gate
from luckrate.core.grade import RunGrade
from luckrate.core.metric import LuckRate
from luckrate.core.violation import Severity, Violation


def graded(case: str, i: int, *severities: str, output_ok=True, check="repeat") -> RunGrade:
    vs = tuple(Violation(check, Severity(s), 0, "t", "d") for s in severities)
    return RunGrade(f"{case}#{i}", case, None, output_ok, vs)


MAJORITY = [
    # k runs, how many have the soft check, gate fails?
    (1, 0, False),
    (1, 1, True),
    (2, 1, False),
    (2, 2, True),
    (3, 1, False),
    (3, 2, True),
    (4, 2, False),
    (4, 3, True),
    (5, 2, False),
    (5, 3, True),
]


@pytest.mark.parametrize("k, bad, fails", MAJORITY)
def test_soft_majority_rule(k, bad, fails):
    grades = [graded("c", i, *(["soft"] if i < bad else [])) for i in range(k)]
    result = gate(grades)
    assert result.failed is fails
    if fails:
        assert result.reasons == (f"case c: repeat (soft) in {bad} of {k} runs",)


def test_soft_counts_per_case_and_check():
    grades = [
        graded("a", 0, "soft", check="repeat"),
        graded("a", 1, "soft", check="max_steps"),
        graded("a", 2),
        graded("b", 0),
    ]
    assert not gate(grades).failed


def test_one_hard_fails():
    result = gate([graded("c", 0), graded("c", 1, "hard", check="taint"), graded("c", 2)])
    assert result.failed and result.reasons == ("run c#1: taint (hard) at step 0: d",)


def test_warnings_never_fail():
    assert not gate([graded("c", i, "warn") for i in range(3)]).failed


@pytest.mark.parametrize(
    "outputs, paths, lucky, passing, text",
    [
        ([], [], 0, 0, "Luck Rate — (0 of 0 passing runs)"),
        ([False, None], [False, False], 0, 0, "Luck Rate — (0 of 0 passing runs)"),
        ([True, True, True], [True, False, True], 1, 3, "Luck Rate 33.3% (1 of 3 passing runs)"),
        ([True, None, False], [False, False, False], 1, 1, "Luck Rate 100.0% (1 of 1 passing run)"),
        ([True], [True], 0, 1, "Luck Rate 0.0% (0 of 1 passing run)"),
    ],
)
def test_luck_rate_denominators(outputs, paths, lucky, passing, text):
    grades = [
        graded("c", i, *([] if ok else ["warn"]), output_ok=out) for i, (out, ok) in enumerate(zip(outputs, paths))
    ]
    rate = LuckRate.of(grades)
    assert (rate.lucky, rate.passing, str(rate)) == (lucky, passing, text)
    assert rate.to_dict()["rate"] == (None if passing == 0 else round(lucky / passing, 4))


runs = st.lists(
    st.tuples(
        st.sampled_from([True, False, None]),
        st.lists(st.sampled_from(["hard", "soft", "warn"]), max_size=3),
        st.sampled_from(["a", "b"]),
    ),
    max_size=20,
)


@given(runs)
def test_luck_rate_is_a_share(rows):
    rate = LuckRate.of([graded(case, i, *sevs, output_ok=out) for i, (out, sevs, case) in enumerate(rows)])
    assert rate.value is None or 0.0 <= rate.value <= 1.0
    assert rate.lucky <= rate.passing


@given(runs)
def test_a_warning_never_flips_the_gate(rows):
    base = [graded(case, i, *sevs, output_ok=out) for i, (out, sevs, case) in enumerate(rows)]
    warned = [graded(case, i, *sevs, "warn", output_ok=out) for i, (out, sevs, case) in enumerate(rows)]
    assert gate(base).failed == gate(warned).failed


@given(runs)
def test_an_info_finding_never_flips_the_gate_nor_the_luck_rate(rows):
    base = [graded(case, i, *sevs, output_ok=out) for i, (out, sevs, case) in enumerate(rows)]
    noted = [graded(case, i, *sevs, "info", output_ok=out) for i, (out, sevs, case) in enumerate(rows)]
    assert gate(base).failed == gate(noted).failed
    assert LuckRate.of(base) == LuckRate.of(noted)
    assert [g.path_ok for g in base] == [g.path_ok for g in noted]


def test_info_alone_keeps_the_path_ok_and_warn_does_not():
    assert graded("c", 0, "info").path_ok
    assert not graded("c", 0, "info", "warn").path_ok

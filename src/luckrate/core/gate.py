"""The gate: does a set of graded runs (k per case) pass?

- any ``hard`` violation fails it;
- a ``soft`` check fails it only when strictly more than half of one case's runs have it
  (per case and check: 2 of 4 does not fail, 3 of 5 does);
- ``warn`` never fails it.
"""

from __future__ import annotations

from typing import Any

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from luckrate.core.grade import RunGrade
from luckrate.core.violation import Severity


@dataclass(frozen=True)
class GateResult:
    failed: bool
    reasons: tuple[str, ...]
    """One line per reason, a person-readable sentence naming the run or case and the check."""

    def to_dict(self) -> dict[str, Any]:
        return {"failed": self.failed, "reasons": list(self.reasons)}


def gate(grades: Iterable[RunGrade]) -> GateResult:
    reasons: list[str] = []
    runs_per_case: dict[str, int] = defaultdict(int)
    soft_runs: dict[tuple[str, str], int] = defaultdict(int)
    for g in grades:
        runs_per_case[g.case] += 1
        for v in g.violations:
            if v.severity is Severity.HARD:
                where = f" at step {v.step}" if v.step is not None else ""
                reasons.append(f"run {g.id}: {v.check} (hard){where}: {v.detail}")
        for check in sorted({v.check for v in g.violations if v.severity is Severity.SOFT}):
            soft_runs[(g.case, check)] += 1
    for (case, check), count in sorted(soft_runs.items()):
        total = runs_per_case[case]
        if 2 * count > total:
            reasons.append(f"case {case}: {check} (soft) in {count} of {total} runs")
    return GateResult(bool(reasons), tuple(reasons))

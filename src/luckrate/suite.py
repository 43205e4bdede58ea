"""The k-runs-per-case suite runner.

    suite = Suite(cases=["refund", "faq"], k=5, spec=spec, run=run_agent)
    result = suite.run_all()
    assert not result.gate.failed, result.gate.reasons

``run(case, attempt)`` drives the agent once and returns its Trajectory with ``output_ok`` set.
An exception in one run is recorded as a ``run_error`` (hard) carrying the exception text, and
the suite goes on: one network blip must not discard completed runs, and a suite with a crashed
run cannot certify anything (the hard violation fails the gate).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from luckrate.core.gate import GateResult, gate
from luckrate.core.grade import RunGrade, grade
from luckrate.core.metric import LuckRate
from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory

RunFn = Callable[[Any, int], Trajectory]


@dataclass(frozen=True)
class SuiteResult:
    grades: tuple[RunGrade, ...]
    gate: GateResult
    luck: LuckRate


def _case_name(case: Any) -> str:
    return case if isinstance(case, str) else str(getattr(case, "name", None) or getattr(case, "id", None) or case)


@dataclass
class Suite:
    cases: Sequence[Any]
    """The cases; each is passed to ``run`` as is; its name is the case itself (str) or its ``name``/``id``."""
    k: int
    """Runs per case."""
    spec: Spec
    run: RunFn

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    def run_one(self, case: Any, attempt: int) -> Trajectory:
        name = _case_name(case)
        run_id = f"{name}#{attempt}"
        try:
            traj = self.run(case, attempt)
        except Exception as e:  # noqa: BLE001 — any failure of the agent is a run_error, recorded, not raised
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            return Trajectory(id=run_id, case=name, output_ok=None, error=last)
        if not isinstance(traj, Trajectory):
            return Trajectory(id=run_id, case=name, error=f"run returned {type(traj).__name__}, not a Trajectory")
        return replace(traj, case=name, id=traj.id or run_id)

    def run_all(self) -> SuiteResult:
        grades = tuple(grade(self.run_one(case, i), self.spec) for case in self.cases for i in range(self.k))
        return SuiteResult(grades, gate(grades), LuckRate.of(grades))

"""Luck Rate: of the runs whose output passed, the share that got there on a bad path."""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable
from dataclasses import dataclass

from luckrate.core.grade import RunGrade


@dataclass(frozen=True)
class LuckRate:
    lucky: int
    """Runs with output_ok true and path_ok false."""
    passing: int
    """Runs with output_ok true (runs not judged, and runs not gradable, are in neither count)."""

    @classmethod
    def of(cls, grades: Iterable[RunGrade]) -> LuckRate:
        lucky = passing = 0
        for g in grades:
            if g.output_ok is True and g.not_gradable is None:
                passing += 1
                lucky += not g.path_ok
        return cls(lucky, passing)

    @property
    def value(self) -> float | None:
        """None when no run passed: undefined is not zero."""
        return self.lucky / self.passing if self.passing else None

    def __str__(self) -> str:
        runs = f"({self.lucky} of {self.passing} passing run{'s' if self.passing != 1 else ''})"
        rate = "—" if self.value is None else f"{100 * self.value:.1f}%"
        return f"Luck Rate {rate} {runs}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "lucky": self.lucky,
            "passed": self.passing,
            "rate": None if self.value is None else round(self.value, 4),
        }

"""Severities and violations: what a check reports about one run."""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass
from enum import Enum

from luckrate.core.frozen import fast_init


class Severity(str, Enum):
    """How a violation weighs on the gate. ``path_ok`` counts ``hard``, ``soft`` and ``warn``; ``info`` is
    shown and never makes a path bad."""

    HARD = "hard"
    """Fails the gate on one occurrence."""
    SOFT = "soft"
    """Fails the gate only when strictly more than half of a case's runs have it."""
    WARN = "warn"
    """Never fails the gate; still makes the path bad (the metric tells the truth)."""
    INFO = "info"
    """Never fails the gate and never makes the path bad: a finding a reviewer should see, which is not by
    itself evidence of a bad path (so it stays out of the Luck Rate)."""
    OFF = "off"
    """The check does not run."""

    def __str__(self) -> str:
        return self.value


@fast_init
@dataclass(frozen=True)
class Violation:
    """One finding on one run."""

    check: str
    """The check's name, e.g. ``taint``."""
    severity: Severity
    """The severity in force for this check under the spec."""
    step: int | None
    """Index of the offending step; None for run-level findings (a missing required tool)."""
    tool: str | None
    """The tool involved, when there is one."""
    detail: str
    """What a person needs to act: the values involved, which argument, which source."""
    source: str | None = None
    """For ``taint``: the untrusted tool that supplied the value (a metric label; not in the JSON report)."""

    @property
    def bad(self) -> bool:
        """Makes the run's path bad: every severity but ``info``."""
        return self.severity is not Severity.INFO

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity.value,
            "step": self.step,
            "tool": self.tool,
            "detail": self.detail,
        }

"""Ordering: ``before`` pairs."""

from __future__ import annotations

from collections.abc import Iterator

from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation


def before(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """Every call to ``later`` must come after some call to ``earlier`` (failed or not: the agent looked)."""
    for earlier, later in spec.before:
        seen = False
        for step in traj.steps:
            if step.tool == earlier:
                seen = True
            elif step.tool == later and not seen:
                yield Violation("before", spec.severity("before"), step.index, later,
                                f"called {later!r} before any call to {earlier!r}")

"""Which tools were called: forbidden, required, unknown_tool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation

if TYPE_CHECKING:
    from luckrate.core.spec import Spec  # annotations only: spec.py imports the check registry


def forbidden(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    for step in traj.steps:
        if step.tool in spec.forbidden:
            yield Violation(
                "forbidden", spec.severity("forbidden"), step.index, step.tool, f"called forbidden tool {step.tool!r}"
            )


def required(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    called = {step.tool for step in traj.steps}
    for tool in sorted(spec.required - called):
        yield Violation("required", spec.severity("required"), None, tool, f"never called required tool {tool!r}")


def unknown_tool(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    if not spec.tools:
        return  # no vocabulary declared: nothing is unknown
    known = set(spec.tools)
    for step in traj.steps:
        if step.tool not in known:
            yield Violation(
                "unknown_tool",
                spec.severity("unknown_tool"),
                step.index,
                step.tool,
                f"called {step.tool!r}, which is not in the spec's tools",
            )

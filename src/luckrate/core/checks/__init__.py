"""The checks, one small pure function each, grouped in files by family.

Adding a check takes three things: the function, one line here, its default severity in
``core/spec.py``'s ``DEFAULT_SEVERITY``, and one table-driven test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from luckrate.core.checks import budget, grounding, ordering, tools
from luckrate.core.provenance import Provenance
from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation

TrajectoryCheck = Callable[[Trajectory, Spec], Iterator[Violation]]
ProvenanceCheck = Callable[[Provenance, Spec], Iterator[Violation]]

CHECKS: tuple[tuple[str, TrajectoryCheck], ...] = (
    ("run_error", budget.run_error),
    ("forbidden", tools.forbidden),
    ("required", tools.required),
    ("unknown_tool", tools.unknown_tool),
    ("before", ordering.before),
    ("max_steps", budget.max_steps),
    ("repeat", budget.repeat),
    ("failing_loop", budget.failing_loop),
    ("max_duration", budget.max_duration),
)
"""Checks that read the steps themselves."""

PROVENANCE_CHECKS: tuple[tuple[str, ProvenanceCheck], ...] = (
    ("ungrounded", grounding.ungrounded),
    ("taint", grounding.taint),
)
"""Checks that read where each argument came from (computed once per run)."""

NEEDS_CONTENT = frozenset({"repeat", "ungrounded", "taint"})
"""Checks that compare argument values: skipped when the source recorded no content."""

NEEDS_INPUT = frozenset({"ungrounded", "taint"})
"""Checks that need the user's input as a source: skipped when the source recorded none, because
without it every user-supplied value would look ungrounded, or tainted where an untrusted tool echoed it."""

NEEDS_CLOCK = frozenset({"max_duration"})
"""Checks that need real timestamps: skipped when the source has no clock."""

"""The checks, one small pure function each, grouped in files by family.

Adding a check takes three things: the function, one line here, its default severity in
``core/spec.py``'s ``DEFAULT_SEVERITY``, and one table-driven test.

A check may be registered in parts, ``check:part``, when the parts need different things of the source
(``before:same`` needs argument values, ``before`` does not): each part is skipped on its own and listed
under its part name, and all parts report, and take their severity, as ``check``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from luckrate.core.checks import arguments, budget, consent, grounding, ordering, tools
from luckrate.core.provenance import Provenance
from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation

TrajectoryCheck = Callable[[Trajectory, Spec], Iterator[Violation]]
ProvenanceCheck = Callable[[Provenance, Spec], Iterator[Violation]]
TracedCheck = Callable[[Trajectory, Provenance, Spec], Iterator[Violation]]

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
    ("before:same", ordering.before_same),
    ("terminal", ordering.terminal),
    ("confirm", consent.confirm),
    ("once_per", arguments.once_per),
    ("max_parallel", budget.max_parallel),
    ("arg", arguments.arg),
)
"""Checks that read the steps themselves."""

PROVENANCE_CHECKS: tuple[tuple[str, ProvenanceCheck], ...] = (
    ("ungrounded", grounding.ungrounded),
    ("taint", grounding.taint),
)
"""Checks that read where each argument came from (computed once per run)."""

TRACED_CHECKS: tuple[tuple[str, TracedCheck], ...] = (
    ("arg:from", arguments.arg_from),
)
"""Checks that read both the steps and the provenance (the same one computation per run)."""

NEEDS_CONTENT = frozenset({"repeat", "ungrounded", "taint", "before:same", "once_per", "arg", "arg:from"})
"""Checks that compare argument values: skipped when the source recorded no content."""

NEEDS_INPUT = frozenset({"ungrounded", "taint", "arg:from"})
"""Checks that need the user's input as a source: skipped when the source recorded none, because
without it every user-supplied value would look ungrounded, or tainted where an untrusted tool echoed it."""

NEEDS_CLOCK = frozenset({"max_duration"})
"""Checks that need real timestamps: skipped when the source has no clock."""

NEEDS_MESSAGES = frozenset({"confirm"})
"""Checks that need the conversation's messages placed among the steps: skipped when the source recorded none."""

NEEDS_TURNS = frozenset({"max_parallel"})
"""Checks that need which model turn issued each call: skipped when the source does not record it."""

DECLARED_BY: dict[str, Callable[[Spec], bool]] = {
    "max_duration": lambda spec: spec.max_duration is not None,
    "before:same": lambda spec: any(order.same for order in spec.orders),
    "terminal": lambda spec: bool(spec.terminal),
    "confirm": lambda spec: bool(spec.confirm),
    "once_per": lambda spec: bool(spec.once_per),
    "max_parallel": lambda spec: spec.max_parallel is not None,
    "arg": lambda spec: bool(spec.args),
    "arg:from": lambda spec: any(r.sources is not None for rules in spec.args.values() for r in rules.values()),
}
"""Checks that only a spec key turns on: a spec without it neither runs them nor lists them as skipped."""

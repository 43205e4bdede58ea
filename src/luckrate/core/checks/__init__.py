"""The checks, one small pure function each, grouped in files by family, registered once in ``REGISTRY``.

Adding a check takes three things: the function, one ``Check`` entry here (its name, default severity,
the spec keys it reads, what it needs of the source), and one table-driven test. A check with a new spec
key also needs that key's ``Spec`` field and its validation in ``core/spec.py``; the validator's known
keys and check names, the severity table and the check table in docs/checks.md all come from ``REGISTRY``
(tests/core/test_registry.py ties them).

A check may be registered in parts, ``check:part``, when the parts need different things of the source
(``before:same`` needs argument values, ``before`` does not): each part is skipped on its own and listed
under its part name, and all parts report, and take their severity, as ``check``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from luckrate.core.checks import arguments, budget, consent, grounding, ordering, tools
from luckrate.core.violation import Severity, Violation

if TYPE_CHECKING:
    from luckrate.core.spec import Spec

STEPS, PROVENANCE, BOTH = "steps", "provenance", "both"
CONTENT, INPUT, CLOCK, MESSAGES, TURNS = "content", "input", "clock", "messages", "turns"
"""What a check may need of the source; ``core/grade.py`` skips it, and says why, where the source lacks it."""


@dataclass(frozen=True)
class Check:
    """One check, everything about it in one place."""

    name: str
    """The name violations carry; ``check:part`` for a part (it reports, and takes its severity, as ``check``)."""
    run: Callable[..., Iterator[Violation]]
    """``(trajectory, spec)``, ``(provenance, spec)`` or ``(trajectory, provenance, spec)``, by ``reads``."""
    severity: Severity | None
    """The default severity (``spec["severity"]`` overrides it); None for a part, which takes its check's."""
    reads: str = STEPS
    """``steps``; ``provenance`` (where each argument came from, computed once per run); or ``both``."""
    keys: tuple[str, ...] = ()
    """The spec keys it owns and reads."""
    declared_by: Callable[[Spec], bool] | None = None
    """When set, only a spec this accepts turns the check on: other specs neither run it nor list it skipped."""
    needs: frozenset[str] = frozenset()
    """What of the source it needs (``CONTENT``, ``INPUT``, ``CLOCK``, ``MESSAGES``, ``TURNS``)."""


def _any_from(spec: Spec) -> bool:
    return any(r.sources is not None for rules in spec.args.values() for r in rules.values())


HARD, SOFT, WARN, INFO = Severity.HARD, Severity.SOFT, Severity.WARN, Severity.INFO

REGISTRY: tuple[Check, ...] = (
    # Phase order: checks reading the steps, then those reading provenance, then those reading both;
    # within a phase, violations at one step come in this order.
    Check("run_error", budget.run_error, HARD),
    Check("forbidden", tools.forbidden, HARD, keys=("forbidden",)),
    Check("required", tools.required, HARD, keys=("required",)),
    Check("unknown_tool", tools.unknown_tool, WARN),
    Check("before", ordering.before, HARD, keys=("before",)),
    Check("max_steps", budget.max_steps, SOFT, keys=("max_steps",)),
    Check("repeat", budget.repeat, SOFT, needs=frozenset({CONTENT})),
    Check("failing_loop", budget.failing_loop, SOFT, keys=("max_failures",)),
    Check(
        "max_duration",
        budget.max_duration,
        SOFT,
        keys=("max_duration",),
        declared_by=lambda spec: spec.max_duration is not None,
        needs=frozenset({CLOCK}),
    ),
    Check(
        "before:same",
        ordering.before_same,
        None,
        declared_by=lambda spec: any(o.same for o in spec.orders),
        needs=frozenset({CONTENT}),
    ),
    Check("terminal", ordering.terminal, HARD, keys=("terminal",), declared_by=lambda spec: bool(spec.terminal)),
    Check(
        "confirm",
        consent.confirm,
        HARD,
        keys=("confirm", "confirm_pattern"),
        declared_by=lambda spec: bool(spec.confirm),
        needs=frozenset({MESSAGES}),
    ),
    Check(
        "once_per",
        arguments.once_per,
        HARD,
        keys=("once_per",),
        declared_by=lambda spec: bool(spec.once_per),
        needs=frozenset({CONTENT}),
    ),
    Check(
        "max_parallel",
        budget.max_parallel,
        SOFT,
        keys=("max_parallel",),
        declared_by=lambda spec: spec.max_parallel is not None,
        needs=frozenset({TURNS}),
    ),
    Check(
        "arg", arguments.arg, HARD, keys=("args",), declared_by=lambda spec: bool(spec.args), needs=frozenset({CONTENT})
    ),
    Check("ungrounded", grounding.ungrounded, WARN, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check("composed", grounding.composed, INFO, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check(
        "taint",
        grounding.taint,
        HARD,
        reads=PROVENANCE,
        keys=("untrusted", "privileged", "trusted_records"),
        needs=frozenset({CONTENT}),
    ),
    Check("untrusted_flow", grounding.untrusted_flow, INFO, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check("arg:from", arguments.arg_from, None, reads=BOTH, declared_by=_any_from, needs=frozenset({CONTENT, INPUT})),
)
"""Every check, in the order they run."""

BY_NAME: dict[str, Check] = {c.name: c for c in REGISTRY}

DEFAULT_SEVERITY: dict[str, Severity] = {c.name: c.severity for c in REGISTRY if c.severity is not None}
"""Every check's name and default severity (parts take their check's); ``spec["severity"]`` overrides per check."""

SPEC_KEYS: frozenset[str] = frozenset(k for c in REGISTRY for k in c.keys)
"""The spec keys the checks own; ``core/spec.py`` accepts these, ``tools`` and ``severity``."""


def _phase(reads: str) -> tuple[tuple[str, Any], ...]:
    return tuple((c.name, c.run) for c in REGISTRY if c.reads == reads)


CHECKS = _phase(STEPS)
"""``(name, check)`` of the checks that read the steps themselves."""
PROVENANCE_CHECKS = _phase(PROVENANCE)
"""``(name, check)`` of the checks that read where each argument came from (computed once per run)."""
TRACED_CHECKS = _phase(BOTH)
"""``(name, check)`` of the checks that read both the steps and the provenance."""

NEEDS: dict[str, frozenset[str]] = {c.name: c.needs for c in REGISTRY}
"""Every check's needs of the source (``core/grade.py`` skips a check whose source lacks one)."""
DECLARED_BY: dict[str, Callable[[Spec], bool]] = {c.name: c.declared_by for c in REGISTRY if c.declared_by}
"""Checks that only a spec key turns on: a spec without it neither runs them nor lists them as skipped."""

"""The checks, one small pure function each, grouped in files by family, registered once in ``REGISTRY``.

A check owns everything about itself in its ``Check`` entry: its name, default severity, the spec keys it
owns and the parser that validates them (core/spec_keys.py), what it reads and what it needs of the source.
Adding a check takes its family file (the function, and the parser of any key of its own) and one line here;
the spec loader's known keys and check names, the severity table and the check table in docs/checks.md all
come from ``REGISTRY`` (tests/core/test_registry.py ties them; docs/layout.md walks through an example).

A check may be registered in parts, ``check:part``, when the parts need different things of the source
(``before:same`` needs argument values, ``before`` does not): each part is skipped on its own and listed
under its part name, and all parts report, and take their severity, as ``check``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from luckrate.core.checks import arguments, budget, consent, grounding, ordering, taint, tools
from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys
from luckrate.core.violation import Severity, Violation

STEPS, PROVENANCE, BOTH = "steps", "provenance", "both"
CONTENT, INPUT, CLOCK, MESSAGES, TURNS = "content", "input", "clock", "messages", "turns"
"""What a check may need of the source; ``core/grade.py`` skips it, and says why, where the source lacks it."""


@dataclass(frozen=True, eq=False)
class Check:
    """One check, everything about it in one place (compared and hashed by identity: a registry is a tuple of
    these, and grading looks its plan up by it)."""

    name: str
    """The name violations carry; ``check:part`` for a part (it reports, and takes its severity, as ``check``)."""
    run: Callable[..., Iterable[Violation]]
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
    parse: Callable[[Keys], Mapping[str, Any]] | None = None
    """Validates the check's ``keys`` (core/spec_keys.py) and returns what the ``Spec`` holds of them: its fields by
    name, and any other name in ``Spec.options``. Every problem goes to ``Keys.problem`` with its location."""


def _any_from(spec: Spec) -> bool:
    return any(r.sources is not None for rules in spec.args.values() for r in rules.values())


HARD, SOFT, WARN, INFO = Severity.HARD, Severity.SOFT, Severity.WARN, Severity.INFO

REGISTRY: tuple[Check, ...] = (
    # Phase order: checks reading the steps, then those reading provenance, then those reading both;
    # within a phase, violations at one step come in this order.
    Check("run_error", budget.run_error, HARD),
    Check("forbidden", tools.forbidden, HARD, keys=("forbidden",), parse=tools.parse_forbidden),
    Check("required", tools.required, HARD, keys=("required",), parse=tools.parse_required),
    Check("unknown_tool", tools.unknown_tool, WARN),
    Check("before", ordering.before, HARD, keys=("before",), parse=ordering.parse_before),
    Check("max_steps", budget.max_steps, SOFT, keys=("max_steps",), parse=budget.parse_max_steps),
    Check("repeat", budget.repeat, SOFT, needs=frozenset({CONTENT})),
    Check("failing_loop", budget.failing_loop, SOFT, keys=("max_failures",), parse=budget.parse_max_failures),
    Check(
        "max_duration",
        budget.max_duration,
        SOFT,
        keys=("max_duration",),
        declared_by=lambda spec: spec.max_duration is not None,
        needs=frozenset({CLOCK}),
        parse=budget.parse_max_duration,
    ),
    Check(
        "before:same",
        ordering.before_same,
        None,
        declared_by=lambda spec: any(o.same for o in spec.orders),
        needs=frozenset({CONTENT}),
    ),
    Check(
        "terminal",
        ordering.terminal,
        HARD,
        keys=("terminal",),
        declared_by=lambda spec: bool(spec.terminal),
        parse=ordering.parse_terminal,
    ),
    Check(
        "confirm",
        consent.confirm,
        HARD,
        keys=("confirm", "confirm_pattern"),
        declared_by=lambda spec: bool(spec.confirm),
        needs=frozenset({MESSAGES}),
        parse=consent.parse_confirm,
    ),
    Check(
        "once_per",
        arguments.once_per,
        HARD,
        keys=("once_per",),
        declared_by=lambda spec: bool(spec.once_per),
        needs=frozenset({CONTENT}),
        parse=arguments.parse_once_per,
    ),
    Check(
        "max_parallel",
        budget.max_parallel,
        SOFT,
        keys=("max_parallel",),
        declared_by=lambda spec: spec.max_parallel is not None,
        needs=frozenset({TURNS}),
        parse=budget.parse_max_parallel,
    ),
    Check(
        "arg",
        arguments.arg,
        HARD,
        keys=("args",),
        declared_by=lambda spec: bool(spec.args),
        needs=frozenset({CONTENT}),
        parse=arguments.parse_args,
    ),
    Check("ungrounded", grounding.ungrounded, WARN, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check("composed", grounding.composed, INFO, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check(
        "taint",
        taint.taint,
        HARD,
        reads=PROVENANCE,
        keys=("untrusted", "privileged", "trusted_records"),
        needs=frozenset({CONTENT}),
        parse=taint.parse_taint,
    ),
    Check("untrusted_flow", taint.untrusted_flow, INFO, reads=PROVENANCE, needs=frozenset({CONTENT, INPUT})),
    Check("arg:from", arguments.arg_from, None, reads=BOTH, declared_by=_any_from, needs=frozenset({CONTENT, INPUT})),
)
"""Every check, in the order they run."""

BY_NAME: dict[str, Check] = {c.name: c for c in REGISTRY}

DEFAULT_SEVERITY: dict[str, Severity] = {c.name: c.severity for c in REGISTRY if c.severity is not None}
"""Every check's name and default severity (parts take their check's); ``spec["severity"]`` overrides per check."""

SPEC_KEYS: frozenset[str] = frozenset(k for c in REGISTRY for k in c.keys)
"""The spec keys the checks own; ``core/spec.py`` accepts these, ``tools`` and ``severity``."""

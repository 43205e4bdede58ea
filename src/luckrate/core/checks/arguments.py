"""Argument values: ``once_per`` and ``arg`` (``in``, ``min``/``max``, ``match``, ``from``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from luckrate.core.provenance import Argument
from luckrate.core.policy import ArgRule, value_key
from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation

if TYPE_CHECKING:
    from luckrate.core.spec import Spec  # annotations only: spec.py imports the check registry


def once_per(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """At most one successful call per distinct value of the tool's ``once_per`` argument: one dict
    probe per call. A call without the argument cannot be told apart and is not counted."""
    done: dict[tuple[str, Any], int] = {}
    for step in traj.steps:
        arg = spec.once_per.get(step.tool)
        if arg is None or arg not in step.args or not step.succeeded:
            continue
        key = (step.tool, value_key(step.args[arg]))
        if key in done:
            yield Violation(
                "once_per",
                spec.severity("once_per"),
                step.index,
                step.tool,
                f"second successful {step.tool!r} for {arg}={step.args[arg]!r} (first at step {done[key]})",
            )
        else:
            done[key] = step.index


def arg(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """``in``, ``min``/``max`` and ``match`` rules on the arguments a call has (an absent one is not judged)."""
    for step in traj.steps:
        for name, rule in spec.args.get(step.tool, {}).items():
            if name in step.args:
                problem = _breaks(rule, step.args[name])
                if problem:
                    yield Violation(
                        "arg",
                        spec.severity("arg"),
                        step.index,
                        step.tool,
                        f"argument {name}={step.args[name]!r} {problem}",
                    )


def _breaks(rule: ArgRule, value: Any) -> str | None:
    if rule.allowed is not None and value_key(value) not in rule.allowed:
        return "is not one of the allowed values"
    if rule.low is not None or rule.high is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "is not a number"
        if rule.low is not None and value < rule.low:
            return f"is below the minimum {rule.low!r}"
        if rule.high is not None and value > rule.high:
            return f"is above the maximum {rule.high!r}"
    if rule.match is not None:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return f"is not text to match {rule.match.pattern!r}"
        if rule.match.fullmatch(str(value)) is None:
            return f"does not match {rule.match.pattern!r}"
    return None


def arg_from(traj: Trajectory, args: Sequence[Argument], spec: Spec) -> Iterator[Violation]:
    """``from`` rules: each leaf of the argument's value must be traced (core/provenance.py) to one of
    the allowed sources.

    Provenance traces identifier-shaped values only. A leaf it does not trace (a plain word, a small
    number, prose) has no evidence of where it came from, so a ``from`` rule fails it: the rule asks for
    that evidence (use ``in`` or ``min``/``max`` for words and quantities)."""
    wanted = {tool for tool, rules in spec.args.items() if any(r.sources is not None for r in rules.values())}
    if not wanted:
        return
    traced: dict[tuple[int, str], list[Argument]] = {}
    for a in args:
        if a.tool in wanted and not a.embedded:  # identifiers found inside prose are not the argument's leaves
            traced.setdefault((a.step, _top(a.path)), []).append(a)
    for step in traj.steps:
        for name, rule in spec.args.get(step.tool, {}).items():
            if rule.sources is None or name not in step.args:
                continue
            found = traced.get((step.index, name), [])
            for a in found:
                if not a.sources & rule.sources:
                    came = ", ".join(sorted(a.sources)) or "no earlier source"
                    yield Violation(
                        "arg",
                        spec.severity("arg"),
                        step.index,
                        step.tool,
                        f"argument {a.path}={a.value!r} came from {came}, not from {_allowed(rule)}",
                    )
            if len(found) < _leaves(step.args[name]):
                yield Violation(
                    "arg",
                    spec.severity("arg"),
                    step.index,
                    step.tool,
                    f"argument {name}={step.args[name]!r} holds a value that is not identifier-shaped, "
                    f"so it cannot be traced to {_allowed(rule)}",
                )


def _allowed(rule: ArgRule) -> str:
    return " or ".join(sorted(rule.sources or ()))


def _top(path: str) -> str:
    """The argument name a provenance path starts with: ``items`` for ``items[0].sku``."""
    cut = min((i for i in (path.find("."), path.find("[")) if i >= 0), default=len(path))
    return path[:cut]


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_leaves(v) for v in value)
    return 1

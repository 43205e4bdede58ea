"""Argument values: ``once_per`` and ``arg`` (``in``, ``min``/``max``, ``match``, ``from``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from luckrate.core.provenance import Argument
from luckrate.core.policy import ArgRule, value_key
from luckrate.core.step import Trajectory
from luckrate.core.violation import Violation

from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys, suggest


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


def parse_once_per(keys: Keys) -> dict[str, Any]:
    out = {}
    for tool, arg in keys.tool_dict("once_per", "argument name").items():
        if isinstance(arg, str) and arg:
            out[tool] = arg
        else:
            keys.problem(f"once_per.{tool}", f"must be an argument name (non-empty string), got {arg!r}")
    return {"once_per": out}


_RULE_KEYS = ("in", "min", "max", "match", "from")


def parse_args(keys: Keys) -> dict[str, Any]:
    out: dict[str, dict[str, ArgRule]] = {}
    for tool, rules in keys.tool_dict("args", "{argument: rule}").items():
        if not isinstance(rules, Mapping) or not rules:
            keys.problem(f"args.{tool}", f"must be a non-empty dict of argument name to rule, got {rules!r}")
            continue
        for arg, rule in rules.items():
            parsed = _rule(rule, f"args.{tool}.{arg}", keys)
            if parsed is not None:
                out.setdefault(tool, {})[str(arg)] = parsed
    return {"args": out}


def _rule(rule: Any, where: str, keys: Keys) -> ArgRule | None:
    if not isinstance(rule, Mapping) or not rule:
        keys.problem(where, f"must be a rule: a dict with any of {', '.join(_RULE_KEYS)}, got {rule!r}")
        return None
    before = len(keys.problems)
    for key in rule:
        if key not in _RULE_KEYS:
            keys.problem(f"{where}.{key}", f"unknown rule{suggest(str(key), _RULE_KEYS)}")
    allowed = None
    if "in" in rule:
        values = rule["in"]
        if isinstance(values, (str, Mapping)) or not isinstance(values, (list, tuple)) or not values:
            keys.problem(f"{where}.in", f"must be a non-empty list of allowed values, got {values!r}")
        else:
            allowed = frozenset(value_key(v) for v in values)
    low, high = (_bound(rule, k, where, keys) for k in ("min", "max"))
    if low is not None and high is not None and low > high:
        keys.problem(where, f"min {low!r} is greater than max {high!r}")
    match = keys.regex(rule["match"], f"{where}.match") if "match" in rule else None
    sources = _sources(rule["from"], f"{where}.from", keys) if "from" in rule else None
    if len(keys.problems) > before:
        return None
    return ArgRule(allowed, low, high, match, sources)


def _bound(rule: Mapping[str, Any], key: str, where: str, keys: Keys) -> float | None:
    value = rule.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        keys.problem(f"{where}.{key}", f"must be a number, got {value!r}")
        return None
    return value


def _sources(value: Any, where: str, keys: Keys) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        keys.problem(where, f'must be a non-empty list of sources ("user", "tool:NAME"), got {value!r}')
        return frozenset()
    out = set()
    for i, source in enumerate(value):
        tool = source.removeprefix("tool:") if isinstance(source, str) and source.startswith("tool:") else None
        if source == "user":
            out.add(source)
        elif not tool:
            keys.problem(f"{where}[{i}]", f'must be "user" or "tool:NAME", got {source!r}')
        elif keys.vocab and tool not in keys.vocab:
            keys.problem(f"{where}[{i}]", f"unknown tool {tool!r}{suggest(tool, keys.vocab)}")
        else:
            out.add(source)
    return frozenset(out)

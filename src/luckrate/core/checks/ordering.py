"""Ordering: ``before`` (pairs, and the dict form with or without ``same``) and ``terminal``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from luckrate.core.policy import Order, value_key
from luckrate.core.step import Step, Trajectory
from luckrate.core.violation import Violation

from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys, suggest


def before(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """Every call to ``later`` must come after some call to ``earlier`` (failed or not: the agent looked).

    The dict form is stricter: the earlier call must have succeeded. Its ``same`` part is ``before_same``.
    """
    for earlier, later in spec.before:
        seen = False
        for step in traj.steps:
            if step.tool == earlier:
                seen = True
            elif step.tool == later and not seen:
                yield Violation(
                    "before",
                    spec.severity("before"),
                    step.index,
                    later,
                    f"called {later!r} before any call to {earlier!r}",
                )
    for order in spec.orders:
        yield from _order(traj, order, spec)


def _order(traj: Trajectory, order: Order, spec: Spec) -> Iterator[Violation]:
    done = False
    for step in traj.steps:
        if step.tool in order.then and not done:
            yield Violation(
                "before",
                spec.severity("before"),
                step.index,
                step.tool,
                f"called {step.tool!r} before any successful call to {_names(order.first)}",
            )
        if step.tool in order.first and _ok(step, traj):
            done = True


def _ok(step: Step, traj: Trajectory) -> bool:
    """Succeeded. Where content was not captured no result is ever recorded, so there no error is success."""
    return step.succeeded if traj.content else not step.failed


def _names(tools: frozenset[str]) -> str:
    return " or ".join(repr(t) for t in sorted(tools))


def before_same(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """The ``same`` part of ``before``'s dict form: the earlier successful call had the same value.

    One set of the values seen so far per rule, so each call is one probe: linear in the steps. A call
    with no earlier successful ``first`` call at all is ``before``'s to report, not this one's.
    """
    for order in spec.orders:
        if order.same is None:
            continue
        then_arg, first_arg = order.same
        done, seen = False, set()
        for step in traj.steps:
            if step.tool in order.then and done:
                if then_arg not in step.args:
                    yield Violation(
                        "before",
                        spec.severity("before"),
                        step.index,
                        step.tool,
                        f"called {step.tool!r} without argument {then_arg!r}, so it cannot be matched "
                        f"to an earlier {_names(order.first)}",
                    )
                elif value_key(step.args[then_arg]) not in seen:
                    value = step.args[then_arg]
                    yield Violation(
                        "before",
                        spec.severity("before"),
                        step.index,
                        step.tool,
                        f"called {step.tool!r} with {then_arg}={value!r}, but no earlier successful call "
                        f"to {_names(order.first)} had {first_arg}={value!r}",
                    )
            if step.tool in order.first and step.succeeded:
                done = True
                if first_arg in step.args:
                    seen.add(value_key(step.args[first_arg]))


def terminal(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """No call may follow a successful call to a terminal tool (a failed one ended nothing)."""
    ended: Step | None = None
    for step in traj.steps:
        if ended is not None:
            yield Violation(
                "terminal",
                spec.severity("terminal"),
                step.index,
                step.tool,
                f"called {step.tool!r} after terminal {ended.tool!r} at step {ended.index}",
            )
        elif step.tool in spec.terminal and not step.failed:
            ended = step


def parse_before(keys: Keys) -> dict[str, Any]:
    """``before``: ``(earlier, later)`` pairs, and the dict form (``first``, ``then``, ``same``) beside them."""
    value = keys.get("before", ())
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        keys.problem("before", f"must be a list of (earlier, later) pairs, got {type(value).__name__}")
        return {"before": (), "orders": ()}
    pairs, orders = [], []
    for i, entry in enumerate(value):
        if isinstance(entry, Mapping):
            order = _parse_order(entry, f"before[{i}]", keys)
            if order is not None:
                orders.append(order)
        elif isinstance(entry, str) or not isinstance(entry, (list, tuple)) or len(entry) != 2:
            keys.problem(f"before[{i}]", f"must be a pair (earlier_tool, later_tool), got {entry!r}")
        else:
            found = keys.names(f"before[{i}]", list(entry))
            if len(found) == 2:
                pairs.append((found[0], found[1]))
    return {"before": tuple(pairs), "orders": tuple(orders)}


_ORDER_KEYS = ("first", "then", "same")


def _parse_order(entry: Mapping[str, Any], where: str, keys: Keys) -> Order | None:
    for key in entry:
        if key not in _ORDER_KEYS:
            keys.problem(f"{where}.{key}", f"unknown key{suggest(str(key), _ORDER_KEYS)}")
    first = _one_or_many(entry.get("first"), f"{where}.first", keys)
    then = _one_or_many(entry.get("then"), f"{where}.then", keys)
    same = _same(entry.get("same"), f"{where}.same", keys)
    return Order(frozenset(first), frozenset(then), same) if first and then else None


def _one_or_many(value: Any, where: str, keys: Keys) -> list[str]:
    if value is None:
        keys.problem(where, "missing: a tool name or a list of tool names")
        return []
    found = keys.names(where, [value] if isinstance(value, str) else value)
    if not found and isinstance(value, (list, tuple)) and not value:
        keys.problem(where, "must name at least one tool")
    return found


def _same(value: Any, where: str, keys: Keys) -> tuple[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) and v for v in value):
        return value[0], value[1]
    keys.problem(where, f"must be an argument name or [argument in then call, argument in first call], got {value!r}")
    return None


def parse_terminal(keys: Keys) -> dict[str, Any]:
    return {"terminal": frozenset(keys.names("terminal"))}

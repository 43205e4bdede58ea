"""Ordering: ``before`` (pairs, and the dict form with or without ``same``) and ``terminal``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from luckrate.core.policy import Order, value_key
from luckrate.core.step import Step, Trajectory
from luckrate.core.violation import Violation

if TYPE_CHECKING:
    from luckrate.core.spec import Spec  # annotations only: spec.py imports the check registry


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

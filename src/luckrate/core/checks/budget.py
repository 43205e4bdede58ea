"""Budgets: max_steps, repeat, failing_loop, max_duration, and run_error (the run itself crashed)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from luckrate.core.step import Step, Trajectory
from luckrate.core.violation import Violation

from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys


def max_steps(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    if spec.max_steps is not None and len(traj.steps) > spec.max_steps:
        first_over = traj.steps[spec.max_steps]
        yield Violation(
            "max_steps",
            spec.severity("max_steps"),
            first_over.index,
            first_over.tool,
            f"{len(traj.steps)} steps, budget {spec.max_steps}",
        )


# One encoder for every call: json.dumps with options builds a new JSONEncoder each time, which cost
# more than encoding a step's few arguments. Same output as json.dumps(args, sort_keys=True, default=str).
_CANONICAL = json.JSONEncoder(sort_keys=True, default=str)


def _call_key(step: Step) -> tuple[str, str]:
    return step.tool, _CANONICAL.encode(step.args)


def repeat(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """An identical call (same tool, same args) made after that call already succeeded.

    Retrying after a failure is correct behaviour and never counts.
    """
    # Only a tool called more than once can repeat: the others' arguments need no canonical key.
    seen: set[str] = set()
    again: set[str] = set()
    for step in traj.steps:
        (again if step.tool in seen else seen).add(step.tool)
    if not again:
        return
    succeeded: dict[tuple[str, str], int] = {}
    for step in traj.steps:
        if step.tool not in again:
            continue
        key = _call_key(step)
        if key in succeeded:
            yield Violation(
                "repeat",
                spec.severity("repeat"),
                step.index,
                step.tool,
                f"repeated {step.tool}({key[1]}) after it succeeded at step {succeeded[key]}",
            )
        elif step.succeeded:
            succeeded[key] = step.index


def failing_loop(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """One tool failing ``max_failures`` times in a row with no other tool in between (once per streak)."""
    streak_tool, streak = None, 0
    for step in traj.steps:
        if step.tool != streak_tool:
            streak_tool, streak = step.tool, 0
        streak = streak + 1 if step.failed else 0
        if streak == spec.max_failures:
            yield Violation(
                "failing_loop",
                spec.severity("failing_loop"),
                step.index,
                step.tool,
                f"{step.tool!r} failed {streak} times in a row (last error: {step.error})",
            )


def max_duration(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    if spec.max_duration is None or not traj.steps:
        return
    start = min(s.t for s in traj.steps)
    end = max(s.t + s.duration for s in traj.steps)
    if end - start > spec.max_duration:
        last = max(traj.steps, key=lambda s: s.t + s.duration)
        yield Violation(
            "max_duration",
            spec.severity("max_duration"),
            last.index,
            last.tool,
            f"took {end - start:.3f} s, budget {spec.max_duration:g} s",
        )


def run_error(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    if traj.error is not None:
        yield Violation("run_error", spec.severity("run_error"), None, None, f"the run crashed: {traj.error}")


def max_parallel(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """At most ``max_parallel`` calls issued in one model turn; reported once per turn, at the first call
    over the limit. A step whose turn is unknown counts as a turn of its own."""
    if spec.max_parallel is None:
        return
    sizes = Counter(turn for turn in traj.model_turns if turn is not None)
    issued: Counter[int] = Counter()
    for step, turn in zip(traj.steps, traj.model_turns):
        if turn is None:
            continue
        issued[turn] += 1
        if issued[turn] == spec.max_parallel + 1:
            yield Violation(
                "max_parallel",
                spec.severity("max_parallel"),
                step.index,
                step.tool,
                f"{sizes[turn]} tool calls issued in one model turn, at most {spec.max_parallel} allowed",
            )


def parse_max_steps(keys: Keys) -> dict[str, Any]:
    return {"max_steps": keys.number("max_steps", int)}


def parse_max_failures(keys: Keys) -> dict[str, Any]:
    found = keys.number("max_failures", int)
    return {"max_failures": 3 if found is None else found}


def parse_max_duration(keys: Keys) -> dict[str, Any]:
    return {"max_duration": keys.number("max_duration", float)}


def parse_max_parallel(keys: Keys) -> dict[str, Any]:
    return {"max_parallel": keys.number("max_parallel", int)}

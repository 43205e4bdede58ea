"""Which tools were called: forbidden, required, unknown_tool."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from luckrate.core.step import Step, Trajectory
from luckrate.core.violation import Violation
from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys


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
    """A call to a tool outside the spec's tools, unless it is a hand-off (``hands_off``): the
    framework's own machinery for passing the run to another of its agents, not a tool of the spec."""
    if not spec.tools:
        return  # no vocabulary declared: nothing is unknown
    known = set(spec.tools)
    if known.issuperset([step.tool for step in traj.steps]):
        return  # the common case: who takes over from whom is worked out only when a tool is unknown
    following = _next_agents(traj.steps)
    for step, taker in zip(traj.steps, following):
        if step.tool in known:
            continue
        # No later step by another agent: the run may have gone to an agent that only answered, which the
        # source recorded running (``traj.agents``) though it made no step.
        takers = [taker] if taker is not None else [a for a in traj.agents if a != step.agent]
        if not any(hands_off(step, t) for t in takers):
            yield Violation(
                "unknown_tool",
                spec.severity("unknown_tool"),
                step.index,
                step.tool,
                f"called {step.tool!r}, which is not in the spec's tools",
            )


def _next_agents(steps: Sequence[Step]) -> list[str | None]:
    """For each step, the agent of the first later step made by another agent (None: none is). One pass
    from the end, keeping the nearest later agent and the first later one that differs from it."""
    out: list[str | None] = [None] * len(steps)
    nearest: str | None = None
    beyond: str | None = None
    for i in range(len(steps) - 1, -1, -1):
        agent = steps[i].agent
        out[i] = beyond if nearest == agent else nearest
        if agent is not None and agent != nearest:
            nearest, beyond = agent, nearest
    return out


_NON_WORD = re.compile(r"[^0-9a-z]+")


def hands_off(step: Step, taker: str | None) -> bool:
    """Whether ``step`` hands the run to ``taker``, the next other agent that made a step: the step is
    an agent's (``step.agent`` recorded) and names the taker, by an argument's value (LlamaIndex's
    ``handoff(to_agent=...)``, ADK's ``transfer_to_agent(agent_name=...)``) or at the end of its tool's
    name (``transfer_to_support_agent``). Without recorded agents nothing can be told apart."""
    if taker is None or step.agent is None:
        return False
    name = _NON_WORD.sub("_", taker.casefold()).strip("_")
    if not name:
        return False
    if _NON_WORD.sub("_", step.tool.casefold()).strip("_").endswith(name):
        return True
    return any(isinstance(v, str) and _NON_WORD.sub("_", v.casefold()).strip("_") == name for v in step.args.values())


def parse_required(keys: Keys) -> dict[str, Any]:
    return {"required": frozenset(keys.names("required"))}


def parse_forbidden(keys: Keys) -> dict[str, Any]:
    return {"forbidden": frozenset(keys.names("forbidden"))}

"""Builders for test trajectories (tests only)."""

from __future__ import annotations

from luckrate.core.step import Message, Step, Trajectory, numbered


def step(
    tool: str,
    args: dict | None = None,
    result: str | None = "ok",
    error: str | None = None,
    t: float = 0.0,
    duration: float = 0.0,
    agent: str | None = None,
) -> Step:
    return Step(0, tool, args or {}, None if error else result, error, t, duration, agent)


def run(
    *steps: Step,
    id: str = "r",
    case: str | None = None,
    input: str = "",
    output_ok: bool | None = True,
    content: bool = True,
    error: str | None = None,
    messages: tuple[tuple[str, str, int], ...] = (),
    turns: tuple[int | None, ...] = (),
) -> Trajectory:
    """``messages`` as ``(role, text, before_step)``; ``turns`` the model turn of each step."""
    return Trajectory(
        id,
        numbered(list(steps)),
        case,
        None,
        input,
        output_ok,
        content,
        error,
        tuple(Message(*m) for m in messages),
        tuple(turns),
    )

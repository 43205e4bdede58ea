"""Steps and trajectories: what every adapter produces and every check reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any

from luckrate.core.frozen import fast_init


@fast_init
@dataclass(frozen=True)
class Step:
    """One tool call the agent really made, the same shape for every source."""

    index: int
    """Position in the trajectory, 0-based, after ordering."""
    tool: str
    """The tool's name as the agent called it."""
    args: dict[str, Any] = field(default_factory=dict)
    """Arguments; a payload that could not be parsed into a dict is kept as ``{"input": <text>}``."""
    result: str | None = None
    """The result as text; None when the call never returned (or its content was not captured)."""
    error: str | None = None
    """None on success, else the error text (or the error type when no text was recorded)."""
    t: float = 0.0
    """Start, in seconds (epoch seconds for traced sources); 0.0 where the source has no clock."""
    duration: float = 0.0
    """Seconds from start to end; 0.0 where the source has no clock."""
    agent: str | None = None
    """The agent that made the call (multi-agent runs differ from the trajectory's agent)."""
    call_id: str | None = None
    """The model's tool-call id, when the source records one."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def succeeded(self) -> bool:
        return self.error is None and self.result is not None


USER = "user"
AGENT = "agent"


@fast_init
@dataclass(frozen=True)
class Message:
    """One message of the conversation between the user and the agent, placed among the steps."""

    role: str
    """``user``, or ``agent``: a model response with text and no tool calls, which hands the
    conversation back to the user (text beside tool calls is narration, not a message)."""
    text: str
    before_step: int
    """Index of the first step issued after the message (``len(steps)`` when no step follows)."""


@dataclass(frozen=True)
class Trajectory:
    """One run: its steps in order plus what identifies it and how its output was judged."""

    id: str
    """Run id; the trace id (32 hex digits) for OTLP sources."""
    steps: tuple[Step, ...] = ()
    """The tool calls, ordered; ``steps[i].index == i``."""
    case: str | None = None
    """Runs of the same case share it; None means the run is its own case (see ``case_id``)."""
    agent: str | None = None
    """The root agent's name; selects the spec in a ``SPECS`` mapping."""
    input: str | tuple[str, ...] = ""
    """The user's task text (one string, or several user messages)."""
    output_ok: bool | None = None
    """The output eval's verdict: True passed, False failed, None not judged."""
    content: bool = True
    """False when the source recorded no arguments/results (content capture off): provenance is unavailable."""
    error: str | None = None
    """Set when the run itself crashed (suite runner); graded as ``run_error``."""
    messages: tuple[Message, ...] = ()
    """The user's and the agent's messages in order, each placed among the steps; empty when the
    source recorded none (``confirm`` is then skipped)."""
    model_turns: tuple[int | None, ...] = ()
    """Beside ``steps``, one entry per step: the model turn (one model response) that issued it, so
    steps sharing a number were issued in parallel; None where that step's turn is unknown. Empty
    when the source does not record turns (``max_parallel`` is then skipped)."""
    agents: tuple[str, ...] = ()
    """Every agent the source recorded running in the run, in the order they started, those that made no
    step too (an agent handed the run only to write the answer); empty when the source records none beyond
    ``agent`` and the steps' ``agent``."""
    tool_classes: tuple[str, ...] = ()
    """Step names that are the class implementing a tool, not its name (a source that recorded only the class):
    grading reads each as the spec's tool it names (core/tool_classes.py). Empty for most sources."""

    def __post_init__(self) -> None:
        if self.model_turns and len(self.model_turns) != len(self.steps):
            raise ValueError(f"model_turns has {len(self.model_turns)} entries for {len(self.steps)} steps")

    @property
    def case_id(self) -> str:
        return self.case if self.case is not None else self.id

    @property
    def has_clock(self) -> bool:
        """True when the source recorded real timestamps (``clocked``)."""
        return clocked(self.steps)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.input,) if isinstance(self.input, str) else tuple(self.input)


def numbered(steps: list[Step] | tuple[Step, ...]) -> tuple[Step, ...]:
    """Return the steps with ``index`` set to their position (adapters order first, then number)."""
    from dataclasses import replace

    return tuple(s if s.index == i else replace(s, index=i) for i, s in enumerate(steps))


def clocked(steps: Iterable[Step]) -> bool:
    """True when the steps carry real timestamps (any with a start or a duration)."""
    return any(s.t > 0.0 or s.duration > 0.0 for s in steps)

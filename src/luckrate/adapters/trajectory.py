"""luckrate's own file form: one JSON object per file, or JSON Lines (one trajectory a line).

    {"id": "run-7", "case": "refund", "agent": "support", "input": "Please refund order ORD-12345",
     "output_ok": true, "steps": [{"tool": "lookup_order", "args": {"order_id": "ORD-12345"}, ...}]}

In a step only ``tool`` is required; missing fields take their defaults. Beside the steps a run may
carry ``messages`` (``[{"role": "user"|"agent", "text": ..., "before_step": N}]``, the conversation placed
among the steps) and ``model_turns`` (one entry per step: the model turn that issued it, or null). Without
``input``, the user's messages are the input.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.documents import json_documents
from luckrate.core.step import AGENT, USER, Message, Step, Trajectory, numbered

_STEP_FIELDS = {"index", "tool", "args", "result", "error", "t", "duration", "agent", "call_id"}
_RUN_FIELDS = {"id", "case", "agent", "input", "output_ok", "steps", "content", "error", "messages", "model_turns"}


def trajectory_from_dict(obj: Any) -> Trajectory:
    """Build a trajectory from the file form; raise InvalidInput naming the field at fault."""
    if not isinstance(obj, dict):
        raise InvalidInput(f"expected a JSON object, got {type(obj).__name__}")
    run_id = obj.get("id")
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput("missing 'id' (a non-empty string)")
    steps = obj.get("steps", [])
    if not isinstance(steps, list):
        raise InvalidInput(f"run {run_id!r}: 'steps' must be a list")
    output_ok = obj.get("output_ok")
    if output_ok is not None and not isinstance(output_ok, bool):
        raise InvalidInput(f"run {run_id!r}: 'output_ok' must be true, false or null")
    user_input = obj.get("input", "")
    if isinstance(user_input, list) and all(isinstance(x, str) for x in user_input):
        user_input = tuple(user_input)
    elif not isinstance(user_input, str):
        raise InvalidInput(f"run {run_id!r}: 'input' must be a string or a list of strings")
    for key in ("case", "agent", "error"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise InvalidInput(f"run {run_id!r}: '{key}' must be a string or null")
    messages = _messages(obj.get("messages", []), run_id, len(steps))
    if "input" not in obj and messages:
        user_input = tuple(m.text for m in messages if m.role == USER)
    return Trajectory(
        id=run_id,
        steps=numbered([_step(s, run_id, i) for i, s in enumerate(steps)]),
        messages=messages,
        model_turns=_model_turns(obj.get("model_turns", []), run_id, len(steps)),
        case=obj.get("case"),
        agent=obj.get("agent"),
        input=user_input,
        output_ok=output_ok,
        content=bool(obj.get("content", True)),
        error=obj.get("error"),
    )


def _step(obj: Any, run_id: str, i: int) -> Step:
    where = f"run {run_id!r} steps[{i}]"
    if not isinstance(obj, dict):
        raise InvalidInput(f"{where}: expected an object")
    tool = obj.get("tool")
    if not isinstance(tool, str) or not tool:
        raise InvalidInput(f"{where}: missing 'tool' (a non-empty string)")
    args = obj.get("args") or {}
    if not isinstance(args, dict):
        raise InvalidInput(f"{where}: 'args' must be an object")
    for key in ("result", "error", "agent", "call_id"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise InvalidInput(f"{where}: '{key}' must be a string or null")
    for key in ("t", "duration"):
        value = obj.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInput(f"{where}: '{key}' must be a number")
    return Step(
        index=i,
        tool=tool,
        args=args,
        result=obj.get("result"),
        error=obj.get("error"),
        t=float(obj.get("t", 0.0)),
        duration=float(obj.get("duration", 0.0)),
        agent=obj.get("agent"),
        call_id=obj.get("call_id"),
    )


def _messages(value: Any, run_id: str, steps: int) -> tuple[Message, ...]:
    if not isinstance(value, list):
        raise InvalidInput(f"run {run_id!r}: 'messages' must be a list")
    out, last = [], 0
    for i, m in enumerate(value):
        where = f"run {run_id!r} messages[{i}]"
        if not isinstance(m, dict):
            raise InvalidInput(f"{where}: expected an object")
        if m.get("role") not in (USER, AGENT):
            raise InvalidInput(f"{where}: 'role' must be \"user\" or \"agent\"")
        if not isinstance(m.get("text"), str):
            raise InvalidInput(f"{where}: missing 'text' (a string)")
        at = m.get("before_step")
        if isinstance(at, bool) or not isinstance(at, int) or not last <= at <= steps:
            raise InvalidInput(f"{where}: 'before_step' must be an integer from {last} to {steps} (messages in order)")
        out.append(Message(m["role"], m["text"], at))
        last = at
    return tuple(out)


def _model_turns(value: Any, run_id: str, steps: int) -> tuple[int | None, ...]:
    if value == []:
        return ()
    if not isinstance(value, list) or len(value) != steps:
        raise InvalidInput(f"run {run_id!r}: 'model_turns' must be a list with one entry per step ({steps})")
    for i, turn in enumerate(value):
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
            raise InvalidInput(f"run {run_id!r} model_turns[{i}]: must be an integer or null")
    return tuple(value)


def trajectory_to_dict(traj: Trajectory) -> dict[str, Any]:
    """The file form of a trajectory (what ``luckrate convert`` prints)."""
    out: dict[str, Any] = {
        "id": traj.id,
        "case": traj.case,
        "agent": traj.agent,
        "input": traj.input if isinstance(traj.input, str) else list(traj.input),
        "output_ok": traj.output_ok,
        "steps": [asdict(s) for s in traj.steps],
    }
    if traj.messages:
        out["messages"] = [asdict(m) for m in traj.messages]
    if traj.model_turns:
        out["model_turns"] = list(traj.model_turns)
    if not traj.content:
        out["content"] = False
    if traj.error is not None:
        out["error"] = traj.error
    return out


def read_trajectories(text: str, source: str) -> Iterator[Trajectory]:
    """Read one JSON object, or JSON Lines; errors name ``source`` and, for JSONL, the line."""
    for where, obj in json_documents(text, source)[1]:
        try:
            yield trajectory_from_dict(obj)
        except InvalidInput as e:
            raise e.at(where) from None


def read_file(data: bytes, source: str) -> list[Trajectory]:
    """The CLI reader for ``--format trajectory``."""
    from luckrate.adapters.formats import decode_text

    return list(read_trajectories(decode_text(data, source), source))

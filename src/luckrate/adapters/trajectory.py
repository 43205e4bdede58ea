"""luckrate's own file form: one JSON object per file, or JSON Lines (one trajectory a line).

    {"id": "run-7", "case": "refund", "agent": "support", "input": "Please refund order ORD-12345",
     "output_ok": true, "steps": [{"tool": "lookup_order", "args": {"order_id": "ORD-12345"}, ...}]}

In a step only ``tool`` is required; missing fields take their defaults. Beside the steps a run may
carry ``messages`` (``[{"role": "user"|"agent", "text": ..., "before_step": N}]``, the conversation placed
among the steps), ``model_turns`` (one entry per step: the model turn that issued it, or null) and
``tool_classes`` (step tool names that are the class implementing a tool, not its name: each is graded as the
spec's tool it names). Without ``input``, the user's messages are the input.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.documents import json_documents
from luckrate.core.step import AGENT, USER, Message, Step, Trajectory, numbered

_STEP_FIELDS = {"index", "tool", "args", "result", "error", "t", "duration", "agent", "call_id"}
_RUN_FIELDS = {
    "id",
    "case",
    "agent",
    "input",
    "output_ok",
    "steps",
    "content",
    "error",
    "messages",
    "model_turns",
    "agents",
    "tool_classes",
}
_MESSAGE_FIELDS = {"role", "text", "before_step"}

Problems = list[tuple[str, str]]
"""``(location inside the run, message)``; the location is "" for the run itself."""


def trajectory_from_dict(obj: Any) -> Trajectory:
    """Build a trajectory from the file form; raise InvalidInput naming every field at fault.

    An unknown key is a problem (with the closest known key suggested), not dropped: a misspelt
    ``"stpes"`` would otherwise grade the run as having no steps.
    """
    if not isinstance(obj, dict):
        raise InvalidInput(f"expected a JSON object, got {type(obj).__name__}")
    run_id = obj.get("id")
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput("missing 'id' (a non-empty string)")
    problems: Problems = []
    _unknown_keys(obj, _RUN_FIELDS, "", problems)
    steps = obj.get("steps", [])
    if not isinstance(steps, list):
        problems.append(("", f"'steps' must be a list, got {_json_type(steps)}"))
        steps = []
    output_ok = obj.get("output_ok")
    if output_ok is not None and not isinstance(output_ok, bool):
        problems.append(("", "'output_ok' must be true, false or null"))
    content = obj.get("content", True)
    if not isinstance(content, bool):
        problems.append(("", f"'content' must be true or false, got {_json_type(content)}"))
    user_input = obj.get("input", "")
    if isinstance(user_input, list) and all(isinstance(x, str) for x in user_input):
        user_input = tuple(user_input)
    elif not isinstance(user_input, str):
        problems.append(("", "'input' must be a string or a list of strings"))
    for key in ("case", "agent", "error"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            problems.append(("", f"'{key}' must be a string or null"))
    built = [_step(s, i, problems) for i, s in enumerate(steps)]
    messages = _messages(obj.get("messages", []), len(steps), problems)
    model_turns = _model_turns(obj.get("model_turns", []), len(steps), problems)
    agents = obj.get("agents", [])
    if not isinstance(agents, list) or not all(isinstance(a, str) and a for a in agents):
        problems.append(("", "'agents' must be a list of non-empty strings"))
        agents = []
    classes = obj.get("tool_classes", [])
    if not isinstance(classes, list) or not all(isinstance(c, str) and c for c in classes):
        problems.append(("", "'tool_classes' must be a list of non-empty strings"))
        classes = []
    if problems:
        raise _invalid(run_id, problems)
    if "input" not in obj and messages:
        user_input = tuple(m.text for m in messages if m.role == USER)
    return Trajectory(
        id=run_id,
        steps=numbered([s for s in built if s is not None]),
        messages=messages,
        model_turns=model_turns,
        agents=tuple(agents),
        tool_classes=tuple(dict.fromkeys(classes)),
        case=obj.get("case"),
        agent=obj.get("agent"),
        input=user_input,
        output_ok=output_ok,
        content=content,
        error=obj.get("error"),
    )


def _invalid(run_id: str, problems: Problems) -> InvalidInput:
    """One problem as ``run 'x' steps[0]: ...``; several as ``2 problems in run 'x'`` and one line each."""
    if len(problems) == 1:
        where, message = problems[0]
        return InvalidInput(f"run {run_id!r}{' ' + where if where else ''}: {message}")
    lines = [f"  {where}: {message}" if where else f"  {message}" for where, message in problems]
    return InvalidInput("\n".join([f"{len(problems)} problems in run {run_id!r}", *lines]))


def _unknown_keys(obj: dict, known: set[str], where: str, problems: Problems) -> None:
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((where, f"unknown key {str(key)[:100]!r}{hint}"))


def _json_type(value: Any) -> str:
    """The JSON name of a value's type, for "must be ..., got string"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _step(obj: Any, i: int, problems: Problems) -> Step | None:
    where = f"steps[{i}]"
    if not isinstance(obj, dict):
        problems.append((where, "expected an object"))
        return None
    before = len(problems)
    _unknown_keys(obj, _STEP_FIELDS, where, problems)
    tool = obj.get("tool")
    if not isinstance(tool, str) or not tool:
        problems.append((where, "missing 'tool' (a non-empty string)"))
    args = obj.get("args") or {}
    if not isinstance(args, dict):
        problems.append((where, "'args' must be an object"))
    for key in ("result", "error", "agent", "call_id"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            problems.append((where, f"'{key}' must be a string or null"))
    for key in ("t", "duration"):
        value = obj.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append((where, f"'{key}' must be a number"))
    if len(problems) > before or not isinstance(tool, str):
        return None
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


def _messages(value: Any, steps: int, problems: Problems) -> tuple[Message, ...]:
    if not isinstance(value, list):
        problems.append(("", "'messages' must be a list"))
        return ()
    out, last = [], 0
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            problems.append((where, "expected an object"))
            continue
        before = len(problems)
        _unknown_keys(m, _MESSAGE_FIELDS, where, problems)
        if m.get("role") not in (USER, AGENT):
            problems.append((where, '\'role\' must be "user" or "agent"'))
        if not isinstance(m.get("text"), str):
            problems.append((where, "missing 'text' (a string)"))
        at = m.get("before_step")
        if isinstance(at, bool) or not isinstance(at, int) or not last <= at <= steps:
            problems.append((where, f"'before_step' must be an integer from {last} to {steps} (messages in order)"))
        elif len(problems) == before:
            out.append(Message(m["role"], m["text"], at))
            last = at
    return tuple(out)


def _model_turns(value: Any, steps: int, problems: Problems) -> tuple[int | None, ...]:
    if value == []:
        return ()
    if not isinstance(value, list) or len(value) != steps:
        problems.append(("", f"'model_turns' must be a list with one entry per step ({steps})"))
        return ()
    for i, turn in enumerate(value):
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
            problems.append((f"model_turns[{i}]", "must be an integer or null"))
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
    if traj.agents:
        out["agents"] = list(traj.agents)
    if traj.tool_classes:
        out["tool_classes"] = list(traj.tool_classes)
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

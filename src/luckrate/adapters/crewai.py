"""CrewAI tool-usage events -> trajectories.

Reads the events CrewAI's event bus emits for tool calls, as objects (by attribute, without importing
crewai) or as dicts in the ``event.model_dump(mode="json")`` form:

- ``tool_usage_started`` opens a step: ``tool_name``, ``tool_args`` (an object; a string is parsed
  as JSON, else kept as ``{"input": <text>}``), ``agent_role`` (the step's ``agent``), ``task_name``;
- ``tool_usage_finished`` gives its ``output`` (a ``failure`` on it makes the step failed);
- ``tool_usage_error`` gives its ``error`` text.

Other event types are skipped, so a listener may dump everything it sees.

Pairing: an end event names its start in ``started_event_id`` (CrewAI fills it in when it emits);
without one, it closes the earliest open start of the same tool, arguments and agent. A start that
never ended is still a step (result None); an end whose start is missing is a step of its own.

Order: one key for the whole run, never mixed per event (the two live in different number spaces):
``emission_sequence`` when every tool event has one, else ``timestamp`` when every tool event has one,
else the order of the list; ties keep list order. Steps are in the order of their starts. ``t`` is the start's ``timestamp`` in epoch
seconds (a time without zone is UTC); ``duration`` comes from ``started_at``/``finished_at``, else
from the two events' timestamps.

Model turns: CrewAI runs the calls of one model turn together and waits for all of them before asking
the model again, so a call started while another call of the same agent is still open was issued in
that call's turn. Messages: the tool-usage events record no human input (a task's ``human_input`` is
asked on the console), so ``messages`` stays empty and ``confirm`` is skipped.

The run's ``input`` is the task descriptions (``task_name``) in order of first use; its ``agent`` is the
one given, else the agents' role when every step has the same one, else None (the ``*`` spec).

File form read by ``read_crewai`` and ``read_file`` (the CLI's ``--format crewai``):

- a JSON object ``{"id", "case", "agent", "output_ok", "input", "events": [...]}`` (only ``events``
  required; ``id`` defaults to the file name);
- a JSON list of events: one run, its id the file name;
- JSON Lines: one run object a line (``id`` defaults to ``<file>:<line>``), or one event a line (the
  whole file is one run, as a listener appending events writes it).

Malformed input raises ``InvalidInput`` naming the file, line, event index and field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.documents import json_documents, run_header, user_input
from luckrate.adapters.formats import loads_json
from luckrate.core.step import Step, Trajectory, numbered

STARTED, FINISHED, ERROR = "tool_usage_started", "tool_usage_finished", "tool_usage_error"


@dataclass(frozen=True)
class _Event:
    """One tool-usage event, validated; ``position`` is its index in the input."""

    position: int
    type: str
    tool: str
    args: dict[str, Any]
    role: str | None
    task: str | None
    event_id: str | None
    started_event_id: str | None
    sequence: int | None
    time: float | None
    started_at: float | None
    finished_at: float | None
    output: str | None
    error: str | None


def trajectory_from_events(
    events: Sequence[Any],
    *,
    id: str,
    case: str | None = None,
    agent: str | None = None,
    output_ok: bool | None = None,
    input: str | tuple[str, ...] | None = None,
) -> Trajectory:
    """Build one run's trajectory from its tool-usage events (objects or ``model_dump`` dicts)."""
    if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Sequence):
        raise InvalidInput(f"expected a list of events, got {type(events).__name__}")
    parsed = [e for i, raw in enumerate(events) if (e := _read(raw, i)) is not None]
    calls = _pair(parsed)
    steps = [_step(start, end) for start, end in calls]
    turns = _model_turns(calls, _run_order(parsed)) if parsed else ()
    tasks = list(dict.fromkeys(e.task for start, end in calls if (e := _first(start, end)).task))
    roles = {s.agent for s in steps}
    return Trajectory(
        id=id,
        steps=numbered(steps),
        case=case,
        agent=agent if agent is not None else (roles.pop() if len(roles) == 1 else None),
        input=input if input is not None else (tasks[0] if len(tasks) == 1 else tuple(tasks)),
        output_ok=output_ok,
        model_turns=turns,
    )


def _model_turns(calls: list[tuple[_Event | None, _Event | None]], rank: dict[int, int]) -> tuple[int | None, ...]:
    """Per call in run order: its turn, shared with the agent's calls still open when it started."""
    open_turn: dict[str | None, tuple[int, float]] = {}  # agent role -> (turn, rank its last call ends at)
    turns: list[int | None] = []
    count = 0
    for start, end in calls:
        if start is None:
            turns.append(None)
            continue
        begins, ends = rank[start.position], rank[end.position] if end is not None else float("inf")
        current = open_turn.get(start.role)
        if current is not None and current[1] > begins:
            turn = current[0]
            open_turn[start.role] = (turn, max(current[1], ends))
        else:
            turn, count = count, count + 1
            open_turn[start.role] = (turn, ends)
        turns.append(turn)
    return tuple(turns)


def _getter(raw: Any, i: int):
    if isinstance(raw, Mapping):
        return raw.get
    if isinstance(raw, (str, bytes, int, float, list)) or raw is None:
        raise InvalidInput(f"events[{i}]: expected an event object, got {type(raw).__name__}")
    return lambda name, default=None: getattr(raw, name, default)


def _read(raw: Any, i: int) -> _Event | None:
    get = _getter(raw, i)
    kind = get("type")
    if not isinstance(kind, str) or not kind:
        raise InvalidInput(f"events[{i}]: missing 'type' (e.g. {STARTED!r})")
    if kind not in (STARTED, FINISHED, ERROR):
        return None
    tool = get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise InvalidInput(f"events[{i}]: missing 'tool_name' (a non-empty string)")
    return _Event(
        position=i,
        type=kind,
        tool=tool,
        args=_args(get("tool_args"), f"events[{i}].tool_args"),
        role=_optional_str(get, "agent_role", i),
        task=_optional_str(get, "task_name", i),
        event_id=_optional_str(get, "event_id", i),
        started_event_id=_optional_str(get, "started_event_id", i),
        sequence=_sequence(get("emission_sequence"), i),
        time=_time(get("timestamp"), f"events[{i}].timestamp"),
        started_at=_time(get("started_at"), f"events[{i}].started_at"),
        finished_at=_time(get("finished_at"), f"events[{i}].finished_at"),
        output=_output(get("output")) if kind == FINISHED else None,
        error=_error(get) if kind != STARTED else None,
    )


def _optional_str(get, name: str, i: int) -> str | None:
    value = get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"events[{i}].{name}: expected a string or null, got {type(value).__name__}")
    return value


def _args(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = loads_json(value)
        except json.JSONDecodeError:
            parsed = None
        return dict(parsed) if isinstance(parsed, dict) else {"input": value}
    raise InvalidInput(f"{where}: expected an object or a string, got {type(value).__name__}")


def _sequence(value: Any, i: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"events[{i}].emission_sequence: expected an integer, got {type(value).__name__}")
    return value


def _time(value: Any, where: str) -> float | None:
    """Epoch seconds from a datetime or an ISO 8601 string; a time without zone is UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{where}: not an ISO 8601 time: {value[:40]!r}") from None
    if not isinstance(value, datetime):
        raise InvalidInput(f"{where}: expected an ISO 8601 time, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _output(value: Any) -> str | None:
    return None if value is None else _text(value)


def _error(get) -> str | None:
    error = get("error")
    if get("type") == ERROR:
        if error is None:
            return "error"
        return error if isinstance(error, str) else (str(error) if isinstance(error, BaseException) else _text(error))
    failure = get("failure")
    if failure is None:
        return None
    message = failure.get("message") if isinstance(failure, Mapping) else getattr(failure, "message", None)
    return message if isinstance(message, str) and message else _text(failure)


def _pair(events: list[_Event]) -> list[tuple[_Event | None, _Event | None]]:
    """(start, end) per call, in run order; a start never ended has end None, a lone end start None.

    Events are first put in run order, so an end listed before its start still finds it."""
    rank = _run_order(events)
    ordered = sorted(events, key=lambda e: rank[e.position])
    starts = [e for e in ordered if e.type == STARTED]
    calls: list[list[_Event | None]] = [[e, None] for e in starts]
    by_id = {start.event_id: k for k, start in enumerate(starts) if start.event_id is not None}
    for end in (e for e in ordered if e.type != STARTED):
        k = by_id.get(end.started_event_id) if end.started_event_id is not None else _open_start(end, calls, rank)
        if k is None:
            calls.append([None, end])
        elif calls[k][1] is not None:
            raise InvalidInput(
                f"events[{end.position}]: second end for the call started at events[{starts[k].position}]"
            )
        else:
            calls[k][1] = end
    calls.sort(key=lambda call: rank[_first(call[0], call[1]).position])
    return [(start, end) for start, end in calls]


def _open_start(end: _Event, calls: list[list[_Event | None]], rank: dict[int, int]) -> int | None:
    """Without a ``started_event_id``: the earliest open start of the same call that came before."""
    for k, (start, other) in enumerate(calls):
        if (
            other is None
            and start is not None  # a lone end's entry has no start, and is never open
            and rank[start.position] < rank[end.position]
            and (start.tool, start.args, start.role) == (end.tool, end.args, end.role)
        ):
            return k
    return None


def _run_order(events: list[_Event]) -> dict[int, int]:
    """Rank of each event (by position) under one key chosen for the whole run (see the module
    docstring); ties keep input order."""
    keys: dict[int, float]
    if all(e.sequence is not None for e in events):
        keys = {e.position: e.sequence for e in events if e.sequence is not None}  # the filter keeps them all
    elif all(e.time is not None for e in events):
        keys = {e.position: e.time for e in events if e.time is not None}
    else:
        keys = {e.position: e.position for e in events}
    order = sorted(keys, key=lambda p: (keys[p], p))
    return {p: r for r, p in enumerate(order)}


def _first(start: _Event | None, end: _Event | None) -> _Event:
    """The event that names a call: its start, else its end (``_pair`` makes no call without either)."""
    first = start or end
    assert first is not None, "a call with neither a start nor an end"
    return first


def _step(start: _Event | None, end: _Event | None) -> Step:
    first = _first(start, end)
    return Step(
        index=0,
        tool=first.tool,
        args=first.args,
        result=end.output if end is not None and end.error is None else None,
        error=end.error if end is not None else None,
        t=_start_time(start, end),
        duration=_duration(start, end),
        agent=first.role,
    )


def _start_time(start: _Event | None, end: _Event | None) -> float:
    if start is not None and start.time is not None:
        return start.time
    if end is not None and end.time is not None:
        # CrewAI writes started_at/finished_at without a zone (local time): good for a duration,
        # not for a start; the end's zoned timestamp minus the duration is.
        return end.time - _duration(start, end)
    return 0.0


def _duration(start: _Event | None, end: _Event | None) -> float:
    if end is None:
        return 0.0
    if end.started_at is not None and end.finished_at is not None:
        return max(0.0, end.finished_at - end.started_at)
    if start is not None and start.time is not None and end.time is not None:
        return max(0.0, end.time - start.time)
    return 0.0


def read_crewai(text: str, source: str) -> list[Trajectory]:
    """Read a ``--format crewai`` file (see the module docstring); errors name ``source``."""
    lines, docs = json_documents(text, source)
    if not lines:
        ((where, doc),) = docs
        return [_located(_run, doc, where)]
    for where, obj in docs:
        if not isinstance(obj, dict):
            raise InvalidInput(f"expected a run object or an event on each line, got {type(obj).__name__}", where)
    runs = [where for where, obj in docs if "events" in obj]
    if runs and len(runs) != len(docs):
        odd = next(where for where, obj in docs if ("events" in obj) != ("events" in docs[0][1]))
        raise InvalidInput("mixes run objects and bare events (use one or the other)", odd)
    if not runs:
        return [_events_run([obj for _, obj in docs], source, lines=[where for where, _ in docs])]
    return [_located(_run, obj, where) for where, obj in docs]


def _located(read, doc: Any, where: str) -> Trajectory:
    try:
        return read(doc, where)
    except InvalidInput as e:
        raise e.at(where) from None


_EVENT_AT = re.compile(r"^events\[(\d+)\](?:: |\.)(.*)$", re.S)


def _events_run(events: list[dict], source: str, lines: list[str]) -> Trajectory:
    """One run from a file of one event a line; an error names the event's line, not its index."""
    try:
        return trajectory_from_events(events, id=source)
    except InvalidInput as e:
        m = _EVENT_AT.match(e.problem)
        if m is None:
            raise e.at(source) from None
        raise InvalidInput(m.group(2), lines[int(m.group(1))]) from None


def _run(doc: Any, default_id: str) -> Trajectory:
    if isinstance(doc, list):
        return trajectory_from_events(doc, id=default_id)
    if not isinstance(doc, dict):
        raise InvalidInput(f"expected a list of events or a run object, got {type(doc).__name__}")
    if "events" not in doc:
        raise InvalidInput("run object without 'events'")
    return trajectory_from_events(doc["events"], **run_header(doc, default_id), input=user_input(doc.get("input")))


def read_file(data: bytes, source: str) -> list[Trajectory]:
    """The CLI reader for ``--format crewai``."""
    from luckrate.adapters.formats import decode_text

    return read_crewai(decode_text(data, source), source)

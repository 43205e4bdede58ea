"""LangGraph / LangChain message lists -> trajectories.

Reads langchain-core message objects by their attributes (``type``, ``content``, ``tool_calls``,
``invalid_tool_calls``, ``tool_call_id``, ``status``) without importing langchain, or their dict form
as ``langchain_core.messages.messages_to_dict`` writes it (``{"type": "ai", "data": {...}}``; a flat
``message.model_dump()`` dict is read too).

- A step is appended when an AI message issues the tool call, not when its result arrives, so a call
  that never got a result is still a step (result None). Results are matched by ``tool_call_id``
  to the earliest issued call with that id still waiting for one.
- A tool message with ``status == "error"`` makes the step failed: ``error`` is its text.
- An ``invalid_tool_calls`` entry (arguments the model produced but LangChain could not parse) is a
  step too: the agent did ask for the tool. It never ran, so it is failed with the parse error.
- Human messages are the input (one string, or a tuple when there are several), and each is a user
  ``Message`` placed among the steps; an AI message with text and no tool calls is an agent ``Message``.
- The tool calls of one AI message were issued in one model turn: ``model_turns`` holds, for each step,
  the index of the AI message that issued it.
- ``t`` and ``duration`` are 0.0: messages carry no clock, and order is list position.

File form read by ``read_langgraph`` and ``read_file`` (the CLI's ``--format langgraph``):

- a JSON list of message dicts: one run, its id the file name;
- a JSON object ``{"id", "case", "agent", "output_ok", "messages": [...]}`` (only ``messages``
  required; ``id`` defaults to the file name);
- JSON Lines of such objects, one run a line (``id`` defaults to ``<file>:<line>``).

Malformed input raises ``InvalidInput`` naming the file, line, message index and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.documents import json_documents, run_header
from luckrate.core.step import AGENT, USER, Message, Step, Trajectory, numbered

_AI = {"ai", "AIMessageChunk"}
_HUMAN = {"human", "HumanMessageChunk"}
_TOOL = {"tool", "ToolMessageChunk"}


@dataclass(frozen=True)
class _Message:
    """The fields the adapter reads, whichever form the message came in."""

    kind: str
    content: Any
    tool_calls: Any
    invalid_tool_calls: Any
    tool_call_id: Any
    status: Any


def trajectory_from_messages(
    messages: Sequence[Any],
    *,
    id: str,
    case: str | None = None,
    agent: str | None = None,
    output_ok: bool | None = None,
) -> Trajectory:
    """Build one run's trajectory from its message list (objects or ``messages_to_dict`` dicts)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidInput(f"expected a list of messages, got {type(messages).__name__}")
    steps: list[Step] = []
    inputs: list[str] = []
    said: list[Message] = []
    turns: list[int] = []
    for i, raw in enumerate(messages):
        message = _read(raw, i)
        if message.kind in _HUMAN:
            inputs.append(_text(message.content, f"messages[{i}].content"))
            said.append(Message(USER, inputs[-1], len(steps)))
        elif message.kind in _AI:
            issued = _issued(message, i, len(steps))
            steps.extend(issued)
            turns.extend([i] * len(issued))
            text = "" if issued else _text(message.content, f"messages[{i}].content")
            if text.strip():
                said.append(Message(AGENT, text, len(steps)))
        elif message.kind in _TOOL:
            _answer(steps, message, i)
    return Trajectory(
        id=id,
        steps=numbered(steps),
        case=case,
        agent=agent,
        input=inputs[0] if len(inputs) == 1 else tuple(inputs),
        output_ok=output_ok,
        messages=tuple(said),
        model_turns=tuple(turns),
    )


def _read(raw: Any, i: int) -> _Message:
    if isinstance(raw, Mapping):
        data = raw.get("data", raw)
        if not isinstance(data, Mapping):
            raise InvalidInput(f"messages[{i}].data: expected an object, got {type(data).__name__}")
        kind = raw.get("type", data.get("type"))
        get = data.get
    else:
        kind = getattr(raw, "type", None)

        def get(name: str, default: Any = None) -> Any:
            return getattr(raw, name, default)

    if not isinstance(kind, str) or not kind:
        raise InvalidInput(f"messages[{i}]: missing 'type' (human, ai, tool, system, ...)")
    return _Message(
        kind=kind,
        content=get("content", ""),
        tool_calls=get("tool_calls") or [],
        invalid_tool_calls=get("invalid_tool_calls") or [],
        tool_call_id=get("tool_call_id"),
        status=get("status"),
    )


def _issued(message: _Message, i: int, first: int) -> list[Step]:
    """The steps one AI message issues: its tool calls, then its unparseable ones."""
    steps: list[Step] = []
    for field, calls in (("tool_calls", message.tool_calls), ("invalid_tool_calls", message.invalid_tool_calls)):
        if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes)):
            raise InvalidInput(f"messages[{i}].{field}: expected a list, got {type(calls).__name__}")
        for j, call in enumerate(calls):
            where = f"messages[{i}].{field}[{j}]"
            step = _call(call, where) if field == "tool_calls" else _invalid_call(call, where)
            steps.append(replace(step, index=first + len(steps)))
    return steps


def _field(call: Any, name: str) -> Any:
    return call.get(name) if isinstance(call, Mapping) else getattr(call, name, None)


def _name_and_id(call: Any, where: str) -> tuple[str, str | None]:
    name = _field(call, "name")
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"{where}: missing 'name' (a non-empty string)")
    call_id = _field(call, "id")
    if call_id is not None and not isinstance(call_id, str):
        raise InvalidInput(f"{where}.id: expected a string or null, got {type(call_id).__name__}")
    return name, call_id


def _call(call: Any, where: str) -> Step:
    name, call_id = _name_and_id(call, where)
    args = _field(call, "args")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise InvalidInput(f"{where}.args: expected an object, got {type(args).__name__}")
    return Step(index=0, tool=name, args=dict(args), call_id=call_id)


def _invalid_call(call: Any, where: str) -> Step:
    name, call_id = _name_and_id(call, where)
    args = _field(call, "args")
    error = _field(call, "error")
    return Step(
        index=0,
        tool=name,
        args={} if args is None else {"input": str(args)},
        error=f"invalid tool call: {error}" if error else "invalid tool call",
        call_id=call_id,
    )


def _answer(steps: list[Step], message: _Message, i: int) -> None:
    """Put a tool message's result (or error) on the earliest waiting step with its call id."""
    call_id = message.tool_call_id
    if not isinstance(call_id, str) or not call_id:
        raise InvalidInput(f"messages[{i}]: tool message without 'tool_call_id'")
    issued = [k for k, s in enumerate(steps) if s.call_id == call_id]
    if not issued:
        raise InvalidInput(f"messages[{i}]: result for call id {call_id!r}, which no earlier AI message issued")
    waiting = [k for k in issued if steps[k].result is None and steps[k].error is None]
    if not waiting:
        raise InvalidInput(f"messages[{i}]: second result for call id {call_id!r}")
    text = _text(message.content, f"messages[{i}].content")
    k = waiting[0]
    if message.status == "error":
        steps[k] = replace(steps[k], error=text or "error")
    else:
        steps[k] = replace(steps[k], result=text)


def _text(content: Any, where: str) -> str:
    """Message content as text: a string, or the text of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return "".join(_block_text(block) for block in content)
    if content is None:
        return ""
    raise InvalidInput(f"{where}: expected a string or a list of content blocks, got {type(content).__name__}")


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    # Non-text blocks (images, tool_use echoes) still carry values the checks may need: keep them as JSON.
    return json.dumps(block, sort_keys=True, default=str)


def read_langgraph(text: str, source: str) -> list[Trajectory]:
    """Read a ``--format langgraph`` file (see the module docstring); errors name ``source``."""
    lines, docs = json_documents(text, source)
    for where, doc in docs:
        if lines and not isinstance(doc, dict):
            raise InvalidInput(f"expected a run object on each line, got {type(doc).__name__}", where)
    return [_located(doc, where) for where, doc in docs]


def _located(doc: Any, where: str) -> Trajectory:
    try:
        return _run(doc, where)
    except InvalidInput as e:
        raise e.at(where) from None


def _run(doc: Any, default_id: str) -> Trajectory:
    if isinstance(doc, list):
        return trajectory_from_messages(doc, id=default_id)
    if not isinstance(doc, dict):
        raise InvalidInput(f"expected a list of messages or a run object, got {type(doc).__name__}")
    if "messages" not in doc:
        raise InvalidInput("run object without 'messages'")
    return trajectory_from_messages(doc["messages"], **run_header(doc, default_id))


def read_file(data: bytes, source: str) -> list[Trajectory]:
    """The CLI reader for ``--format langgraph``."""
    from luckrate.adapters.formats import decode_text

    return read_langgraph(decode_text(data, source), source)

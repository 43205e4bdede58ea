"""n8n executions -> trajectories.

Reads an execution as n8n's public API returns it with its data
(``GET /api/v1/executions/{id}?includeData=true``: ``data`` is an object), and n8n's stored form (the
``execution_data`` row, and the internal ``/rest/executions/{id}`` answer: ``data`` is a *flatted*
string, ``workflowData`` an object or JSON text). A payload is one execution, a list of them, or the
API's listing ``{"data": [...], "nextCursor": ...}``; each execution becomes one trajectory.

- A tool call is a run entry whose ``inputOverride`` has an ``ai_tool`` input: that is how n8n logs a
  tool sub-node's call, whatever the node's type, so any node used as a tool counts and there is no
  list of node names. Tool name = node name (n8n derives the model-facing tool name from it).
- Arguments: the ``ai_tool`` input item. AI Agent 3.x hands the tool its arguments as the item; older
  agents (LangChain runs the tool) log ``{"query": <arguments>}``, unwrapped when ``query`` is an object.
- Result: the ``ai_tool`` output item's ``response`` (text as is, anything else as JSON); error: the
  run entry's ``error.message``.
- Order: by ``executionIndex`` when every run entry of the execution carries one, else by
  ``startTime`` for all of them. One key per execution, never per entry: the two live in different
  number spaces (a counter vs epoch milliseconds), and AI Agent 3.x records its own entry after its
  tools', so mixing them scrambles the order.
- ``t``/``duration``: ``startTime``/``executionTime`` (ms) in seconds. Trajectory id = execution id;
  trajectory agent = the workflow's name (node names such as "AI Agent" repeat across workflows, so they
  cannot select a spec), else the agent node's name; each step's ``agent`` = the node the tool reports
  to (its ``source`` node). Input = ``chatInput`` of the items that fed the agent (the Chat Trigger's
  field, and the agent's default prompt). ``output_ok`` is None: n8n does not judge outputs.
- Messages: each chat message is an execution of its own, so all of an execution's messages come before
  its first step: the conversation the first model call was prompted with (n8n logs the prompt as
  ``System: ...\nHuman: ...\nAI: ...`` text; with chat memory it holds the earlier turns, so a "yes"
  follows the agent's question), else the chat message that started the execution. Model turns: a run entry with an ``ai_languageModel`` input is one
  model call; the tool calls after it, up to the next, were issued in its turn.
- ``call_id`` is None: n8n keeps the model's tool-call id only in the agent's metadata, not on the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.formats import decode_text, loads_json
from luckrate.core.step import AGENT, USER, Message, Step, Trajectory, numbered

MAX_FLATTED_ENTRIES = 1_000_000
"""Stored payloads are attacker-influenced: refuse a flatted table larger than this."""


def read_file(data: bytes, source: str) -> list[Trajectory]:
    """The CLI reader for ``--format n8n``."""
    return read_n8n(decode_text(data, source), source)


def read_n8n(text: str, source: str) -> list[Trajectory]:
    """Parse a JSON file holding n8n execution(s); errors name ``source``."""
    try:
        payload = loads_json(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})", source) from None
    return trajectories_from_n8n(payload, source)


def trajectories_from_n8n(payload: Any, source: str) -> list[Trajectory]:
    """One trajectory per execution in ``payload``; raises InvalidInput naming source, execution, node, run."""
    executions = list(_executions(payload, source))
    if not executions:
        raise InvalidInput("no executions in payload", source)
    return [_trajectory(e, source, label) for label, e in executions]


def _executions(payload: Any, source: str) -> Iterator[tuple[str, dict]]:
    if isinstance(payload, dict) and isinstance(payload.get("data"), list) and "id" not in payload:
        items, label = payload["data"], "data"  # the API's listing
    elif isinstance(payload, list):
        items, label = payload, ""
    elif isinstance(payload, dict):
        yield "execution", payload
        return
    else:
        kind = type(payload).__name__
        raise InvalidInput(f"expected an execution object, a list or {{'data': [...]}}, got {kind}", source)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInput(f"expected an execution object, got {type(item).__name__}", f"{source}: {label}[{i}]")
        yield f"{label}[{i}]", item


def _trajectory(execution: dict, source: str, label: str) -> Trajectory:
    run_id = execution.get("id")
    if isinstance(run_id, int) and not isinstance(run_id, bool):
        run_id = str(run_id)
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput("missing 'id' (the execution id)", f"{source}: {label}")
    where = f"{source}: execution {run_id!r}"
    run_data = _run_data(execution, where)
    entries = _ordered(run_data, where)
    steps = [_step(node, i, entry, where) for node, i, entry in entries if _is_tool_call(entry)]
    agents = _agent_nodes(entries)
    user_input = _user_input(run_data, agents)
    return Trajectory(
        id=run_id,
        steps=numbered(steps),
        agent=_workflow_name(execution, where) or (agents[0] if agents else None),
        input=user_input,
        output_ok=None,
        messages=_prompted(entries)
        or tuple(
            Message(USER, text, 0) for text in ((user_input,) if isinstance(user_input, str) else user_input) if text
        ),
        model_turns=_model_turns(entries),
    )


_PROMPT_TURN = re.compile(r"(?:^|\n)(System|Human|AI|Tool): ")


def _prompted(entries: list[tuple[str, int, dict]]) -> tuple[Message, ...]:
    """The user's and the agent's messages in the first model call's prompt text (see the module docstring).
    An AI turn that is a JSON list is tool calls, not a message."""
    for _, _, entry in entries:
        override = entry.get("inputOverride")
        if not (isinstance(override, dict) and "ai_languageModel" in override):
            continue
        try:
            prompt = override["ai_languageModel"][0][0]["json"]["messages"][0]
        except (LookupError, TypeError):
            return ()
        if not isinstance(prompt, str):
            return ()
        parts = _PROMPT_TURN.split(prompt)  # ["", role, text, role, text, ...]
        out = []
        for role, text in zip(parts[1::2], parts[2::2]):
            if role == "Human" and text.strip():
                out.append(Message(USER, text, 0))
            elif role == "AI" and text.strip() and not text.lstrip().startswith("["):
                out.append(Message(AGENT, text, 0))
        return tuple(out)
    return ()


def _model_turns(entries: list[tuple[str, int, dict]]) -> tuple[int | None, ...]:
    """For each tool call in order, the model call it followed; empty when no model call was logged."""
    turn, turns, models = None, [], False
    for _, _, entry in entries:
        override = entry.get("inputOverride")
        if isinstance(override, dict) and "ai_languageModel" in override:
            turn, models = (0 if turn is None else turn + 1), True
        elif _is_tool_call(entry):
            turns.append(turn)
    return tuple(turns) if models else ()


def _run_data(execution: dict, where: str) -> dict:
    data = execution.get("data")
    if data is None:
        raise InvalidInput("missing 'data' (fetch the execution with includeData=true)", where)
    if isinstance(data, str):
        data = unflatten(data, f"{where}: data")
    if not isinstance(data, dict):
        raise InvalidInput(f"'data' must be an object or n8n's flatted text, got {type(data).__name__}", where)
    result = data.get("resultData")
    run_data = result.get("runData") if isinstance(result, dict) else None
    if not isinstance(run_data, dict):
        raise InvalidInput("missing data.resultData.runData (an object of node name -> run entries)", where)
    if not run_data:
        raise InvalidInput("data.resultData.runData is empty (no node ran)", where)
    return run_data


def _ordered(run_data: dict, where: str) -> list[tuple[str, int, dict]]:
    entries = []
    for node, runs in run_data.items():
        if not isinstance(runs, list):
            raise InvalidInput(f"run entries must be a list, got {type(runs).__name__}", f"{where}: node {node!r}")
        for i, entry in enumerate(runs):
            if not isinstance(entry, dict):
                raise InvalidInput(f"expected an object, got {type(entry).__name__}", f"{where}: node {node!r} run {i}")
            entries.append((node, i, entry))
    key = "executionIndex" if all(_is_number(e.get("executionIndex")) for _, _, e in entries) else "startTime"
    for node, i, entry in entries:
        if not _is_number(entry.get(key)):
            raise InvalidInput(
                "missing 'startTime' (a number; not every run entry carries 'executionIndex')",
                f"{where}: node {node!r} run {i}",
            )
    # Tie-break on node name and run index so equal keys (same millisecond) still order deterministically.
    return sorted(entries, key=lambda e: (e[2][key], e[0], e[1]))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_tool_call(entry: dict) -> bool:
    override = entry.get("inputOverride")
    return isinstance(override, dict) and "ai_tool" in override


def _step(node: str, run: int, entry: dict, where: str) -> Step:
    here = f"{where}: node {node!r} run {run}"
    args = _first_item(entry["inputOverride"], here, "inputOverride")
    if args is None:
        raise InvalidInput("inputOverride.ai_tool holds no item (the tool's arguments)", here)
    query = args.get("query")
    if set(args) == {"query"} and isinstance(query, dict):
        args = query  # older agents log {"query": <arguments>}
    _check_plain(args, here, "arguments")
    error = _error(entry, here)
    output = _first_item(entry.get("data"), here, "data") if isinstance(entry.get("data"), dict) else None
    return Step(
        index=0,
        tool=node,
        args=args,
        result=None if error is not None or output is None else _text(output.get("response", output), here),
        error=error,
        t=_seconds(entry.get("startTime"), here, "startTime"),
        duration=_seconds(entry.get("executionTime", 0), here, "executionTime"),
        agent=_source_node(entry),
    )


def _first_item(connections: Any, here: str, field: str) -> dict | None:
    """``{"ai_tool": [[{"json": {...}}]]}`` -> the first item's json (None when there is no item)."""
    outputs = connections.get("ai_tool")
    if outputs is None:
        return None
    if not isinstance(outputs, list) or not all(isinstance(o, list) or o is None for o in outputs):
        raise InvalidInput(f"{field}.ai_tool must be a list of item lists", here)
    items = [item for o in outputs if o for item in o]
    if not items:
        return None
    if not isinstance(items[0], dict) or not isinstance(items[0].get("json"), dict):
        raise InvalidInput(f"{field}.ai_tool[0][0] has no 'json' object", here)
    return items[0]["json"]


def _error(entry: dict, here: str) -> str | None:
    error = entry.get("error")
    if error is None:
        return "failed" if entry.get("executionStatus") == "error" else None
    if isinstance(error, dict):
        text = error.get("message") or error.get("name")
        return text if isinstance(text, str) and text else "failed"
    if isinstance(error, str):
        return error or "failed"
    raise InvalidInput(f"'error' must be an object or a string, got {type(error).__name__}", here)


def _text(value: Any, here: str) -> str:
    if isinstance(value, str):
        return value
    _check_plain(value, here, "result")
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _check_plain(value: Any, here: str, what: str) -> None:
    """The stored form's references can make a value circular (or absurdly deep); checks walk arguments
    and results, so such a value is bad input here rather than a hang or a crash later."""
    try:
        json.dumps(value)
    except (ValueError, RecursionError):
        raise InvalidInput(f"{what} hold a circular or too deeply nested value", here) from None
    except TypeError:
        raise InvalidInput(f"{what} are not JSON data", here) from None


def _seconds(value: Any, here: str, field: str) -> float:
    if value is None:
        return 0.0
    if not _is_number(value):
        raise InvalidInput(f"'{field}' must be a number of milliseconds", here)
    return value / 1000.0


def _source_node(entry: dict) -> str | None:
    sources = entry.get("source")
    if isinstance(sources, list) and sources and isinstance(sources[0], dict):
        name = sources[0].get("previousNode")
        return name if isinstance(name, str) else None
    return None


def _workflow_name(execution: dict, where: str) -> str | None:
    workflow = execution.get("workflowData")
    if isinstance(workflow, str):  # the stored row keeps it as JSON text
        try:
            workflow = json.loads(workflow)
        except json.JSONDecodeError as e:
            raise InvalidInput(f"workflowData is not valid JSON ({e.msg})", where) from None
    name = workflow.get("name") if isinstance(workflow, dict) else None
    return name if isinstance(name, str) and name else None


def _agent_nodes(entries: list[tuple[str, int, dict]]) -> list[str]:
    """Nodes that sub-nodes report to (tools, chat models: any ``ai_*`` input), in run order. Structural,
    like tool detection: an agent is whatever node its sub-nodes feed, whatever its type."""
    agents: dict[str, None] = {}
    for _, _, entry in entries:
        override = entry.get("inputOverride")
        if isinstance(override, dict) and any(str(k).startswith("ai_") for k in override):
            name = _source_node(entry)
            if name is not None:
                agents[name] = None
    return list(agents)


def _user_input(run_data: dict, agents: list[str]) -> str | tuple[str, ...]:
    """``chatInput`` of the items that fed the agent nodes (their main input) — the Chat Trigger's field
    and the agent's default prompt; "" when no such field exists (the grader then skips input checks)."""
    texts: list[str] = []
    for agent in agents:
        runs = run_data.get(agent)
        for run in runs if isinstance(runs, list) else ():
            sources = run.get("source") if isinstance(run, dict) else None
            for source in sources if isinstance(sources, list) else ():
                for item in _main_output(run_data, source):
                    text = item.get("chatInput")
                    if isinstance(text, str) and text not in texts:
                        texts.append(text)
    return texts[0] if len(texts) == 1 else tuple(texts) if texts else ""


def _main_output(run_data: dict, source: Any) -> list[dict]:
    """The json of the items a ``source`` reference points at; [] for anything that does not resolve."""
    if not isinstance(source, dict) or not isinstance(source.get("previousNode"), str):
        return []
    runs = run_data.get(source["previousNode"])
    run, output = source.get("previousNodeRun") or 0, source.get("previousNodeOutput") or 0
    if not isinstance(runs, list) or not _is_index(run, runs) or not isinstance(runs[run], dict):
        return []
    data = runs[run].get("data")
    main = data.get("main") if isinstance(data, dict) else None
    if not isinstance(main, list) or not _is_index(output, main) or not isinstance(main[output], list):
        return []
    return [i["json"] for i in main[output] if isinstance(i, dict) and isinstance(i.get("json"), dict)]


def _is_index(value: Any, seq: list) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(seq)


def unflatten(text: str, where: str) -> Any:
    """Decode n8n's stored ``data``: the *flatted* format, a JSON array whose first entry is the root and
    whose string values inside objects and arrays are indexes of other entries (how n8n keeps shared
    and circular references). Iterative, so a deep or cyclic payload cannot exhaust the stack."""
    try:
        table = loads_json(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"flatted text is not valid JSON ({e.msg})", where) from None
    if not isinstance(table, list) or not table:
        raise InvalidInput("flatted text must be a non-empty JSON array", where)
    if len(table) > MAX_FLATTED_ENTRIES:
        raise InvalidInput(f"flatted table has {len(table)} entries (limit {MAX_FLATTED_ENTRIES})", where)
    built: dict[int, Any] = {}
    pending: list[tuple[Any, Any]] = []

    def resolve(ref: str) -> Any:
        if not ref.isdigit() or int(ref) >= len(table):
            raise InvalidInput(f"flatted reference {ref[:40]!r} is not an index into the table", where)
        i = int(ref)
        if i not in built:
            raw = table[i]
            built[i] = {} if isinstance(raw, dict) else [] if isinstance(raw, list) else raw
            if isinstance(raw, (dict, list)):
                pending.append((raw, built[i]))
        return built[i]

    root = resolve("0")
    while pending:
        raw, out = pending.pop()
        if isinstance(raw, dict):
            out.update({k: resolve(v) if isinstance(v, str) else v for k, v in raw.items()})
        else:
            out.extend(resolve(v) if isinstance(v, str) else v for v in raw)
    return root

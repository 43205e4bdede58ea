"""LlamaIndex under openinference-instrumentation-llama-index, where it leaves plain OpenInference.

A tool span (``FunctionTool.acall``, kind TOOL) records the call's bound arguments, so
``input.value`` is ``{"kwargs": {...}}``, and the tool's ``ToolOutput`` as ``output.value``:
``{"blocks": [{"text"}], "tool_name", "raw_input", "raw_output", "is_error"}``. Read here: the
keyword arguments, the raw output's text, and ``is_error`` as a failure. The call id is on no tool
span (only in the repr of the parent ``call_tool`` span's event); the join with the model's requested
calls (flattened ``llm.output_messages``) supplies it. A ``Context`` argument, recorded as an object
repr, is dropped.

No span is an agent's, but each model call runs inside a workflow step ``<Workflow>.run_agent_step``
(CHAIN) whose input is the repr of the event it was given, naming the agent
(``current_agent_name='support_agent'``): read as that agent's span, so its model calls, and through the
join the calls they asked for, are the agent's. Tool spans run in a sibling step and name none. With
content off the input is hidden, and no agent is named.
"""

from __future__ import annotations

import re
from typing import Any

from luckrate.adapters.otlp.payloads import load_text
from luckrate.adapters.otlp.roles import AgentRole, Role, ToolRole, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
"""A tool that takes the workflow ``Context`` gets it as a keyword argument, recorded as its repr: not
an argument the model gave (and one that differs on every run)."""
_OUTPUT_KEYS = frozenset({"blocks", "tool_name", "raw_input", "raw_output", "is_error"})
_AGENT_STEP = ".run_agent_step"
_AGENT_NAME = re.compile(r"current_agent_name='([^'\\]{1,256})'\)\Z")


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get("openinference.span.kind")
    if kind in ("CHAIN", "chain") and rec.name.endswith(_AGENT_STEP):
        return _agent_step(rec.get("input.value"))
    if kind not in ("TOOL", "tool"):
        return None
    raw_in, raw_out = rec.get("input.value"), rec.get("output.value")
    args = _kwargs(raw_in)
    output = _tool_output(raw_out)
    if args is None and output is None:
        return None
    role = tool_role(
        rec.get("tool.name") or rec.name,
        raw_in if args is None else args,
        raw_out if output is None else _text(output),
        rec.get("tool.id") or rec.get("tool_call.id"),
    )
    if output is not None and output.get("is_error") is True:
        return ToolRole(role.name, role.args, role.result, role.call_id, error=role.result or "error")
    return role


def _kwargs(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, str) or not raw.startswith('{"kwargs"'):
        return None
    value = load_text(raw)
    if not (isinstance(value, dict) and set(value) <= {"args", "kwargs"} and isinstance(value.get("kwargs"), dict)):
        return None
    kwargs = {k: v for k, v in value["kwargs"].items() if not (isinstance(v, str) and _OBJECT_REPR.fullmatch(v))}
    return {**kwargs, "args": value["args"]} if value.get("args") else kwargs


def _tool_output(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, str) or '"raw_output"' not in raw:
        return None
    value = load_text(raw)
    return value if isinstance(value, dict) and _OUTPUT_KEYS <= set(value) else None


def _text(output: dict[str, Any]) -> Any:
    raw = output.get("raw_output")
    if isinstance(raw, str):
        return raw
    texts = [b["text"] for b in output.get("blocks") or () if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "".join(texts) if texts else raw


def _agent_step(raw: Any) -> Role | None:
    """The agent a ``run_agent_step`` span runs: the ``current_agent_name`` that closes the repr of its
    event (``AgentSetup(input=[...], current_agent_name='...')``). Only the closing field is read: the
    messages before it hold text anyone could have written, such a field included."""
    value = load_text(raw) if isinstance(raw, str) and raw.startswith("{") else None
    event = value.get("ev") if isinstance(value, dict) else None
    found = _AGENT_NAME.search(event) if isinstance(event, str) else None
    return AgentRole(found.group(1)) if found else None

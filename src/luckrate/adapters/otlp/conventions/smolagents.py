"""smolagents under openinference-instrumentation-smolagents, where it leaves plain OpenInference.

- The agent span (kind AGENT) is named ``<agent name>.run`` and carries no ``agent.name``; its
  ``input.value`` is the ``run`` call's arguments, whose ``task`` is the user's words (the model sees
  them as ``New task:\\n<task>``). It is recognised by the ``smolagents.max_steps`` key.
- A tool span records ``Tool.__call__``'s arguments: ``{"args": [], "sanitize_inputs_outputs": true,
  "kwargs": {...}}``. No span carries a call id except the model's output messages.
- A ToolCallingAgent answers by calling its own ``final_answer`` tool: that call is the run's output,
  not an action, so it is no step (``ToolRole.answer``), and the model's request for it is joined to
  it and dropped with it. Its span is named after the class, ``FinalAnswerTool``.
- A managed agent is called as a tool named after it; the call has no tool span of its own (the
  managed agent's ``<name>.run`` span is there instead), so it is a step from the model's request.
- The model's input uses smolagents' own framing: each task (the first, and each reply the user sends
  to a run continued with ``reset=False``) is a user message ``New task:\n<text>``, and each earlier
  model turn a ``tool-call`` message whose text is ``Calling tools:\n`` and the repr of its calls. Read
  as the user's text and an assistant message with those calls, the agent's question (its
  ``final_answer`` call) stays in the conversation the reply answers.
"""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp import messages as standard
from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.payloads import Requested, load_text
from luckrate.adapters.otlp.roles import AgentRole, Role, ToolRole, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"smolagents.max_steps"})
ANSWER_TOOL = "final_answer"
ANSWER_SPAN = "FinalAnswerTool"
"""The span is named after the tool's class: smolagents' own answer tool, not a user tool of that name."""


def classify(rec: SpanRecord) -> Role | None:
    kind = rec.get("openinference.span.kind")
    if kind in ("AGENT", "agent") and rec.get("smolagents.max_steps") is not None:
        return AgentRole(rec.name[: -len(".run")] if rec.name.endswith(".run") else rec.name)
    if kind not in ("TOOL", "tool"):
        return None
    args = _call_kwargs(rec.get("input.value"))
    answer = rec.name == ANSWER_SPAN and rec.get("tool.name") == ANSWER_TOOL  # also with content hidden
    if args is None and not answer:
        return None
    role = tool_role(rec.get("tool.name") or rec.name, args, rec.get("output.value"), rec.get("tool.id"))
    return ToolRole(role.name, role.args, role.result, role.call_id, answer=True) if answer else role


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """The agent span's task as the user's message; a model call's input in smolagents' framing read
    back to plain messages. None for any other span (OpenInference reads it)."""
    if direction != "input":
        return None
    if rec.get("smolagents.max_steps") is None:
        if rec.get("openinference.span.kind") not in ("LLM", "llm") or not _framed(rec):
            return None
        found = standard.input_messages(rec)
        return [_unframed(m) for m in found] if found else None
    raw = rec.get("input.value")
    value = load_text(raw) if isinstance(raw, str) else None
    task = value.get("task") if isinstance(value, dict) else None
    return [Message("user", (task,))] if isinstance(task, str) and task else None


def _call_kwargs(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, str) or '"sanitize_inputs_outputs"' not in raw:
        return None
    value = load_text(raw)
    if not isinstance(value, dict) or not isinstance(value.get("kwargs"), dict):
        return None
    kwargs = dict(value["kwargs"])
    if value.get("args"):
        kwargs["args"] = value["args"]
    return kwargs


_TASK, _CALLS = "New task:\n", "Calling tools:\n"


def _framed(rec: SpanRecord) -> bool:
    return any(isinstance(v, str) and (v == "tool-call" or v.startswith(_TASK)) for v in rec.values)


def _unframed(message: Message) -> Message:
    text = message.texts[0] if len(message.texts) == 1 else None
    if message.role == "user" and text is not None and text.startswith(_TASK):
        return Message("user", (text[len(_TASK) :],))
    if message.role == "tool-call" and text is not None and text.startswith(_CALLS):
        calls = load_text(text[len(_CALLS) :])
        requested = (
            [
                Requested(fn["name"], fn.get("arguments"), c.get("id") if isinstance(c.get("id"), str) else None)
                for c in calls
                if isinstance(c, dict) and isinstance(fn := c.get("function"), dict) and isinstance(fn.get("name"), str)
            ]
            if isinstance(calls, list)
            else []
        )
        return Message("assistant", calls=tuple(requested)) if requested else message
    return message

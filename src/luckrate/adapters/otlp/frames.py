"""Messages a framework writes in its own encoding inside GenAI messages, read back to plain messages.

The GenAI instrumentations copy a framework's messages as the framework holds them, so what reaches the
model in the framework's own encoding reaches the trace that way too:

- **Roles as an enum's text.** A role written as ``str()`` of a Python enum (``MessageRole.USER``,
  ``<MessageRole.USER: 'user'>``) is the enum member's role (``user``); roles are compared case-folded.
  ``function`` (the chat-completions predecessor of ``tool``) and the ``tool-response`` of frameworks that
  frame tool results as text are tool messages; ``tool-call`` is the assistant asking for calls.
- **Earlier calls repeated as text.** A framework that sends its model the earlier calls as text writes
  them as an assistant (or ``tool-call``) message ``Calling tools:\\n<list of calls>`` — the list in the
  chat-completions shape, as JSON or a Python repr — and their results as a tool message
  ``Call id: <id>\\nObservation:\\n<result>`` (or ``Observation:\\n<result>``); the user's task as
  ``New task:\\n<text>``. Read as text, the calls were no calls (no turn, no repeat) and the results were
  the user's or the agent's words (false provenance). They are read as the calls and results they are.
- **Field sections.** A framework that prompts in named sections (``[[ ## name ## ]]`` on a line of its own,
  then the field's value, as DSPy's ``ChatAdapter`` does) writes the model's choice of tool in an assistant
  message as the fields ``next_tool_name`` and ``next_tool_args`` (a JSON object): that is a call the model
  asked for, with no call id (the framework's ``finish`` is the end of the loop, not a call). A user message
  in sections holds the request's fields and, in a ``trajectory`` field, the earlier steps as text
  (``tool_name_<i>``, ``tool_args_<i>``, ``observation_<i>``): the user's words are the other fields, and the
  trajectory is the agent's own steps, never the user's.
"""

from __future__ import annotations

import re
from typing import Any

from luckrate.adapters.otlp.payloads import Requested, load_text

_ENUM_REPR = re.compile(r"^<?[A-Za-z_][A-Za-z0-9_]*\.([A-Za-z_][A-Za-z0-9_]*)(?::\s*'([^']*)'>)?$")
_ROLE_ALIASES = {"function": "tool", "tool-response": "tool", "tool_response": "tool", "tool_call": "tool-call"}


PLAIN_ROLES = frozenset({"user", "assistant", "system", "tool", "developer", "model", "human", "ai"})


def framed(text: str) -> bool:
    """Whether a text may hold any of the framings read here: a few substring scans, so most text (which holds
    none) costs little. Every framing has a line ending in a colon, a ``[[ ## `` section, a tool's failure
    report, or starts with ``{`` (a message's repr)."""
    return ":\n" in text or "[[ ## " in text or text[:1] == "{" or "Error executing tool '" in text


def role(raw: Any) -> str:
    """The message's role as text: an enum's ``str()`` or repr as the member's role, case-folded."""
    if isinstance(raw, str) and raw in PLAIN_ROLES:
        return raw
    text = str(raw or "").strip()
    if "." in text:
        found = _ENUM_REPR.match(text)
        if found is not None:
            text = found.group(2) or found.group(1)
    text = text.casefold()
    return _ROLE_ALIASES.get(text, text)


TASK, CALLS, OBSERVATION, CALL_ID = "New task:\n", "Calling tools:\n", "Observation:\n", "Call id: "


def task_text(text: str) -> str:
    """The user's words of a ``New task:`` message; any other text as it is."""
    return text[len(TASK) :] if text.startswith(TASK) else text


def text_calls(text: str) -> list[Requested] | None:
    """The calls a ``Calling tools:`` text lists, or the call a section-framed reply chooses; None when the
    text is neither."""
    if text.startswith(CALLS):
        return _listed_calls(text[len(CALLS) :])
    if "[[ ## next_tool_name ## ]]" in text:
        fields = sections(text)
        name = fields.get("next_tool_name", "").strip()
        if not name:
            return None
        if name == "None":  # a field the framework left empty (a step in its history): no call, nothing said
            return None
        if name == "finish":  # the loop's end
            return []
        args = fields.get("next_tool_args")
        return [Requested(name, args.strip() if args is not None else None, None)]
    return None


def _listed_calls(raw: str) -> list[Requested] | None:
    calls = load_text(raw)
    if not isinstance(calls, list):
        return None
    out = []
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            call_id = c.get("id")
            out.append(
                Requested(
                    fn["name"], fn.get("arguments"), call_id.strip() or None if isinstance(call_id, str) else None
                )
            )
    return out


def observation(text: str) -> tuple[str | None, str] | None:
    """``(call id or None, result)`` of a ``Call id: <id>\\nObservation:\\n<result>`` (or bare ``Observation:``)
    text; None for any other text."""
    call_id = None
    if text.startswith(CALL_ID):
        first, sep, rest = text.partition("\n")
        if not sep:
            return None
        call_id, text = first[len(CALL_ID) :].strip() or None, rest
    if not text.startswith(OBSERVATION):
        return None
    return call_id, text[len(OBSERVATION) :]


def merged_task(result: str) -> tuple[str, str | None]:
    """An observation's result and the user's next task a framework merged into the same message
    (smolagents joins consecutive user-role messages: ``<result>\nNew task:\n<text>``), split at the last
    such line; ``(result, None)`` when there is none. A tool's result could end with the same words, so the
    task is the user's only where the run records it as the user's elsewhere (``Message.framed``)."""
    at = result.rfind("\n" + TASK)
    if at < 0:
        return result, None
    return result[:at], result[at + 1 + len(TASK) :]


_SECTION = re.compile(r"^\[\[ ## ([A-Za-z0-9_]+) ## \]\]$", re.MULTILINE)


def sections(text: str) -> dict[str, str]:
    """The named fields of a section-framed text (``[[ ## name ## ]]`` lines), each value stripped; empty
    when the text has none. ``completed`` (the end marker) is no field."""
    marks = list(_SECTION.finditer(text))
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        if m.group(1) != "completed":
            out[m.group(1)] = text[m.end() : end].strip()
    return out


_STEP_FIELD = re.compile(r"^(?:thought|tool_name|tool_args|observation)_\d+$")


def user_fields(text: str) -> str:
    """The user's words in a section-framed user message: its fields but the agent's own trajectory; the
    text as it is when it has no sections."""
    if "[[ ## " not in text:
        return text
    fields = sections(text)
    if not fields:
        return text
    kept = [v for k, v in fields.items() if k != "trajectory" and not _STEP_FIELD.match(k) and v]
    return _unprompted("\n".join(kept))


_PROMPT = "\n\nRespond with the corresponding output fields"


def _unprompted(text: str) -> str:
    """The text without the instruction DSPy appends to the last user message (``Respond with the
    corresponding output fields, starting with ...``): the framework's words, not the user's."""
    at = text.find(_PROMPT)
    return text[:at] if at >= 0 else text


_OWN_FIELDS = frozenset({"reasoning", "next_thought", "next_tool_name", "next_tool_args"})


def reply_fields(text: str) -> str | None:
    """The agent's words in a section-framed reply: its output fields but its reasoning and tool choice
    (``reasoning``, ``next_*``) and fields the framework left empty (``None``); None when the text has no
    sections or says nothing."""
    if "[[ ## " not in text:
        return None
    fields = sections(text)
    kept = [v for k, v in fields.items() if k not in _OWN_FIELDS and v and v != "None"]
    return "\n".join(kept) if fields and kept else None


NamedResult = tuple[str, Any, bool]
"""(tool, result, failed): a result a framework's text gives with the tool it answers but no call id."""

_RETRY = (
    "\nNow let's retry: take care not to repeat previous errors! If you have retried several times, "
    "try a completely different approach.\n"
)
# One line, bounded: a text of many unfinished reports costs linear time, not quadratic. (An exception message
# of several lines is not read as a report.)
_TOOL_ERROR = re.compile(
    r"\nError:\n(Error executing tool '([^'\n]{1,200})' with arguments [^\n]{0,4000}\nPlease try again or use another tool)"
    + re.escape(_RETRY),
    re.DOTALL,
)


def failed_calls(text: str) -> tuple[str, list[NamedResult]]:
    """The text without the failures a framework appended to it in its own words, and those failures: each
    names the tool that raised (smolagents adds ``Error:\nError executing tool '<tool>' with arguments ...``
    to the next user message, and drops the failed call from the history it resends)."""
    if "Error executing tool '" not in text:
        return text, []
    found = [(m.group(2), m.group(1), True) for m in _TOOL_ERROR.finditer(text)]
    return (_TOOL_ERROR.sub("", text) if found else text), found


def trajectory_results(text: str) -> list[NamedResult]:
    """The earlier steps' results in a section-framed user message's trajectory (``tool_name_<i>`` and
    ``observation_<i>``), in step order; failed where the observation is the framework's own report of the
    tool raising (DSPy: ``Execution error in <tool>: ...``). The framework's ``finish`` is no step."""
    if "[[ ## tool_name_" not in text:
        return []
    fields = sections(text)
    out = []
    i = 0
    while f"tool_name_{i}" in fields:
        name, observed = fields[f"tool_name_{i}"], fields.get(f"observation_{i}")
        if name and name != "finish" and observed is not None:
            out.append((name, observed, observed.startswith(f"Execution error in {name}:")))
        i += 1
    return out


_FAILURE_REPORTS = (
    "An error occurred when calling tool `{tool}`:",  # Qwen-Agent, in place of the tool's result
    "Execution error in {tool}: ",  # DSPy's ReAct, as the observation
    "Error executing tool '{tool}' with arguments ",  # smolagents, in the next user message
)


def reports_failure(tool: str, result: str | None) -> bool:
    """Whether a result is a framework's own report that this tool raised: a fixed text of the framework's
    (Qwen-Agent, DSPy, smolagents) naming the tool, at the start of the result. A tool's own words ("Error:
    ...") never are."""
    if not result or result[0] not in "AEa" or tool not in result[:300]:
        return False
    return any(result.startswith(t.format(tool=tool)) for t in _FAILURE_REPORTS)


def unsaid(text: str) -> bool:
    """Whether a section-framed agent message says nothing: every output field empty or ``None`` (DSPy's
    history of a step it kept only the request and answer of)."""
    return "[[ ## " in text and bool(sections(text)) and reply_fields(text) is None

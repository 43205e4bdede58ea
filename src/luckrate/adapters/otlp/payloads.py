"""Tool arguments and results in the shapes instrumentations record them.

Arguments: a plain object, a JSON string, a Python repr of a dict (``ast.literal_eval`` — never
``eval``), Traceloop's ``input_str``/``inputs``/``kwargs`` envelope or decorator ``args``/``kwargs``
form, or OpenInference's bare value for a one-argument tool. What cannot be parsed into a dict stays a
string argument ``{"input": text}`` so it is still checked.

Results: plain text, or a LangChain ToolMessage serialized by OpenInference (``{"type": "tool",
"data": {...}}``) or Traceloop (``{"output": {"lc": 1, ..., "kwargs": {...}}}``): unwrapped to the content.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from luckrate.core.fields import json_value
from luckrate.core.frozen import fast_init

REDACTED = "__REDACTED__"
"""OpenInference's placeholder when inputs/outputs are hidden: counts as not captured."""
MAX_LITERAL = 16 * 1024
"""Longest text handed to ``ast.literal_eval`` (its parser cost grows with nesting and size)."""

_ENVELOPE_KEYS = frozenset({"input_str", "inputs", "kwargs", "tags", "metadata"})


def captured(value: Any) -> bool:
    """False for what stands for 'content not recorded' (absent, empty, or redacted)."""
    return value is not None and value != "" and value != REDACTED


def parse_args(raw: Any) -> tuple[dict[str, Any], bool]:
    """The arguments as a dict, and whether they parsed as one (False: ``{"input": text}``)."""
    if isinstance(raw, dict):
        return _unwrap_envelope(raw)
    if isinstance(raw, str):
        value = load_text(raw)
        if isinstance(value, dict):
            return _unwrap_envelope(value)
        return {"input": value if isinstance(value, str) else raw.strip()}, False
    if raw is None:
        return {}, True
    return {"input": _text(raw)}, False


def load_text(text: str) -> Any:
    """JSON, else a Python literal, else the text itself (stripped)."""
    s = text.strip()
    if not s or s[0] not in "{[\"'(0123456789-tfnTFN":
        return s
    try:
        return json_value(s)
    except (ValueError, RecursionError):
        pass
    if len(s) <= MAX_LITERAL and s[0] in "{[(\"'":
        try:
            return _plain(ast.literal_eval(s))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return s


def _plain(value: Any) -> Any:
    """A Python literal made JSON-shaped (tuples and sets as lists, keys as strings, bytes and
    complex numbers as text), so steps stay serializable."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _unwrap_envelope(obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    # Traceloop's LangChain callback envelope: {"input_str": repr(args), "inputs": {...}, "kwargs": ...}
    if "input_str" in obj and set(obj) <= _ENVELOPE_KEYS:
        inputs = obj.get("inputs")
        if isinstance(inputs, dict) and inputs:
            return {str(k): v for k, v in inputs.items()}, True
        return parse_args(obj.get("input_str"))
    # Traceloop's decorator form: {"args": [...], "kwargs": {...}}
    if set(obj) == {"args", "kwargs"} and isinstance(obj["kwargs"], dict) and isinstance(obj["args"], list):
        out = {str(k): v for k, v in obj["kwargs"].items()}
        if obj["args"]:
            out["args"] = obj["args"]
        return out, True
    return {str(k): v for k, v in obj.items()}, True


def result_text(raw: Any) -> tuple[str | None, bool]:
    """The result as text, and whether the tool reported an error inside it: a ToolMessage's status, or
    a result that is nothing but an error object (``error_only``)."""
    if not captured(raw):
        return None, False
    message = _parsed_tool_message(raw)
    if message is None:
        text = raw.strip() if isinstance(raw, str) else _text(raw)
        return text, error_only(text)
    content = _content_text(message.get("content"))
    return content, message.get("status") == "error" or error_only(content)


ERROR_KEYS = frozenset({"error", "errors", "err", "exception", "error_message", "errormessage"})
"""Keys that, alone in a result object, make the result an error report (compared case-folded)."""


def error_only(text: str | None) -> bool:
    """Whether a result is nothing but an error: a JSON object whose one key with a value is an error key
    holding a non-empty value (``{"error": "PaymentGatewayError: ... (HTTP 503)"}``, ``{"data": null,
    "errors": [...]}``), or an envelope marked failed (MCP's ``isError: true``, Anthropic's
    ``is_error: true``). A tool's own output that carries an ``error`` field beside others is its data,
    and words ("Error: ...") are never read."""
    if not text or text[0] != "{" or ("rr" not in text and "xception" not in text):
        return False  # cheap: most results are not objects naming an error
    value = load_text(text)
    if not isinstance(value, dict):
        return False
    if value.get("isError") is True or value.get("is_error") is True:
        return True
    present = [k for k, v in value.items() if v is not None]
    if len(present) != 1 or present[0].casefold() not in ERROR_KEYS:
        return False
    reported = value[present[0]]
    return reported is not False and reported != "" and reported != [] and reported != {}


def _parsed_tool_message(raw: Any) -> dict[str, Any] | None:
    """``_tool_message`` of a raw result, parsing text only when it could hold one."""
    if isinstance(raw, str):
        # Every ToolMessage form has a "content" key, and only an escape (\u0063, \x63) could spell it
        # otherwise: skip parsing the rest (most results; parsing them was a tenth of adapting a trace).
        if "content" not in raw and "\\" not in raw:
            return None
        raw = load_text(raw)
    return _tool_message(raw)


def _tool_message(value: Any) -> dict[str, Any] | None:
    """The ToolMessage fields inside OpenInference's or Traceloop's serialization, if it is one."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("output"), dict) and set(value) <= {"output", "kwargs"}:
        value = value["output"]  # Traceloop's {"output": ..., "kwargs": ...}
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict) and "content" in value["kwargs"]:
        return value["kwargs"]
    data = value.get("data")
    if value.get("type") == "tool" and isinstance(data, dict) and "content" in data:
        return data
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: [{"type": "text", "text": ...}, ...]
        parts = [c.get("text", "") if isinstance(c, dict) else str(c) for c in content]
        return "".join(p for p in parts if isinstance(p, str))
    return _text(content)


def tool_message_call_id(raw: Any) -> str | None:
    """The ``tool_call_id`` a serialized ToolMessage result carries (the only call id LangGraph records)."""
    if not isinstance(raw, (str, dict)):
        return None
    message = _parsed_tool_message(raw)
    call_id = message.get("tool_call_id") if message else None
    return call_id.strip() if isinstance(call_id, str) and call_id.strip() else None


def tool_message_name(raw: Any) -> str | None:
    """The ``name`` of the tool a serialized ToolMessage result answers for (LangChain sets it to the
    tool's name; a span may name only the tool's class)."""
    if not isinstance(raw, (str, dict)):
        return None
    message = _parsed_tool_message(raw)
    name = message.get("name") if message else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (ValueError, RecursionError):
        return str(value)


@fast_init
@dataclass(frozen=True)
class Requested:
    """A tool call the model asked for (from its output messages)."""

    name: str
    args: Any
    """Raw arguments (dict, JSON string, repr...), None when not captured."""
    call_id: str | None


def args_match(tool_args: dict[str, Any], tool_parsed: bool, requested: dict[str, Any]) -> bool:
    """Whether a tool span's arguments describe the model's requested call.

    A bare value (OpenInference, one-argument tool) matches a one-key request with that value;
    numbers compare by value (a float parameter echoes ``129.0`` for ``129``)."""
    if tool_parsed:
        return tool_args == requested
    if len(requested) != 1:
        return False
    (value,) = requested.values()
    bare = tool_args.get("input")
    return bare == value or (isinstance(value, str) and bare == value.strip()) or bare == _text(value)

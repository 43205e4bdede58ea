"""Google ADK's native tracing, where it leaves the GenAI conventions.

ADK's spans are GenAI-shaped (``invoke_agent <agent>``, ``execute_tool <tool>``, ``generate_content
<model>`` with ``gen_ai.operation.name``), but:

- Schema v1 (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``; what ADK 1.x emitted) keeps the tool call's
  content in ``gcp.vertex.agent.tool_call_args`` / ``gcp.vertex.agent.tool_response``, and the model
  call's in a ``call_llm`` span with no operation name: ``gcp.vertex.agent.llm_request`` (the Gemini
  request: ``contents`` of ``text`` / ``function_call`` / ``function_response`` parts) and
  ``gcp.vertex.agent.llm_response``. With content off every one of these is the literal ``{}``.
- Every schema wraps a tool result that is not a dict as ``{"result": <value>}``; unwrapped here.
- A call with no response event has the call id ``<not specified>``.
"""

from __future__ import annotations

from typing import Any

from luckrate.adapters.otlp.messages import Message, parts_message
from luckrate.adapters.otlp.payloads import load_text
from luckrate.adapters.otlp.roles import ModelRole, Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset(
    {
        "gcp.vertex.agent.event_id",
        "gcp.vertex.agent.tool_call_args",
        "gcp.vertex.agent.tool_response",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.llm_response",
    }
)
MAX_CONTENTS = 1000
_EMPTY = "{}"
_NO_ID = "<not specified>"


def classify(rec: SpanRecord) -> Role | None:
    op = rec.get("gen_ai.operation.name")
    if op is None and rec.name == "call_llm" and rec.get("gcp.vertex.agent.llm_request") is not None:
        return ModelRole()
    if (
        op != "execute_tool"
        or rec.get("gcp.vertex.agent.event_id") is None
        and rec.get("gcp.vertex.agent.tool_call_args") is None
    ):
        return None
    args = rec.get("gcp.vertex.agent.tool_call_args")
    result = rec.get("gcp.vertex.agent.tool_response")
    if args is None and result is None:  # schema v2: GenAI keys
        args, result = rec.get("gen_ai.tool.call.arguments"), rec.get("gen_ai.tool.call.result")
    elif args == _EMPTY and result == _EMPTY:  # v1 with content off (a captured result is never empty)
        args = result = None
    call_id = rec.get("gen_ai.tool.call.id")
    return tool_role(rec.get("gen_ai.tool.name"), args, _unwrapped(result), None if call_id == _NO_ID else call_id)


def _unwrapped(raw: Any) -> Any:
    """``{"result": "sent"}`` -> ``sent``: ADK wraps every non-dict tool result."""
    if not isinstance(raw, str) or not raw.startswith('{"result"'):
        return raw
    value = load_text(raw)
    return value["result"] if isinstance(value, dict) and set(value) == {"result"} else raw


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """Schema v1 ``call_llm`` spans: the Gemini request's contents in, the response's content out."""
    if rec.name != "call_llm":
        return None
    raw = rec.get("gcp.vertex.agent.llm_request" if direction == "input" else "gcp.vertex.agent.llm_response")
    if not isinstance(raw, str) or raw == _EMPTY:
        return None
    value = load_text(raw)
    if not isinstance(value, dict):
        return None
    contents = value.get("contents") if direction == "input" else [value.get("content")]
    if not isinstance(contents, list):
        return None
    return [m for m in map(_content, contents[:MAX_CONTENTS]) if m is not None]


def _content(obj: Any) -> Message | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("parts"), list):
        return None
    role = "assistant" if obj.get("role") == "model" else str(obj.get("role") or "")
    return parts_message(role, obj["parts"], ("function_call", "args", "id"), "function_response", _response)


def _response(response: dict[str, Any]) -> tuple[str | None, Any]:
    result = response.get("response")
    if isinstance(result, dict) and set(result) == {"result"}:
        result = result["result"]
    return _id(response.get("id")), result


def _id(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None

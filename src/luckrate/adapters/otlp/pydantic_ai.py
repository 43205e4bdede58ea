"""pydantic-ai's own instrumentation, data format version 2 (``InstrumentationSettings(version=2)``).

Version 2 names its tool spans ``running tool`` and keeps the call's content in ``tool_arguments`` and
``tool_response`` rather than the GenAI keys (``gen_ai.operation.name = execute_tool``, the tool name
and call id are GenAI's). Versions 3 to 6 use ``gen_ai.tool.call.arguments`` / ``.result`` and read as
plain GenAI, as do every version's agent (``invoke_agent``) and model (``chat``) spans. With content
off, version 2's tool spans carry neither key and read as plain GenAI too.
"""

from __future__ import annotations

from luckrate.adapters.otlp.roles import Role, tool_role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"tool_arguments", "tool_response"})


def classify(rec: SpanRecord) -> Role | None:
    if rec.get("gen_ai.operation.name") != "execute_tool":
        return None
    args, result = rec.get("tool_arguments"), rec.get("tool_response")
    if args is None and result is None:
        return None
    return tool_role(rec.get("gen_ai.tool.name"), args, result, rec.get("gen_ai.tool.call.id"))

"""Tool definitions (descriptions and parameter names) carried by traces, for ``luckrate suggest``.

The trajectory does not hold them (grading never reads them, and keeping them would cost every
buffered span in ``luckrate serve``), so ``suggest`` reads them here, in a second pass over the same
decoded requests, keyed by trace id. Read where the conventions put them (each convention's module declares
its keys, ``TOOL_DEFINITIONS``; the registry orders them: ``conventions.TOOL_DEFINITION_KEYS``):

- GenAI: ``gen_ai.tool.description`` (+ ``gen_ai.tool.name``) on a tool span, ``gen_ai.tool.definitions``
  (a JSON list) on a model span, ``gen_ai.tool.json_schema`` (Strands);
- OpenInference: ``tool.description`` / ``tool.parameters`` on a tool span, ``llm.tools.N.tool.json_schema``;
- Vercel AI SDK: ``ai.prompt.tools`` (a list of JSON definitions).

Bounded: at most MAX_TOOLS definitions per trace, JSON texts over MAX_JSON characters are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.conventions import TOOL_DEFINITION_KEYS
from luckrate.adapters.otlp.requests import request_from_json, request_from_protobuf
from luckrate.core.suggest import tool_definitions

MAX_TOOLS = 256
MAX_JSON = 256 * 1024
Definitions = dict[str, dict[str, tuple[str | None, frozenset[str]]]]
"""Trace id (hex) -> tool name -> (description, parameter names)."""

_NAME_KEYS = TOOL_DEFINITION_KEYS["name"]
_DESCRIPTION_KEYS = TOOL_DEFINITION_KEYS["description"]
_SCHEMA_KEYS = TOOL_DEFINITION_KEYS["schema"]
_LIST_KEYS = TOOL_DEFINITION_KEYS["list"]
_LIST_PREFIXES = TOOL_DEFINITION_KEYS["prefix"]


def definitions_from_file(data: bytes, fmt: str) -> Definitions:
    """The definitions in an ``otlp`` or ``otlp-json`` file the trajectory reader has already accepted
    (so a request that does not decode here is skipped, not reported twice)."""
    out: Definitions = {}
    for req in _requests(data, fmt):
        for trace, tool, description, params in _definitions(req):
            tools = out.setdefault(trace, {})
            if tool in tools or len(tools) < MAX_TOOLS:
                old = tools.get(tool, (None, frozenset()))
                tools[tool] = (old[0] or description, old[1] | params)
    return out


def _requests(data: bytes, fmt: str) -> Iterator[ExportTraceServiceRequest]:
    try:
        if fmt == "otlp":
            yield request_from_protobuf(data)
            return
        text = data.decode("utf-8", "replace")
        try:
            yield request_from_json(text)
        except InvalidInput:
            for line in text.splitlines():
                if line.strip():
                    yield request_from_json(line)
    except InvalidInput:
        return


def _definitions(req: ExportTraceServiceRequest) -> Iterator[tuple[str, str, str | None, frozenset[str]]]:
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                attrs = {
                    kv.key: _value(kv.value)
                    for kv in span.attributes
                    if kv.key in _WANTED or kv.key.startswith(_LIST_PREFIXES)
                }
                if attrs:
                    yield from ((span.trace_id.hex(), *d) for d in _of_span(attrs))


_WANTED = frozenset(_NAME_KEYS + _DESCRIPTION_KEYS + _SCHEMA_KEYS + _LIST_KEYS)


def _of_span(attrs: dict[str, Any]) -> Iterator[tuple[str, str | None, frozenset[str]]]:
    name = next((attrs[k] for k in _NAME_KEYS if isinstance(attrs.get(k), str) and attrs[k]), None)
    if name is not None:
        description = next((attrs[k] for k in _DESCRIPTION_KEYS if isinstance(attrs.get(k), str)), None)
        schema = next((_json(attrs[k]) for k in _SCHEMA_KEYS if k in attrs), None)
        params = tool_definitions({"parameters": schema})[1] if isinstance(schema, dict) else frozenset()
        if description or params:
            yield name, _without_signature(description, name), params
    listed: list[Any] = []
    for key in _LIST_KEYS:
        value = _json(attrs[key]) if key in attrs else None
        listed += value if isinstance(value, list) else []
    listed += [attrs[k] for k in sorted(attrs) if k.startswith(_LIST_PREFIXES)]
    for raw in listed[:MAX_TOOLS]:
        yield from _one(_json(raw))


def _one(raw: Any) -> Iterable[tuple[str, str | None, frozenset[str]]]:
    if not isinstance(raw, dict):
        return ()
    inner: dict[str, Any] = raw["function"] if isinstance(raw.get("function"), dict) else raw
    name = inner.get("name")
    if not isinstance(name, str) or not name:
        return ()
    description, params = tool_definitions(raw)
    return ((name, _without_signature(description, name), params),)


def _without_signature(description: str | None, name: str) -> str | None:
    """LlamaIndex opens a description with the function's signature line: the text starts after it."""
    if description and description.startswith(f"{name}(") and "\n" in description:
        return description.split("\n", 1)[1]
    return description


def _json(value: Any) -> Any:
    if isinstance(value, str) and len(value) <= MAX_JSON and value[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value[: MAX_JSON + 1]
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values[:MAX_TOOLS]]
    return None

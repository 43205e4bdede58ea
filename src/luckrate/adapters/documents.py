"""JSON files the text formats share: one document per file or JSON Lines, and the run-object header
(``id``, ``case``, ``agent``, ``output_ok``, ``input``) that wraps a framework's records."""

from __future__ import annotations

import json
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.formats import loads_json


def json_documents(text: str, source: str) -> tuple[bool, list[tuple[str, Any]]]:
    """``(False, [(source, doc)])`` for a file holding one JSON document; else read it as JSON Lines:
    ``(True, [("<source>:<line>", obj), ...])``. Errors name the file, and the line for JSON Lines."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInput("empty file", source)
    try:
        return False, [(source, loads_json(stripped))]
    except json.JSONDecodeError:
        pass  # not one document: JSON Lines
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        try:
            rows.append((where, loads_json(line)))
        except json.JSONDecodeError as e:
            raise InvalidInput(f"invalid JSON ({e.msg} at column {e.colno})", where) from None
    return True, rows


def run_header(doc: dict, default_id: str) -> dict[str, Any]:
    """The run-level fields of a run object, validated, as keyword arguments for an adapter."""
    run_id = doc.get("id", default_id)
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput("'id' must be a non-empty string")
    for key in ("case", "agent"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise InvalidInput(f"'{key}' must be a string or null")
    output_ok = doc.get("output_ok")
    if output_ok is not None and not isinstance(output_ok, bool):
        raise InvalidInput("'output_ok' must be true, false or null")
    return {"id": run_id, "case": doc.get("case"), "agent": doc.get("agent"), "output_ok": output_ok}


def user_input(value: Any) -> str | tuple[str, ...] | None:
    """A run's ``input``: a string, a list of strings (several user messages), or absent."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise InvalidInput("'input' must be a string or a list of strings")

"""The input formats the CLI reads, each a reader ``(data: bytes, source: str) -> list[Trajectory]``.

Readers raise InvalidInput naming what is wrong and where; they are imported on first use so one
format's module never slows another down.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import import_module
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.core.step import Trajectory

Reader = Callable[[bytes, str], list[Trajectory]]

FORMATS: dict[str, tuple[str, str]] = {
    "trajectory": (".trajectory", "read_file"),
    "langgraph": (".langgraph", "read_file"),
    "crewai": (".crewai", "read_file"),
    "n8n": (".n8n", "read_file"),
    "otlp": (".otlp", "read_otlp"),
    "otlp-json": (".otlp", "read_otlp_json"),
}
"""Format name -> (module, reader function)."""
NAMED_ONLY = ("langgraph", "crewai", "n8n")
"""Formats ``detect`` never picks (it tells otlp, otlp-json and trajectory): their files are named with
``--format``, and the refusal suggests which."""
GROUPS_TRACES = frozenset({"otlp", "otlp-json"})
"""Formats whose readers take ``runs_by`` (which traces make one run: adapters/otlp/runs.py)."""


def reader(name: str) -> Reader:
    module, function = FORMATS[name]
    return getattr(import_module(module, __package__), function)


def decode_text(data: bytes, source: str) -> str:
    """Text formats are UTF-8 (a BOM is tolerated); anything else is bad input, not a traceback."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"not UTF-8 text (byte {e.start})", source) from None


def loads_json(text: str) -> Any:
    """``json.loads`` whose every failure is a ``json.JSONDecodeError``: the stdlib raises RecursionError
    for deeply nested input and ValueError for an integer over 4300 digits, and both are bad input,
    not a crash (found by tests/reliability)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    except ValueError as e:
        raise json.JSONDecodeError(str(e).split(";")[0], text, 0) from None


def detect(data: bytes, source: str) -> str:
    """The format of a file given without ``--format``, told by its content: a binary OTLP export
    (``otlp``), OTLP/JSON as one document or as JSON lines (``otlp-json``: ``resourceSpans`` or
    ``resourceLogs``), else luckrate's trajectory form (a run object: ``steps`` or ``id``). A file that is
    none of these is refused, naming the ``--format`` to use. JSON that does not parse, and an empty file,
    are left to the trajectory reader, whose error names the line."""
    try:
        text: str | None = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        text, bad = None, e.start
    head = text.lstrip()[:1] if text is not None else ""
    if head in ("{", "["):
        doc = _first_document(text or "")
        if doc is not None:
            return _classify(doc, source)
    if (text is None or head) and _otlp_protobuf(data):
        return "otlp"
    if text is None:
        raise InvalidInput(f"not UTF-8 text (byte {bad}) nor a binary OTLP export; {_NAME_IT}", source)
    if head not in ("{", "[", ""):
        raise InvalidInput(
            f"not JSON (it starts with {text.lstrip()[:12]!r}) nor a binary OTLP export; {_NAME_IT}", source
        )
    return "trajectory"


_NAME_IT = f"name its format with --format ({', '.join(sorted(FORMATS))})"


def _first_document(text: str) -> Any:
    """The file's JSON document, or its first line's (JSON Lines); None when neither parses."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    for candidate in (first, text):
        try:
            return loads_json(candidate)
        except json.JSONDecodeError:
            continue
    return None


def _classify(doc: Any, source: str) -> str:
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resourceLogs" in doc):
        return "otlp-json"
    hint = _named_only(doc)
    if hint is None and isinstance(doc, dict) and ("steps" in doc or "id" in doc):
        return "trajectory"
    if hint is not None:
        raise InvalidInput(f"looks like {hint} input: name it with --format {hint}", source)
    if isinstance(doc, dict):
        what = f"a JSON object with keys {', '.join(repr(str(k)[:40]) for k in sorted(doc)[:6])}"
    else:
        what = f"a JSON {'array' if isinstance(doc, list) else type(doc).__name__}"
    raise InvalidInput(
        f"cannot tell its format: {what}, neither OTLP/JSON (resourceSpans) nor a run in the trajectory form "
        f"(steps, id); name it with --format {', '.join(NAMED_ONLY[:-1])} or {NAMED_ONLY[-1]}",
        source,
    )


def _named_only(doc: Any) -> str | None:
    """The named-only format ``doc`` looks like, for the refusal's suggestion (never read as such unasked)."""
    items = doc if isinstance(doc, list) else doc.get("messages") if isinstance(doc, dict) else None
    first = items[0] if isinstance(items, list) and items else None
    if isinstance(doc, dict) and "steps" in doc:
        return None
    if isinstance(first, dict) and isinstance(first.get("type"), str):
        return "crewai" if first["type"].startswith("tool_usage") else "langgraph" if "data" in first else None
    if isinstance(doc, dict) and "events" in doc:
        return "crewai"
    if isinstance(doc, dict) and ({"workflowId", "workflowData"} & doc.keys() or isinstance(doc.get("data"), list)):
        return "n8n"
    return None


def _otlp_protobuf(data: bytes) -> bool:
    from luckrate.adapters.otlp.readers import is_otlp_protobuf

    return is_otlp_protobuf(data)

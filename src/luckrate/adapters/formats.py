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
    "trajectory": ("luckrate.adapters.trajectory", "read_file"),
    "langgraph": ("luckrate.adapters.langgraph", "read_file"),
    "crewai": ("luckrate.adapters.crewai", "read_file"),
    "n8n": ("luckrate.adapters.n8n", "read_file"),
    "otlp": ("luckrate.adapters.otlp", "read_otlp"),
    "otlp-json": ("luckrate.adapters.otlp", "read_otlp_json"),
}
"""Format name -> (module, reader function)."""
GROUPS_TRACES = frozenset({"otlp", "otlp-json"})
"""Formats whose readers take ``runs_by`` (which traces make one run: adapters/otlp/runs.py)."""


def reader(name: str) -> Reader:
    module, function = FORMATS[name]
    return getattr(import_module(module), function)


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

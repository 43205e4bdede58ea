"""Reading a spec's keys: the context every check's key parser is given, with the checks shared by many keys.

A check owns its spec keys (core/checks: each ``Check`` names its ``keys`` and the ``parse`` that validates
them). The loader (core/spec_loader.py) hands each parser one ``Keys``: the raw dict, the declared vocabulary,
what earlier parsers produced, and the list every problem goes to with its location, so a spec reports every
problem at once::

    def parse(keys: Keys) -> dict[str, Any]:
        return {"terminal": frozenset(keys.names("terminal"))}
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

_MISSING: Any = object()


class Keys:
    """One spec's raw keys, as a parser reads them; ``problems`` collects ``(location, message)``."""

    def __init__(self, raw: Mapping[str, Any], tools: Iterable[str], problems: list[tuple[str, str]]) -> None:
        self.raw = raw
        self.vocab = set(tools)
        """The declared tool names; empty when the spec declares no vocabulary (then any name is accepted)."""
        self.problems = problems
        self.parsed: dict[str, Any] = {}
        """What the parsers before this one produced (a parser may read what an earlier one validated)."""

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def problem(self, where: str, message: str) -> None:
        self.problems.append((where, message))

    def names(self, key: str, value: Any = _MISSING) -> list[str]:
        """``key``'s value (or ``value``) as a list of tool names, each known to the vocabulary."""
        return names(self.raw.get(key, ()) if value is _MISSING else value, key, self.problems, self.vocab)

    def number(self, key: str, kind: type) -> Any:
        """``key``'s value as a positive ``int`` (``kind`` int) or number; None when absent or wrong."""
        value = self.raw.get(key)
        if value is None:
            return None
        accepted = (int,) if kind is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, accepted) or value <= 0:
            self.problem(key, f"must be a positive {'integer' if kind is int else 'number'}, got {value!r}")
            return None
        return kind(value)

    def regex(self, value: Any, where: str) -> re.Pattern[str] | None:
        if not isinstance(value, str):
            self.problem(where, f"must be a regular expression (a string), got {type(value).__name__}")
            return None
        try:
            return re.compile(value)
        except re.error as e:
            self.problem(where, f"bad regular expression {value!r}: {e}")
            return None

    def tool_dict(self, key: str, what: str) -> dict[str, Any]:
        """``key``'s value as a dict keyed by tool name, unknown tools reported (the values are the caller's)."""
        value = self.raw.get(key, {})
        if not isinstance(value, Mapping):
            self.problem(key, f"must be a dict of tool name to {what}, got {type(value).__name__}")
            return {}
        out = {}
        for tool, inner in value.items():
            if not isinstance(tool, str) or not tool:
                self.problem(key, f"must be keyed by tool names, got {tool!r}")
            elif self.vocab and tool not in self.vocab:
                self.problem(f"{key}.{tool}", f"unknown tool {tool!r}{suggest(tool, self.vocab)}")
            else:
                out[tool] = inner
        return out


def suggest(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or nothing."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def names(value: Any, key: str, problems: list[tuple[str, str]], vocab: set[str] | None = None) -> list[str]:
    """``value`` as a list of tool names (each in ``vocab`` when one is declared); problems located at ``key``."""
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        problems.append((key, f"must be a list of tool names, got {type(value).__name__}"))
        return []
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            problems.append((f"{key}[{i}]", f"must be a tool name (non-empty string), got {item!r}"))
        elif vocab and item not in vocab:
            problems.append((f"{key}[{i}]", f"unknown tool {item!r}{suggest(item, vocab)}"))
        else:
            out.append(item)
    return out

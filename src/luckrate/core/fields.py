"""Tool results read as fields: which part of a result holds a value, and whether it is free text.

Taint hinges on *where* in an untrusted result a value sits. An address alone in a ``participants``
list or an ``IBAN: ...`` line is a value some system or form put in its own field; an address inside
an e-mail body or a web page is free text that whoever wrote the text chose, which is where an
injected instruction lives. So a result is read, in this order, as:

1. JSON, or a Python literal (a repr of dicts and lists, as LangChain tools often return; read with
   ``ast.literal_eval``, which never executes anything);
2. YAML-like or ``key: value`` text, line by line: ``key: value`` lines, ``- item`` list lines, and
   every other line as free text of the key above it;
3. otherwise one field of free text.

A leaf is a **value** when the whole leaf is one value: one token, or a date, time, date-time or
grouped number written with spaces. Anything else is **free text** (prose): it is read once more, line
by line, so that ``key: value`` lines inside a text field or a file still count as values.

Bounds: results over ``MAX_PARSED`` characters are not parsed (they are free text as a whole), and
nesting deeper than ``MAX_DEPTH`` is cut, so a hostile result costs at most linear time.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from luckrate.core.forms import is_whole_value

MAX_PARSED = 200_000
MAX_DEPTH = 32

_KV = re.compile(r"[ \t]*(?:- )?([A-Za-z_][\w.\- ]{0,39}?)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")
_ITEM = re.compile(r"[ \t]*- (.*?)[ \t]*")


@dataclass(frozen=True)
class Field:
    """One leaf of a result."""

    path: str
    """Where in the result: ``[0].participants[1]``, ``IBAN``, ``body``; ``""`` for unstructured text."""
    text: str
    prose: bool
    """True for free text (written by someone), False for a value in its own field."""

    @property
    def name(self) -> str:
        return field_name(self.path)


def field_name(path: str) -> str:
    """The last key of a field path, case-folded, without list indexes: what a spec's field list names."""
    return _INDEXES.sub("", path).rsplit(".", 1)[-1].casefold()


_INDEXES = re.compile(r"\[\d*\]")


def fields(text: str) -> list[Field]:
    """The leaves of a tool result (see the module docstring for how it is read)."""
    if len(text) > MAX_PARSED:
        return [Field("", text, True)]
    parsed = _structured(text)
    if parsed is not _NOTHING:
        out: list[Field] = []
        _leaves(parsed, "", out, 0)
        return out
    return _lines(text, "")


_NOTHING = object()


def _structured(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[(":
        return _NOTHING
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOTHING


def _leaves(value: Any, path: str, out: list[Field], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            _leaves(inner, f"{path}.{key}" if path else str(key), out, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, inner in enumerate(value):
            _leaves(inner, f"{path}[{i}]", out, depth + 1)
    elif isinstance(value, str):
        out.extend(leaf(path, value))
    elif value is not None:
        out.append(Field(path, str(value), False))


def leaf(path: str, text: str) -> list[Field]:
    """One string leaf: a value, or free text read again line by line for ``key: value`` lines."""
    if is_value(text):
        return [Field(path, text.strip(), False)]
    if "\n" in text:
        return _lines(text, path)
    return [Field(path, text, True)]


def is_value(text: str) -> bool:
    """The whole text is one value: a single token, or a date/time/grouped number written with spaces."""
    stripped = text.strip()
    if not stripped:
        return False
    if not any(c.isspace() for c in stripped):
        return True
    return len(stripped) <= 64 and is_whole_value(stripped)


def _lines(text: str, parent: str) -> list[Field]:
    out: list[Field] = []
    key = parent
    for line in text.splitlines():
        if not line.strip():
            continue
        kv = _KV.fullmatch(line)
        if kv:
            key = f"{parent}.{kv[1]}" if parent else kv[1]
            if kv[2]:
                value = _unquote(kv[2])
                out.append(Field(key, value, not is_value(value)))
            continue
        item = _ITEM.fullmatch(line)
        if item:
            value = _unquote(item[1])
            out.append(Field(f"{key}[]", value, not is_value(value)))
            continue
        out.append(Field(key, line.strip(), True))
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value

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
import csv
import json
import re
from dataclasses import dataclass
from typing import Any

from luckrate.core.forms import is_whole_value
from luckrate.core.frozen import fast_init

MAX_PARSED = 200_000
MAX_DEPTH = 32

# ``key: value`` / ``- key: value``: a key of at most 60 characters and 3 spaces, no quotes or commas;
# the colon is followed by a space or the line's end, so a URL or a clock time is never a key.
_KV = re.compile(r"[ \t]*(?:- )?([^\s:,;\"'\-#][^:,;\"']{0,59}?)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")
_ITEM = re.compile(r"[ \t]*- (.*?)[ \t]*")


@fast_init
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

    @property
    def record(self) -> str | None:
        return record_of(self.path)


def field_name(path: str, fold: bool = True) -> str:
    """The last key of a field path without list indexes, case-folded unless ``fold`` is False: what a
    spec's field list names."""
    if "[" in path:
        path = _INDEXES.sub("", path)
    last = path.rpartition(".")[2]
    return last.casefold() if fold else last


def record_of(path: str | None) -> str | None:
    """The record a field path belongs to when the result is a list of records (``[3]``), else None."""
    m = _RECORD.match(path or "")
    return m[0] if m else None


_SPACE = re.compile(r"\s")
_RECORD = re.compile(r"\[\d+\]")
_INDEXES = re.compile(r"\[[^\]]*\]")


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
_DECODER = json.JSONDecoder()


def json_value(text: str) -> Any:
    """``json.loads`` for text with no surrounding whitespace: the decoder called directly. json.loads'
    own checks and whitespace passes took 2.5 µs for a 100-byte argument object the decoder reads in 0.6.
    Raises ValueError as json.loads does (trailing data included)."""
    value, end = _DECODER.raw_decode(text)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _structured(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[(":
        return _NOTHING
    try:
        return json_value(stripped)
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
    if "\n" in text:  # the text as a whole too: an argument may copy it whole (a channel's multi-line name)
        return [Field(path, text, True), *_lines(text, path)]
    return [Field(path, text, True)]


def is_value(text: str) -> bool:
    """The whole text is one value: a single token, or a date/time/grouped number written with spaces."""
    stripped = text.strip()
    if not stripped:
        return False
    if _SPACE.search(stripped) is None:
        return True
    return len(stripped) <= 64 and is_whole_value(stripped)


def _lines(text: str, parent: str) -> list[Field]:
    """YAML-like or ``key: value`` text, a CSV table, or free text, line by line."""
    lines = text.splitlines()
    table = _table([line for line in lines if line.strip()], parent)
    if table is not None:
        return table
    out: list[Field] = []
    keys: list[tuple[int, str]] = []  # (level, path) of the keys above the current line
    records, top = -1, None  # list items at the outermost list level are records: paths [0]., [1]., ...
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if not stripped:
            i += 1
            continue
        indent = len(line) - len(stripped)
        item_line = stripped.startswith("- ")
        level = indent + 2 if item_line else indent
        while keys and keys[-1][0] >= level:
            keys.pop()
        kv = _KV.fullmatch(line)
        item = None if kv else _ITEM.fullmatch(line)
        if item_line and (top is None or indent <= top) and not keys:
            top, records = indent, records + 1
        base = f"{parent}[{records}]" if records >= 0 and not keys else parent
        above = keys[-1][1] if keys else base
        if kv is None and item is None:  # a line of text, even a one-word one: only keys and items make values
            out.append(Field(above, stripped, True))
            i += 1
            continue
        value, i = _scalar(kv[2] if kv else item[1], lines, i, indent)  # type: ignore[index]  # one is set
        if kv:
            key = kv[1]
            if any(c in key for c in _ID_MARKS):  # a mapping keyed by data: {"kim@x.test": "rw"}
                out.append(Field(above, key, False))
                path = f"{above}[{key}]"
            else:
                path = f"{above}.{key}" if above else key
            keys.append((level, path))
        else:
            path = f"{above}[]"
        if value:
            out.extend(leaf(path, value))
    return out


_ID_MARKS = "@./0123456789"


def _scalar(first: str | None, lines: list[str], i: int, indent: int) -> tuple[str, int]:
    """A scalar that may continue on the following, deeper lines (YAML folding); returns it and the next line."""
    if not first:
        return "", i + 1
    if first[0] in "'\"" and not (len(first) > 1 and first.endswith(first[0]) and not first.endswith("\\" + first[0])):
        quote, parts = first[0], [first]
        while i + 1 < len(lines) and not _closes(lines[i + 1], quote):
            i += 1
            parts.append(lines[i].strip() or "\n")
        if i + 1 < len(lines):
            i += 1
            parts.append(lines[i].strip())
        return _unfold(parts, quote), i + 1
    parts = [first]
    while i + 1 < len(lines):
        nxt = lines[i + 1]
        deeper = len(nxt) - len(nxt.lstrip()) > indent
        if not deeper or _KV.fullmatch(nxt) or _ITEM.fullmatch(nxt):
            break
        i += 1
        parts.append(nxt.strip())
    return _unquote(" ".join(parts)), i + 1


def _closes(line: str, quote: str) -> bool:
    stripped = line.rstrip()
    return stripped.endswith(quote) and not stripped.endswith("\\" + quote) and not stripped.endswith(quote * 2)


def _unfold(parts: list[str], quote: str) -> str:
    """A quoted YAML scalar over several lines: line breaks fold to spaces, escapes are decoded."""
    text = ""
    for part in parts:
        if text.endswith("\\") and quote == '"':
            text = text[:-1] + part
        elif part == "\n" or text.endswith("\n"):
            text += part
        else:
            text = f"{text} {part}" if text else part
    body = text[1:-1] if len(text) >= 2 and text.endswith(quote) else text[1:]
    if quote == "'":
        return body.replace("''", "'")
    try:
        return str(json.loads(f'"{body.replace(chr(92) + " ", " ")}"'))
    except ValueError:
        return body


def _table(lines: list[str], parent: str) -> list[Field] | None:
    """A CSV table (a header and rows with at least as many commas): one field per cell, or None."""
    if len(lines) < 2 or ": " in lines[0] or (columns := lines[0].count(",")) < 1:
        return None
    if sum(line.count(",") >= columns for line in lines[1:]) < 2 * (len(lines) - 1) / 3:
        return None
    rows = list(csv.reader(lines))
    header = [h.strip() or f"{c}" for c, h in enumerate(rows[0])]
    out = []
    for r, row in enumerate(rows[1:]):
        cells = row[:columns] + [",".join(row[columns:])]
        for name, cell in zip(header, cells):
            if cell.strip():
                out.append(
                    Field(f"{parent}[{r}].{name}" if parent else f"[{r}].{name}", cell.strip(), not is_value(cell))
                )
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value

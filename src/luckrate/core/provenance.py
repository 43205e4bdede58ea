"""Provenance: where did each identifier-shaped argument come from?

Walking the trajectory in order, the sources seen so far are the user's input (``user``) and each
tool result once it returned (``tool:<name>``). Each source is indexed once, as it arrives, into a
map from token to the sources that contain it, so looking an argument up costs one dict probe and
grading stays linear in the size of the trajectory (no rescan of earlier results per argument).

Identifier-shaped (the exact rule): a string of 1..256 characters with no whitespace, containing at
least one letter or digit and at least one mark of an identifier — a digit or one of ``@ / : - _ .``
(``ORD-12345``, ``alice@example.com``, ``https://x.test/a``, ``99817``); or an integer of at least
4 digits (order numbers), never a bool. Prose (anything with whitespace) is skipped because synthesis
is its point; plain words (``high``, ``refund``) and small numbers (counts, limits, amounts) are
skipped because they are vocabulary, not references. Floats are quantities and are skipped.

The ceiling of the method, honestly: a match is token equality after case folding. Source text is
cut into tokens at whitespace, quotes, brackets, commas, semicolons, backslashes and ``<>|``; each token
is also indexed without leading/trailing sentence punctuation and in parts split at ``: / = ? & #``
(``mailto:bob@x.test`` also yields ``bob@x.test``). Tokens made of letters only are not indexed: an
identifier always holds a mark or is all digits, so no lookup could hit them (case folding neither adds nor
removes a mark, so this holds after folding too). So it cannot tell apart:
- a value the agent derived or reformatted (``129`` vs ``129.0``, ``ORD 12345`` vs ``ORD-12345``) — it is
  reported ungrounded (a warning);
- a value glued inside a longer token with no separator (``xORD-1y``) — not found;
- a value that occurs in a source by coincidence — counted as grounded in it;
- which of several sources the agent actually read it from — all of them are listed.
"""

from __future__ import annotations

import re
from itertools import filterfalse, repeat
from dataclasses import dataclass
from typing import Any

from luckrate.core.step import Trajectory

USER = "user"
MAX_ID_LENGTH = 256

# No whitespace, a letter or digit, and a mark: one match instead of three searches.
_IDENTIFIER = re.compile(r"(?=\S*?[A-Za-z0-9])(?=\S*?[0-9@/:\-_.])\S+")
# Token and part cuts as str.translate tables followed by str.split(): both run in C, where a regex
# findall stepped through every character (tokens() was most of grading time; the README's Benchmarks section).
# str.split() and the regex \s agree on what is whitespace (both use Py_UNICODE_ISSPACE).
_TOKEN_CHARS = "\"'`,;()[]{}<>|\\"
_PART_CHARS = _TOKEN_CHARS + ":/=?&#"
_TOKEN_CUTS = str.maketrans(dict.fromkeys(_TOKEN_CHARS, " "))
_PART_CUTS = str.maketrans(dict.fromkeys(_PART_CHARS, " "))
# The same cuts for ASCII text as byte tables: bytes.translate is a table lookup per byte, several times
# faster than str.translate's dict lookups (most tool results are ASCII JSON).
_TOKEN_CUTS_ASCII = bytes.maketrans(_TOKEN_CHARS.encode(), b" " * len(_TOKEN_CHARS))
_PART_CUTS_ASCII = bytes.maketrans(_PART_CHARS.encode(), b" " * len(_PART_CHARS))
_TRAIL = ".:!?"


def source_name(tool: str) -> str:
    return f"tool:{tool}"


def is_identifier(value: Any) -> bool:
    """The identifier-shape rule documented in this module's docstring."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 1000
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_LENGTH:
        return False
    return _IDENTIFIER.fullmatch(value) is not None


def tokens(text: str) -> set[str]:
    """Every token an identifier may be matched against, case-folded (see the module docstring).

    Tokens of letters only are left out: three in five tokens of a typical result are words, and the
    index they cost was most of grading time (the README's Benchmarks section). Every step runs in C (filterfalse and
    map over str methods), none in a Python-level loop."""
    toks = set(filterfalse(str.isalpha, _cut(text.casefold(), _TOKEN_CUTS, _TOKEN_CUTS_ASCII).split()))
    # Parts of every token at once: cutting the kept tokens at the part marks too yields exactly their
    # parts (a word's only part is itself, and is left out anyway). Stripping only removes characters,
    # so a word-only token never gains a mark: filtering before stripping loses nothing.
    parts = filterfalse(str.isalpha, _cut(" ".join(toks), _PART_CUTS, _PART_CUTS_ASCII).split())
    out = toks.union(map(str.rstrip, toks, repeat(_TRAIL)), map(str.lstrip, toks, repeat(_TRAIL)),
                     map(str.rstrip, parts, repeat(_TRAIL)))
    out.discard("")
    return out


def _cut(text: str, table: dict[int, str], ascii_table: bytes) -> str:
    """``text`` with every cut character replaced by a space."""
    if text.isascii():
        return text.encode("ascii").translate(ascii_table).decode("ascii")
    return text.translate(table)


class SourceIndex:
    """Token -> the sources containing it; each source text is indexed exactly once."""

    def __init__(self) -> None:
        self._where: dict[str, set[str]] = {}

    def add(self, source: str, text: str) -> None:
        where = self._where
        for tok in tokens(text):
            found = where.get(tok)
            if found is None:
                where[tok] = {source}
            else:
                found.add(source)

    def sources(self, value: Any) -> frozenset[str]:
        return frozenset(self._where.get(str(value).casefold(), ()))


@dataclass(frozen=True)
class Argument:
    """One identifier-shaped argument value and the sources that contained it when it was passed."""

    step: int
    tool: str
    path: str
    """Where in the arguments: ``to``, ``items[0].sku``."""
    value: str
    sources: frozenset[str]


def walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of nested dicts and lists, in order."""
    out: list[tuple[str, Any]] = []
    _walk(value, path, out)
    return out


def _walk(value: Any, path: str, out: list[tuple[str, Any]]) -> None:
    # Appends instead of yielding, and leaves are appended without a call: a generator per level and a
    # call per leaf cost more than the leaves themselves (the README's Benchmarks section).
    if isinstance(value, dict):
        for key, inner in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(inner, _NESTED):
                _walk(inner, where, out)
            else:
                out.append((where, inner))
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            if isinstance(inner, _NESTED):
                _walk(inner, f"{path}[{i}]", out)
            else:
                out.append((f"{path}[{i}]", inner))
    else:
        out.append((path, value))


_NESTED = (dict, list, tuple)


def trace(traj: Trajectory) -> list[Argument]:
    """Trace every identifier-shaped argument of every step to the sources seen before it."""
    index = SourceIndex()
    for text in traj.inputs:
        index.add(USER, text)
    found = []
    for step in traj.steps:
        for path, value in walk(step.args):
            if is_identifier(value):
                found.append(Argument(step.index, step.tool, path, str(value), index.sources(value)))
        if step.result is not None:
            index.add(source_name(step.tool), step.result)
    return found

"""Identifiers: which argument values are identifier-shaped, and the tokens of a text they are matched against.

Identifier-shaped (the exact rule): a string of 1..256 characters with no whitespace, containing at
least one letter or digit and at least one mark of an identifier — a digit or one of ``@ / : - _ .``
(``ORD-12345``, ``kim@example.com``, ``https://x.test/a``, ``99817``); or an integer of at least
4 digits (order numbers), never a bool. Plain words (``high``, ``refund``) and small numbers (counts,
limits, amounts) are vocabulary, not references; floats are quantities. For the tools ``trace`` is told
to ``scan`` (taint's privileged tools), a value with spaces that is still one value (a date-time, a
spaced IBAN) and the strong identifiers inside free text (``forms.is_strong``) are traced too, marked
``embedded``: ``ungrounded`` leaves them alone, as it always left values with spaces.

Matching: source text is cut into tokens at whitespace, quotes, brackets, commas, semicolons, backslashes
and ``<>|``; each token is also indexed without leading/trailing sentence punctuation and in parts split
at ``: / = ? & #`` (``mailto:kim@x.test`` also yields ``kim@x.test``), all case-folded; a sentence glued
to the next (``www.x.com.Then``) is also cut at the period. Tokens made of
letters only are not indexed (no identifier can equal one). A value not found verbatim is looked up in
its normalised forms (core/forms.py: URLs, dates, times, numbers, grouped digits). Where in a result a
value sits (core/fields.py) is worked out only for sources a privileged value is traced to.
"""

from __future__ import annotations

import re
from itertools import filterfalse, repeat
from typing import Any

MAX_ID_LENGTH = 256

# No whitespace, a letter or digit, and a mark: one match instead of three searches.
IDENTIFIER_SHAPE = re.compile(r"(?=\S*?[A-Za-z0-9])(?=\S*?[0-9@/:\-_.])\S+")
# Token and part cuts as str.translate tables followed by str.split(): both run in C, where a regex
# findall stepped through every character (tokens() was most of grading time; benchmarks/README.md).
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


def is_identifier(value: Any) -> bool:
    """The identifier-shape rule documented in this module's docstring."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 1000
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_LENGTH:
        return False
    return IDENTIFIER_SHAPE.fullmatch(value) is not None


def tokens(text: str) -> set[str]:
    """Every token an identifier may be matched against, case-folded (see the module docstring).

    Tokens of letters only are left out: three in five tokens of a typical result are words, and the
    index they cost was most of grading time (benchmarks/README.md). Every step runs in C (filterfalse and
    map over str methods), none in a Python-level loop."""
    out = _tokens(text)
    cut = _unglued(text)
    if cut is not None:
        out |= _tokens(cut)
    return out


# A sentence glued to the next (``see www.example.com.Then``: a space left out, or markup stripped
# between two blocks): a period before a capitalised word. The text is tokenised both as written and cut
# there, so ``www.example.com`` is a token and ``www.Example.com`` (a capital after a dot) is still whole.
_GLUED = re.compile(r"\.(?=[A-Z][a-z])")


def _unglued(text: str) -> str | None:
    """``text`` with a space after each glued sentence end; None when it has none (the common case)."""
    if _GLUED.search(text) is None:
        return None
    return _GLUED.sub(". ", text)


def searchable(text: str) -> str:
    """``text`` as a scan searches it once case-folded: followed by its unglued spelling, if it has one, so
    that a scan (``holds``) finds what ``tokens(text)`` holds (case is gone once folded)."""
    cut = _unglued(text)
    return text if cut is None else text + "\n" + cut


def _tokens(text: str) -> set[str]:
    toks = set(filterfalse(str.isalpha, _cut(text.casefold(), _TOKEN_CUTS, _TOKEN_CUTS_ASCII).split()))
    # Parts of every token at once: cutting the kept tokens at the part marks too yields exactly their
    # parts (a word's only part is itself, and is left out anyway). Stripping only removes characters,
    # so a word-only token never gains a mark: filtering before stripping loses nothing.
    parts = filterfalse(str.isalpha, _cut(" ".join(toks), _PART_CUTS, _PART_CUTS_ASCII).split())
    out = toks.union(
        map(str.rstrip, toks, repeat(_TRAIL)),
        map(str.lstrip, toks, repeat(_TRAIL)),
        map(str.rstrip, parts, repeat(_TRAIL)),
    )
    out.discard("")
    return out


TOKEN_WINDOW = 512
"""How far back from a hit its token's start is looked for; a longer token has the whole text cut."""
_CUT_CLASS = "[\\s" + re.escape(_TOKEN_CHARS) + "]"
# What tokens() cuts at: whitespace (str.split and the regex \s agree, as above) and the token cuts.
CUT_OR_SPACE = re.compile(_CUT_CLASS)
_TOKEN_START = re.compile(r"(?s).*" + _CUT_CLASS)


_CUT_CHARS = frozenset(_TOKEN_CHARS)


def holds(folded: str, key: str, at: int | None = None) -> bool:
    """``key in tokens(folded)``, cutting only the tokens ``key`` occurs in. Exact: tokens() treats each
    token on its own, and everything it derives from a token lies inside that token. ``at``: where ``key`` first
    occurs, when the caller has found it already."""
    if at is None:
        at = folded.find(key)
    size, length = len(key), len(folded)
    cuts = _CUT_CHARS
    while at >= 0:
        end = at + size
        # Most hits sit between quotes or spaces (a token boundary: the text's edge, whitespace or a token cut):
        # the token is the key itself, no search needed. Written out inline: the innermost test of every lookup.
        c = folded[at - 1] if at else " "
        if c in cuts or c.isspace():
            c = folded[end] if end < length else " "
            if c in cuts or c.isspace():
                if not key.isalpha():  # a token of letters only is not indexed
                    return True
                at = folded.find(key, end)
                continue
        after = CUT_OR_SPACE.search(folded, end)
        stop = after.start() if after else length
        low = max(0, at - TOKEN_WINDOW)
        before = _TOKEN_START.match(folded, low, at)
        if before is not None:
            start = before.end()
        elif low == 0:
            start = 0
        else:
            return key in tokens(folded)
        if key in tokens(folded[start:stop]):  # the key is part of a longer token (never the whole of it here)
            return True
        at = folded.find(key, stop)
    return False


def _cut(text: str, table: dict[int, str], ascii_table: bytes) -> str:
    """``text`` with every cut character replaced by a space."""
    if text.isascii():
        return text.encode("ascii").translate(ascii_table).decode("ascii")
    return text.translate(table)


def walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of nested dicts and lists, in order."""
    out: list[tuple[str, Any]] = []
    _walk(value, path, out)
    return out


def _walk(value: Any, path: str, out: list[tuple[str, Any]]) -> None:
    # Appends instead of yielding, and leaves are appended without a call: a generator per level and a
    # call per leaf cost more than the leaves themselves (benchmarks/README.md).
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


MAX_SCANNED = 20_000
"""Free-text arguments longer than this are not searched for identifiers inside them (bounded cost)."""


def words(text: str) -> list[str]:
    cut = _cut(text.casefold(), _TOKEN_CUTS, _TOKEN_CUTS_ASCII).split()
    return [w.strip(_TRAIL + "*") for w in cut]

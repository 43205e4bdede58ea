"""Provenance: where did each identifier-shaped argument come from?

Walking the trajectory in order, the sources seen so far are the user's input (``user``) and each
tool result once it returned (``tool:<name>``). A run's first lookups search the sources' text and cut
only the tokens a key occurs in; once the text searched passes a few times the text held, each source is
indexed once into a map from key to the sources that contain it, so grading stays linear in the size of
the trajectory however many arguments it has (``SourceIndex.tokens_of``).

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

The ceiling of the method, honestly, it cannot tell apart:
- a value the agent computed from one it made up, in general: a few composed shapes (a date from its
  month or day, a sum of two amounts, an address from a name and a domain, a path from its parts) are
  told apart by core/composition.py and reported ``composed``; any other computed value (a date one day
  on) is reported ungrounded (a warning), by decision (core/forms.py says why);
- a value glued inside a longer token with no separator (``xORD-1y``) — not found;
- a value that occurs in a source by coincidence — counted as grounded in it;
- which of several sources the agent actually read it from — all of them are listed.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import filterfalse, repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from luckrate.core import forms
from luckrate.core.fields import Field, fields, record_of
from luckrate.core.frozen import fast_init
from luckrate.core.step import Step, Trajectory

if TYPE_CHECKING:
    from luckrate.core.composition import Composition
    from luckrate.core.intent import Request

USER = "user"
MAX_ID_LENGTH = 256

# No whitespace, a letter or digit, and a mark: one match instead of three searches.
_IDENTIFIER = re.compile(r"(?=\S*?[A-Za-z0-9])(?=\S*?[0-9@/:\-_.])\S+")
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
    that a scan (``_holds``) finds what ``tokens(text)`` holds (case is gone once folded)."""
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


REFERENCE_PREFIX = 8
"""The fewest characters of a source's field an argument must repeat from its start to name the field's
object (``copied_whole``): shorter starts ("Re: ", "The ") say nothing."""
SHORT_POSITIONS = 16
"""A key's positions in the token index are a tuple up to this many, then a list (``_catch_up``)."""
SCAN_FACTOR = 8
"""Scan sources for keys until the characters scanned pass this many times the characters held (then
index every token: ``SourceIndex.tokens_of``)."""
TOKEN_WINDOW = 512
"""How far back from a hit its token's start is looked for; a longer token has the whole text cut."""
_CUT_CLASS = "[\\s" + re.escape(_TOKEN_CHARS) + "]"
# What tokens() cuts at: whitespace (str.split and the regex \s agree, as above) and the token cuts.
_CUT_OR_SPACE = re.compile(_CUT_CLASS)
_TOKEN_START = re.compile(r"(?s).*" + _CUT_CLASS)


_CUT_CHARS = frozenset(_TOKEN_CHARS)


def _cut_at(text: str, i: int) -> bool:
    """True when position ``i`` is a token boundary: the text's edge, whitespace or a token cut."""
    if i < 0:
        return True
    c = text[i]
    return c in _CUT_CHARS or c.isspace()


def _holds(folded: str, key: str) -> bool:
    """``key in tokens(folded)``, cutting only the tokens ``key`` occurs in. Exact: tokens() treats each
    token on its own, and everything it derives from a token lies inside that token."""
    at = folded.find(key)
    size, length = len(key), len(folded)
    while at >= 0:
        end = at + size
        # Most hits sit between quotes or spaces: the token is the key itself, no search needed.
        if _cut_at(folded, at - 1) and (end == length or _cut_at(folded, end)):
            if not key.isalpha():  # a token of letters only is not indexed
                return True
            at = folded.find(key, end)
            continue
        after = _CUT_OR_SPACE.search(folded, end)
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


@fast_init
@dataclass(frozen=True)
class Origin:
    """One place an argument's value was found: a source, and where in it."""

    source: str
    """``user`` or ``tool:<name>``."""
    step: int | None
    """The step whose result it is; None for the user's input."""
    field: str | None
    """The field path in the result (core/fields.py); None when the value was not located in a field."""
    prose: bool
    """True when found in free text; False when it is a value in its own field."""
    echo: bool = False
    """The step that returned it had been passed the same value: an echo of the agent's own input."""
    position: int = dataclasses.field(default=-1, compare=False, repr=False)
    """The source's position in its ``SourceIndex``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "step": self.step,
            "field": self.field,
            "kind": "text" if self.prose else "value",
            "echo": self.echo,
        }


_Positions = tuple[int, ...] | list[int]
"""A key's source positions: a tuple while short, a list once long (``_catch_up``)."""


class SourceIndex:
    """Keys -> the sources containing them; each source text is indexed at most once, when first needed.

    Three layers, each built only as lookups need it, so grading stays linear and a run whose values
    are all found verbatim pays for plain tokens only:
    - plain tokens (``tokens()``): scanned for while lookups are few, then indexed and caught up to the
      newest source at each lookup;
    - canonical forms (core/forms.py), built from the first lookup that needs one;
    - fields (core/fields.py), per source, only for sources an argument is traced to by ``origins``.
    """

    def __init__(self) -> None:
        self._sources: list[tuple[str, int | None, str, Any]] = []
        self._steps: list[int] = []
        """Beside ``_sources``: the step of each (-1 for the user's input), ascending."""
        self._names: list[str] = []
        self.users = 0
        """How many sources, from the first, are the user's input (read only)."""
        """User sources come first (``trace`` adds them before any step): positions below this are the user's."""
        self._folded: list[str] = []
        self._chars = 0
        """Characters of every source so far."""
        self._scans: dict[str, tuple[list[int], int]] = {}
        """key -> (positions holding it, sources scanned for it): the scanning mode's results."""
        self._scanned = 0
        """Characters scanned so far; past ``SCAN_FACTOR`` times ``_chars``, the token index takes over."""
        self._tokens: dict[str, _Positions] | None = None
        self._tokens_upto = 0
        self._forms: dict[str, _Positions] = {}
        self._forms_upto = 0
        self._located: dict[int, _Located] = {}
        self._user_keys: set[str] | None = None
        self._called: dict[int, frozenset[str]] = {}
        self._called_tokens: dict[int, frozenset[str]] = {}
        self._found: dict[tuple[str, int], tuple[frozenset[str], tuple[int, ...]]] = {}
        self._name_sets: dict[frozenset[str], frozenset[str]] = {}
        self._folded_texts: dict[int, str] = {}

    def add(self, source: str, text: str, step: int | None = None, args: Any = None) -> None:
        """Add a source; ``args`` are the producing call's arguments (for echoes and designation)."""
        if source == USER and self.users == len(self._sources):
            self.users += 1
        self._sources.append((source, step, text, args))
        self._steps.append(-1 if step is None else step)
        self._names.append(source)
        if self._tokens is None:  # scanning: the text is searched case-folded (the index cuts its own)
            self._folded.append(searchable(text).casefold())
        self._chars += len(text)

    def names(self, positions: Iterable[int]) -> frozenset[str]:
        """The source names at ``positions``: one shared frozenset per distinct set of names (a long run has
        tens of thousands of arguments but a handful of source combinations, and each set is an object the
        garbage collector walks)."""
        names = frozenset(map(self._names.__getitem__, positions))
        return self._name_sets.setdefault(names, names)

    def found(self, key: str, positions: Sequence[int]) -> tuple[frozenset[str], tuple[int, ...]]:
        """The names and positions of ``positions`` (``tokens_of(key)``), built once per key and length:
        a key's positions only ever grow by appending, and most arguments repeat (ids passed at every step)."""
        cache_key = (key, len(positions))
        hit = self._found.get(cache_key)
        if hit is None:
            hit = self._found[cache_key] = (self.names(positions), tuple(positions))
        return hit

    def tokens_before(self, key: str, before: int) -> Sequence[int]:
        """``tokens_of(key)`` among the sources before position ``before`` only (while scanning, the later
        sources are not searched)."""
        if self._tokens is None and self._scanned <= SCAN_FACTOR * self._chars:
            found: Sequence[int] = self._scan(key, before)  # may hold later ones, scanned for earlier
        else:
            found = self.tokens_of(key)
        return found if not found or found[-1] < before else found[: bisect.bisect_left(found, before)]

    def tokens_of(self, key: str) -> Sequence[int]:
        """The positions (ascending) of the sources holding ``key`` as a plain token; do not modify.

        Two modes, one answer (tests/core/test_provenance_scan.py checks they agree). A run starts by
        *scanning*: each new key is searched for in the sources' text (a C substring search), and only the
        token a hit sits in is cut, so sources no key occurs in are never tokenised (most of a result's
        text is never looked up). Once the characters scanned pass ``SCAN_FACTOR`` times the characters
        held, lookups outnumber what an index costs to build, and the *token index* takes over for the rest
        of the run: grading stays linear however long the run."""
        if self._tokens is None:
            if self._scanned <= SCAN_FACTOR * self._chars:
                return self._scan(key)
            self._tokens, self._scans, self._folded = {}, {}, []
        if self._tokens_upto < len(self._sources):
            self._catch_up(self._tokens, self._tokens_upto, tokens)
            self._tokens_upto = len(self._sources)
        return self._tokens.get(key, _NONE)

    def _scan(self, key: str, before: int | None = None) -> list[int]:
        found, upto = self._scans.get(key) or ([], 0)
        total = len(self._folded) if before is None else min(before, len(self._folded))
        if upto < total:
            if _CUT_OR_SPACE.search(key) is None and key:  # a key with a cut in it is in no token
                folded = self._folded
                for position in range(upto, total):
                    text = folded[position]
                    self._scanned += len(text)
                    if key in text and _holds(text, key):
                        found.append(position)
            self._scans[key] = (found, total)
        return found

    def positions(self, key: str, forms: bool = False) -> set[int]:
        """The positions of the sources holding ``key`` as a token (and, with ``forms``, as a canonical form)."""
        found = set(self.tokens_of(key))
        if forms:
            if self._forms_upto < len(self._sources):
                self._catch_up(self._forms, self._forms_upto, _form_keys)
                self._forms_upto = len(self._sources)
            found.update(self._forms.get(key, ()))
        return found

    def _catch_up(self, table: dict[str, _Positions], start: int, keys_of: Callable[[str], Iterable[str]]) -> None:
        # Positions as tuples while short: a long run's index holds a list for each of hundreds of thousands
        # of keys, and lists are containers every full garbage collection walks (a quarter of grading a
        # 10,000-step run); tuples of ints are untracked by the collector. Long ones become lists.
        get = table.get
        for position in range(start, len(self._sources)):
            for key in keys_of(self._sources[position][2]):  # a set: each key once per source
                found = get(key)
                if found is None:
                    table[key] = (position,)
                elif isinstance(found, list):
                    found.append(position)
                elif len(found) < SHORT_POSITIONS:
                    table[key] = found + (position,)
                else:
                    table[key] = [*found, position]

    def origins(self, position: int, keys: tuple[str, ...]) -> list[Origin]:
        """Where in source ``position`` the keys sit (fields parsed on first use, then cached)."""
        source, step, text, _ = self._sources[position]
        echo = not self.called_at(position).isdisjoint(keys) or not self.called_tokens(position).isdisjoint(keys)
        if source == USER:
            return [Origin(source, None, None, True, False, position)]
        located = self._fields(position)
        places = dict.fromkeys((f.path, f.prose) for key in keys for f in located.get(key))
        if not places:
            return [Origin(source, step, None, True, echo, position)]
        return [Origin(source, step, path, prose, echo, position) for path, prose in places]

    def _fields(self, position: int) -> _Located:
        located = self._located.get(position)
        if located is None:
            located = self._located[position] = _Located(self._sources[position][2])
        return located

    def user_positions(self, alternatives: Sequence[tuple[str, ...]]) -> set[int]:
        """The user sources, when the user wrote any alternative in any form (the user's text is short:
        its forms are computed once, not the whole index's)."""
        if self._user_keys is None:
            self._user_keys = set()
            for _, _, text, _ in self._sources[: self.users]:
                toks = tokens(text)
                self._user_keys |= toks | forms.text_keys(text.casefold(), toks)
        if any(all(k in self._user_keys for k in alt) for alt in alternatives):
            return set(range(self.users))
        return set()

    def texts(self, origin: Origin, keys: tuple[str, ...]) -> list[str]:
        """The texts of the fields of ``origin``'s source that hold any of ``keys`` at ``origin.field``."""
        if origin.source == USER:
            return [self._sources[origin.position][2]]
        located = self._fields(origin.position)
        found = dict.fromkeys(f.text for key in keys for f in located.get(key) if f.path == (origin.field or f.path))
        return list(found) or [self._sources[origin.position][2]]

    def record(self, origin: Origin) -> list[Field]:
        """The value fields of the record ``origin`` sits in (none when its result is not a list of records)."""
        return [f for f in self.record_fields(origin) if not f.prose]

    def copied_whole(self, origin: Origin, text: str) -> bool:
        """True when a field of ``origin``'s source is ``text``, or starts with it (case-folded, spaces collapsed,
        at least ``REFERENCE_PREFIX`` characters): the argument names an object of the source (a channel, a
        file) by its name or the start of it, rather than quoting from its text."""
        if origin.source == USER:
            return False
        wanted = " ".join(text.casefold().split())
        texts = self._fields(origin.position).texts
        if wanted in texts:
            return True
        return len(wanted) >= REFERENCE_PREFIX and any(t.startswith(wanted) for t in texts)

    def all_fields(self, origin: Origin) -> list[Field]:
        """Every field of ``origin``'s source."""
        return self._fields(origin.position).fields

    def record_fields(self, origin: Origin) -> list[Field]:
        """Every field (value or free text) of the record ``origin`` sits in."""
        prefix = record_of(origin.field)
        if prefix is None:
            return []
        return [f for f in self._fields(origin.position).fields if f.record == prefix]

    def call(self, position: int) -> tuple[str, Any]:
        """The tool and arguments of the call that produced source ``position`` (``""`` for the user's input)."""
        source, _, _, args = self._sources[position]
        return source.removeprefix("tool:") if source != USER else "", args

    def fields_at(self, position: int) -> list[Field]:
        """Every field of source ``position``."""
        return self._fields(position).fields

    def siblings_at(self, position: int) -> tuple[int, dict[tuple[str, str], int]]:
        """``siblings`` of source ``position``."""
        return self._fields(position).siblings

    def before(self, step: int) -> int:
        """How many sources there were when step ``step`` was called: positions below it are earlier."""
        return bisect.bisect_left(self._steps, step)

    def tool_positions(self) -> range:
        """The positions of every tool result (user sources come first)."""
        return range(self.users, len(self._sources))

    def text(self, position: int) -> str:
        """The text of source ``position``."""
        return self._sources[position][2]

    def folded(self, position: int) -> str:
        """The text of source ``position``, case-folded (folded once per source, when first asked)."""
        text = self._folded_texts.get(position)
        if text is None:
            text = self._folded_texts[position] = self._sources[position][2].casefold()
        return text

    def designated_records(self, pointed: Callable[[frozenset[str]], bool]) -> list[Origin]:
        """One origin per record of every tool result whose call ``pointed(values given)`` accepts."""
        out: list[Origin] = []
        for position, (source, step, _, _) in enumerate(self._sources):
            if source == USER or not pointed(self.called_at(position)):
                continue
            records = dict.fromkeys(f.record for f in self._fields(position).fields if f.record is not None)
            out.extend(Origin(source, step, record, True, False, position) for record in records)
        return out

    def siblings(self, origin: Origin) -> tuple[int, dict[tuple[str, str], int]]:
        """How many records ``origin``'s result holds, and in how many each (field name, value) occurs;
        worked out once per source."""
        return self._fields(origin.position).siblings

    def called_tokens(self, position: int) -> frozenset[str]:
        """The tokens inside the text arguments of the call that produced source ``position``: a result that
        repeats an identifier the agent wrote into a message body is an echo of that body, not a source."""
        called = self._called_tokens.get(position)
        if called is None:
            args = self._sources[position][3]
            texts = [v for _, v in walk(args or {}) if isinstance(v, str) and len(v) <= MAX_SCANNED and " " in v]
            called = self._called_tokens[position] = frozenset(tokens("\n".join(texts))) if texts else frozenset()
        return called

    def called_at(self, position: int) -> frozenset[str]:
        """The values the call that produced source ``position`` was given (case-folded)."""
        called = self._called.get(position)
        if called is None:
            args = self._sources[position][3]
            called = self._called[position] = frozenset(
                str(v).casefold() for _, v in walk(args or {}) if isinstance(v, (str, int)) and not isinstance(v, bool)
            )
        return called


def _form_keys(text: str) -> set[str]:
    folded = text.casefold()
    return forms.text_keys(folded, tokens(text))


class _Located:
    """A source's fields; a key is looked for in a field's tokens only when its text holds the key at all,
    and in a field's forms only when no token holds it."""

    def __init__(self, text: str) -> None:
        self.fields = fields(text)
        self._folded = [f.text.casefold() for f in self.fields]
        self._texts: frozenset[str] | None = None
        self._forms: list[set[str]] | None = None
        self.by_key: dict[str, list[Field]] = {}

    @functools.cached_property
    def siblings(self) -> tuple[int, dict[tuple[str, str], int]]:
        """How many records the result holds, and in how many each (field name, value) occurs."""
        records: dict[str, set[tuple[str, str]]] = {}
        for f in self.fields:
            if not f.prose and f.record is not None:
                records.setdefault(f.record, set()).add((f.name, f.text.casefold()))
        counts: dict[tuple[str, str], int] = {}
        for pairs in records.values():
            for pair in pairs:
                counts[pair] = counts.get(pair, 0) + 1
        return len(records), counts

    @property
    def texts(self) -> frozenset[str]:
        if self._texts is None:
            self._texts = frozenset(" ".join(t.split()) for t in self._folded)  # YAML folds long lines
        return self._texts

    def get(self, key: str) -> list[Field]:
        found = self.by_key.get(key)
        if found is None:
            found = [f for f, folded in zip(self.fields, self._folded) if key in folded and key in tokens(f.text)]
            if not found:
                if self._forms is None:
                    self._forms = [
                        forms.text_keys(folded, tokens(f.text)) for f, folded in zip(self.fields, self._folded)
                    ]
                found = [f for f, keys in zip(self.fields, self._forms) if key in keys]
            self.by_key[key] = found
        return found


class Argument(NamedTuple):
    """One identifier-shaped argument value and the sources that contained it when it was passed.

    A NamedTuple rather than a frozen dataclass: one is built per traced value, and a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (most of the cost of tracing a value)."""

    step: int
    tool: str
    path: str
    """Where in the arguments: ``to``, ``items[0].sku``."""
    value: str
    sources: frozenset[str]
    looked_up: tuple[str, ...] = ()
    """The normalised forms looked up besides the value itself (core/forms.py); empty when it was found verbatim."""
    matched: tuple[str, ...] = ()
    """The keys (the value or its forms) that were found."""
    positions: tuple[int, ...] = ()
    """The index positions of the sources it was found in (``Provenance.origins`` resolves them)."""
    embedded: bool = False
    """Found inside a free-text argument (a message body), not an argument of its own."""
    whole: str = ""
    """For an embedded value: the whole free-text argument it was found in."""


class Provenance(list[Argument]):
    """The traced arguments of one run (a list of ``Argument``), plus where each was found."""

    def __init__(
        self,
        arguments: list[Argument],
        sources: SourceIndex,
        user_text: str,
        agents: frozenset[str] = frozenset(),
        steps: Sequence[Step] = (),
    ) -> None:
        super().__init__(arguments)
        self.steps = steps
        """The run's steps (``steps[i].index == i``): what each call was given (taint's evidence reads what a
        privileged call operates on). The trajectory's own tuple, not a copy."""
        self.agents = agents
        """The names of the run's agents (the run's, each step's, and every one the source recorded running):
        known to the system that runs them."""
        self.sources = sources
        """Every source of the run (the user's input, each tool result), indexed by key."""
        self.user_text = user_text
        """The user's input, joined: what the user asked for, for checks that weigh intent."""
        self.judged: tuple[Any, list[Any]] | None = None
        """Taint's judgement of each privileged argument and the spec it was made under, worked out once per run
        (``grounding.judgements``); None until then."""
        self.unwritten: list[tuple[Argument, tuple[bool, str | None]]] | None = None
        """The arguments no source holds as written, each with how the sources hold it (``grounding``'s
        ``_unwritten``), worked out once per run on first use; None until then."""
        self.request: Request | None = None
        """What the user's input asks for, worked out on first use by ``intent.Request.of``; None until then."""
        self._run_days: frozenset[str] | None = None
        self.composition: Composition | None = None
        """What the earlier sources hold in parts, worked out on first use by ``composition.of``; None until then."""

    @property
    def run_days(self) -> frozenset[str]:
        """The run's own dates (ISO, UTC) from its clock: the days its steps started on; empty without a clock
        (worked out on first use: most runs never ask)."""
        if self._run_days is None:
            clocked = any(s.t > 0.0 or s.duration > 0.0 for s in self.steps)  # as Trajectory.has_clock
            times = {step.t for step in self.steps} if clocked else set()
            self._run_days = frozenset(filter(None, map(_day, times)))
        return self._run_days

    def origins(self, arg: Argument) -> list[Origin]:
        """Every place ``arg`` was found, located to a field of each tool result."""
        out: list[Origin] = []
        for position in arg.positions:
            out.extend(self.sources.origins(position, arg.matched))
        return out


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


def trace(
    traj: Trajectory, scan: frozenset[str] | set[str] = frozenset(), thorough: frozenset[str] | set[str] = frozenset()
) -> Provenance:
    """Trace every identifier-shaped argument of every step to the sources seen before it.

    ``scan``: tools whose free-text arguments are searched for identifiers inside them (e-mail
    addresses, URLs, IBANs, long numbers: ``forms.is_strong``). ``thorough``: tools whose arguments are
    also looked up in normalised forms when found verbatim but not in the user's input (so a value the
    user wrote in another form is still the user's). Every other argument tries its forms only when it
    is not found verbatim.
    """
    index = SourceIndex()
    for text in traj.inputs:
        index.add(USER, text)
    found = []
    for step in traj.steps:
        scanning, deep = step.tool in scan, step.tool in thorough
        for path, value in walk(step.args):
            if is_identifier(value):
                found.append(_lookup(index, step, path, str(value), False, deep))
            elif scanning and isinstance(value, str) and value:
                for text, embedded in _inside(value, scanning):
                    found.append(_lookup(index, step, path, text, embedded, deep)._replace(whole=value))
        if step.result is not None:
            index.add(source_name(step.tool), step.result, step.index, step.args)
    agents = frozenset(a for a in (traj.agent, *traj.agents, *(step.agent for step in traj.steps)) if a)
    return Provenance(found, index, "\n".join(traj.inputs), agents, traj.steps)


def _day(t: float) -> str | None:
    """The ISO date (UTC) of epoch seconds ``t``; None out of the calendar's range (a clock is span data)."""
    try:
        days = int(t // 86400)
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=days)).isoformat() if days > 0 else None
    except (ValueError, OverflowError):
        return None


_NONE: list[int] = []


def _inside(value: str, scan: bool) -> list[tuple[str, bool]]:
    """With ``scan``, the values to trace in a string that is not identifier-shaped: itself when it is one
    date, time or grouped number written with spaces, else the strong identifiers inside its free text.
    Both count as ``embedded``: traced for taint, not reported ``ungrounded``."""
    # Only for taint (``scan``): a value with spaces was never identifier-shaped, so ``ungrounded`` leaves it
    # alone as before; a date-time written with a space is most often computed (an end time), not copied.
    if not scan or len(value) > MAX_SCANNED or not _MARKED.search(value):
        return []  # a strong identifier, a date or a grouped number needs a digit, an @ or a dot
    if len(value) <= 64 and forms.is_whole_value(value):
        return [(value.strip(), True)]
    return [(tok, True) for tok in dict.fromkeys(_words(value)) if _MARKED.search(tok) and forms.is_strong(tok)]


_MARKED = re.compile(r"[0-9@.]")


MAX_SCANNED = 20_000
"""Free-text arguments longer than this are not searched for identifiers inside them (bounded cost)."""


def _words(text: str) -> list[str]:
    cut = _cut(text.casefold(), _TOKEN_CUTS, _TOKEN_CUTS_ASCII).split()
    return [w.strip(_TRAIL + "*") for w in cut]


def _lookup(index: SourceIndex, step: Any, path: str, value: str, embedded: bool, thorough: bool) -> Argument:
    key = value.casefold()
    positions = index.tokens_of(key)
    # The common case, inline (a lookup per argument leaf is most of tracing): found verbatim, and for a
    # privileged tool found in the user's input too. Positions only grow by appending, so (key, length)
    # names their names and tuple.
    if positions and (not thorough or positions[0] < index.users):
        names, at = index.found(key, positions)
        return Argument(step.index, step.tool, path, value, names, (), (key,), at, embedded)
    alternatives = forms.whole(key)
    looked_up = tuple(k for alt in alternatives[1:] for k in alt)
    if positions:  # found verbatim, but not in the user's input: did the user write it another way?
        users = index.user_positions(alternatives) if len(alternatives) > 1 else set()
        return _argument(step, path, value, index, set(positions) | users, looked_up, (key,), embedded)
    matched: list[str] = []
    hit: set[int] = set()
    if len(alternatives) == 1 and not forms.could_be_form(key):
        # No other spelling of the value, and no source's canonical form could spell it: the forms index,
        # which costs a pass over every source, cannot find it.
        return _argument(step, path, value, index, hit, looked_up, (), embedded)
    for alt in alternatives:
        hits = [index.positions(k, forms=True) for k in alt]
        if all(hits):
            matched.extend(alt)
            for h in hits:
                hit |= h
    return _argument(step, path, value, index, hit, looked_up, tuple(dict.fromkeys(matched)), embedded)


def _argument(
    step: Any,
    path: str,
    value: str,
    index: SourceIndex,
    positions: set[int],
    looked_up: tuple[str, ...],
    matched: tuple[str, ...],
    embedded: bool,
) -> Argument:
    return Argument(
        step.index,
        step.tool,
        path,
        value,
        index.names(positions),
        looked_up,
        matched,
        tuple(sorted(positions)),
        embedded,
    )

"""The sources of a run seen so far (the user's input, each tool result), indexed by key: ``SourceIndex``, and
``Origin``, one place a value was found."""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from luckrate.core import forms
from luckrate.core.fields import Field, record_of
from luckrate.core.frozen import fast_init
from luckrate.core.identifiers import CUT_OR_SPACE, MAX_SCANNED, holds, searchable, tokens, walk
from luckrate.core.records import Located

USER = "user"


def source_name(tool: str) -> str:
    return f"tool:{tool}"


REFERENCE_PREFIX = 8
"""The fewest characters of a source's field an argument must repeat from its start to name the field's
object (``copied_whole``): shorter starts ("Re: ", "The ") say nothing."""
SHORT_POSITIONS = 16
"""A key's positions in the token index are a tuple up to this many, then a list (``_catch_up``)."""
SCAN_FACTOR = 8
"""Scan sources for keys until the characters scanned pass this many times the characters held (then
index every token: ``SourceIndex.tokens_of``)."""


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
        self._located: dict[int, Located] = {}
        self._user_keys: set[str] | None = None
        self._called: dict[int, frozenset[str]] = {}
        self._called_text: dict[int, str] = {}
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

    def tokens_of(self, key: str, before: int | None = None) -> Sequence[int]:
        """The positions (ascending) of the sources holding ``key`` as a plain token, with ``before`` only those
        below it (while scanning, the later sources are not searched); do not modify.

        Two modes, one answer (tests/core/test_provenance_scan.py checks they agree). A run starts by
        *scanning*: each new key is searched for in the sources' text (a C substring search), and only the
        token a hit sits in is cut, so sources no key occurs in are never tokenised (most of a result's
        text is never looked up). Once the characters scanned pass ``SCAN_FACTOR`` times the characters
        held, lookups outnumber what an index costs to build, and the *token index* takes over for the rest
        of the run: grading stays linear however long the run."""
        if self._tokens is None:
            if self._scanned <= SCAN_FACTOR * self._chars:
                found: Sequence[int] = self._scan(key, before)  # may hold later ones, scanned for earlier
                return found if before is None else _below(found, before)
            self._tokens, self._scans, self._folded = {}, {}, []
        if self._tokens_upto < len(self._sources):
            self._catch_up(self._tokens, self._tokens_upto, tokens)
            self._tokens_upto = len(self._sources)
        found = self._tokens.get(key, _NONE)
        return found if before is None else _below(found, before)

    def _scan(self, key: str, before: int | None = None) -> list[int]:
        found, upto = self._scans.get(key) or ([], 0)
        total = len(self._folded) if before is None else min(before, len(self._folded))
        if upto < total:
            if CUT_OR_SPACE.search(key) is None and key:  # a key with a cut in it is in no token
                folded = self._folded
                for position in range(upto, total):
                    text = folded[position]
                    self._scanned += len(text)
                    at = text.find(key)
                    if at >= 0 and holds(text, key, at):
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
        echo = not self.called_at(position).isdisjoint(keys) or self.called_text_holds(position, keys)
        if source == USER:
            return [Origin(source, None, None, True, False, position)]
        located = self._fields(position)
        places = dict.fromkeys((f.path, f.prose) for key in keys for f in located.get(key))
        if not places:
            return [Origin(source, step, None, True, echo, position)]
        return [Origin(source, step, path, prose, echo, position) for path, prose in places]

    def _fields(self, position: int) -> Located:
        located = self._located.get(position)
        if located is None:
            located = self._located[position] = Located(self._sources[position][2])
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
            raw = self._sources[position][2]
            scanned = self._folded[position] if position < len(self._folded) else None
            # While scanning, the folded text is at hand: an ASCII text folds to its own length, and its scanned copy
            # is longer only when an unglued spelling follows it (``searchable``).
            if scanned is not None and raw.isascii() and len(scanned) == len(raw):
                text = scanned
            else:
                text = raw.casefold()
            self._folded_texts[position] = text
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

    def called_text_holds(self, position: int, keys: Iterable[str]) -> bool:
        """Whether a token inside the text arguments of the call that produced source ``position`` is one of ``keys``:
        a result that repeats an identifier the agent wrote into a message body is an echo of that body, not a
        source. The arguments' text is searched for each key (``holds``), never tokenised whole."""
        text = self._called_text.get(position)
        if text is None:
            args = self._sources[position][3]
            texts = [v for _, v in walk(args or {}) if isinstance(v, str) and len(v) <= MAX_SCANNED and " " in v]
            text = self._called_text[position] = searchable("\n".join(texts)).casefold() if texts else ""
        # A key with a cut or a space in it is in no token (as ``_scan``'s keys).
        return bool(text) and any(
            (at := text.find(key)) >= 0 and not CUT_OR_SPACE.search(key) and holds(text, key, at) for key in keys
        )

    def called_at(self, position: int) -> frozenset[str]:
        """The values the call that produced source ``position`` was given (case-folded)."""
        called = self._called.get(position)
        if called is None:
            args = self._sources[position][3]
            called = self._called[position] = frozenset(
                str(v).casefold() for _, v in walk(args or {}) if isinstance(v, (str, int)) and not isinstance(v, bool)
            )
        return called


def _below(positions: Sequence[int], before: int) -> Sequence[int]:
    """The ascending ``positions`` below ``before``."""
    return positions if not positions or positions[-1] < before else positions[: bisect.bisect_left(positions, before)]


def _form_keys(text: str) -> set[str]:
    folded = text.casefold()
    return forms.text_keys(folded, tokens(text))


_NONE: list[int] = []

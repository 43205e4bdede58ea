"""Composed values: an argument no earlier source holds as written, built from what the sources do hold.

``ungrounded`` reports an identifier-shaped argument that appears in no earlier source. Some of those
the model did not invent: it *composed* them from facts it had, and a composed value is a different
fact from an invented one. ``composed`` reports these instead (a finding a reviewer sees, apart from
fabrications); everything below is what the earlier sources of the same run hold (the user's input and
the results returned before the call), never a guess at what the model knew:

- **A date** whose parts the sources hold partially: the month with its year and no day ("December
  2023", ``2023-12``: any day of that month); a day of the month named as one ("the 14th") in a month a
  source names or dates; a date-time on a date a source holds, with or without its year ("the 14th of
  November": the time was worked out, an end time from a start); or the run's own date, from the run's
  clock (the model's "today").
- **A number** of at least ``MIN_SUM`` equal to the sum or the difference of two numbers the sources
  hold, each at least a hundredth of it (a total, a rent raised by a stated amount, the change due). Never for an argument
  named as a reference (``id``, ``*_id``, ``*Id``, ``*_number``): an id one digit off a real one is the
  fabrication ``ungrounded`` exists for, and it is always a small sum away from the real one.
- **An e-mail address** at a domain a source holds (an address's or a link's), whose local part is
  made of words the sources hold (``first.last@company.example`` from a name and the company domain).
- **A path** whose every segment a source holds (a file name and the folder a tool said it saved to).

Two more forms are the same value written another way, so neither is reported at all: the local part
of an e-mail address a source holds (``emma.johnson`` from ``emma.johnson@x.example``, used as a user
id), and a list the sources hold item by item, joined with ``,``, ``;`` or ``|`` into one string.

What stays ``ungrounded``: placeholders (``AMOUNT_HERE``), made-up ids and addresses, an id one digit
off, a date no source's month or day supports. The search is bounded: each source's first ``MAX_TEXT``
characters, read at most once per kind of fact and only when an argument asks about that kind; per run
the first ``MAX_NUMBERS`` distinct numbers (each sum looked up in one pass over them) and ``MAX_FACTS``
facts of each other kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from luckrate.core import forms
from luckrate.core.fields import field_name
from luckrate.core.identifiers import tokens
from luckrate.core.provenance import Argument, Provenance


MAX_NUMBERS = 2000
"""Distinct numbers kept per run for the sum search (each lookup is one pass over them)."""
MIN_SUM = 10
"""The smallest value read as a sum or a difference."""
MAX_FACTS = 50_000
"""Distinct facts of each other kind (words, dates, addresses) kept per run."""
MAX_TEXT = 200_000
"""Characters of each source read for facts (a source's start holds what a model reads)."""

_NUMBER = re.compile(r"(?<![\w.\-/:])[$€£¥₹]?(\d+(?:,\d{3})*(?:\.\d+)?)(?![\w\-/:@]|\.\d)")
_NUMERIC = re.compile(r"[-+]?\d+(?:\.\d+)?")
_EMAIL = re.compile(r"([a-z0-9._%+\-]+)@([a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,63})")
_REFERENCE = re.compile(r"(?:^|_)(?:id|ids|number|no)$|[a-z]Ids?$")
_LIST = re.compile(r"\s*[,;|]\s*")
_LOCAL_PARTS = re.compile(r"[._\-+]")
_LOCAL = re.compile(r"[a-z0-9._%+\-]+")


@dataclass
class _Held:
    """Facts of the sources, each with the position of the first source holding it. Each kind is read
    only when an argument asks about it, source by source as far as that argument's call."""

    numbers: dict[int, int] = field(default_factory=dict)
    """In hundredths (cents), so sums compare exactly."""
    dates: dict[str, int] = field(default_factory=dict)
    months: dict[tuple[int, int], int] = field(default_factory=dict)
    """(year, month) named with no day."""
    dated_months: dict[tuple[int, int], int] = field(default_factory=dict)
    """(year, month) of every date."""
    days: dict[int, int] = field(default_factory=dict)
    words: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    locals: dict[str, int] = field(default_factory=dict)
    """The local parts of e-mail addresses."""
    domains: dict[str, int] = field(default_factory=dict)
    """The domains of e-mail addresses and the hosts of links (without ``www.``)."""


class Composition:
    """What a run's sources hold in parts. Each kind of fact is read only when an argument asks about
    it (most runs ask about none), each source at most once per kind: linear in the sources."""

    def __init__(self, prov: Provenance) -> None:
        self.prov = prov
        self.held = _Held()
        self._read = {"numbers": 0, "dates": 0, "words": 0, "addresses": 0}
        """Sources read so far for each kind (the facts of positions below it are in ``held``)."""
        self._folded: list[str] = []
        self._answers: dict[tuple[str, str, int], str | None] = {}
        """(value, argument name, sources before the call) -> ``composed``'s answer: ids recur at every step."""
        self._other: dict[tuple[str, str, int], bool] = {}
        """(value, "", sources before the call) -> ``another_form``'s answer (both checks ask)."""
        self._numbers: tuple[int, list[int], set[int]] = (-1, [], set())

    def _text(self, position: int) -> str:
        while len(self._folded) <= position:
            self._folded.append(self.prov.sources.text(len(self._folded))[:MAX_TEXT].casefold())
        return self._folded[position]

    def _read_up(self, kind: str, n: int) -> None:
        while self._read[kind] < n:
            position = self._read[kind]
            _READERS[kind](self.held, self._text(position), position)
            self._read[kind] = position + 1

    def _word(self, word: str, n: int) -> bool:
        self._read_up("words", n)
        return _held(self.held.words, word, n)

    def _domain(self, domain: str, n: int) -> bool:
        self._read_up("addresses", n)
        return _held(self.held.domains, domain, n)

    def another_form(self, arg: Argument) -> bool:
        """The value is in an earlier source written another way: an address's local part, or a list
        joined into one string."""
        n = self.prov.sources.before(arg.step)
        key = (arg.value, "", n)
        if key not in self._other:
            self._other[key] = self._another_form(arg.value.casefold(), n)
        return self._other[key]

    def _another_form(self, value: str, n: int) -> bool:
        if _LOCAL.fullmatch(value):
            self._read_up("addresses", n)
            if _held(self.held.locals, value, n):
                return True
        parts = _LIST.split(value)
        return len(parts) > 1 and all(p and self._token(p, n) for p in parts)

    def composed(self, arg: Argument) -> str | None:
        """How the value was composed from the earlier sources, or None when it was not."""
        n = self.prov.sources.before(arg.step)
        key = (arg.value, field_name(arg.path, fold=False), n)
        if key not in self._answers:
            self._answers[key] = self._composed(arg.value.strip().casefold(), key[1], n)
        return self._answers[key]

    def _composed(self, value: str, name: str, n: int) -> str | None:
        if "@" in value:
            return self._address(value, n)
        if _NUMERIC.fullmatch(value):
            how = self._sum(value, n) if not _REFERENCE.search(name) else None
            if how:
                return how
        dated = _date_of(value)
        if dated is not None:
            return self._date(dated, value, n)
        if "/" in value and "://" not in value:
            return self._path(value, n)
        return None

    def _token(self, part: str, n: int) -> bool:
        """A source below ``n`` holds ``part`` as a token (core/provenance.py's cuts), or as a word."""
        if part.isalpha():
            return self._word(part, n)
        self._read_up("words", n)
        return _held(self.held.tokens, part, n)

    def _address(self, value: str, n: int) -> str | None:
        m = _EMAIL.fullmatch(value)
        if m is None or not self._domain(m[2].removeprefix("www."), n):
            return None
        parts = [p for p in _LOCAL_PARTS.split(m[1]) if p]
        names = [p for p in parts if len(p) > 1]
        if not names or not all(p.isalpha() for p in parts) or not all(self._word(p, n) for p in names):
            return None
        return "an address built from names and a domain the sources hold"

    def _sum(self, value: str, n: int) -> str | None:
        target = round(float(value) * 100)
        if abs(target) < 100 * MIN_SUM:
            return None  # a small number is the sum of almost any two others: no evidence either way
        self._read_up("numbers", n)
        if self._numbers[0] != n:
            held = [x for x, at in self.held.numbers.items() if at < n]
            self._numbers = (n, held, set(held))
        _, numbers, have = self._numbers
        floor = abs(target) / 100
        for a in numbers:
            if a == target or abs(a) < floor:
                continue
            b = target - a
            if b in have and b != a and b != target and abs(b) >= floor:
                return f"the sum of {_show(a)} and {_show(b)}"
            b = a - target
            if b in have and b != a and b != target and abs(b) >= floor:
                return f"the difference of {_show(a)} and {_show(b)}"
        return None

    def _date(self, dated: tuple[str, bool], value: str, n: int) -> str | None:
        day, timed = dated
        year, month, date = int(day[:4]), int(day[5:7]), int(day[8:10])
        self._read_up("dates", n)
        held = self.held
        if timed and (_held(held.dates, day, n) or _held(held.dates, "--" + day[5:], n)):
            return "a time on a date the sources hold"
        if _held(held.months, (year, month), n):
            return "a day of a month the sources name"
        if _held(held.days, date, n) and (
            _held(held.months, (year, month), n)
            or _held(held.dated_months, (year, month), n)
            or any(d.startswith(day[:8]) for d in self.prov.run_days)
        ):
            return "a day the sources name, in a month they hold"
        if day in self.prov.run_days:
            return "the run's own date (its clock)"
        return None

    def _path(self, value: str, n: int) -> str | None:
        segments = [s for s in value.split("/") if s]
        if segments and all(self._token(s, n) and (len(s) > 2 or not s.isalpha()) for s in segments):
            return "a path whose every part the sources hold"
        return None


def _read_numbers(held: _Held, text: str, position: int) -> None:
    for m in _NUMBER.finditer(text):
        if len(held.numbers) >= MAX_NUMBERS:
            return
        held.numbers.setdefault(round(float(m[1].replace(",", "")) * 100), position)


def _read_dates(held: _Held, text: str, position: int) -> None:
    found = forms.dates(text)
    _put(held.dates, (key for key, _, _ in found), position)
    _put(held.dated_months, ((int(k[:4]), int(k[5:7])) for k, _, _ in found if not k.startswith("--")), position)
    _put(held.months, forms.month_years(text), position)
    _put(held.days, forms.month_days(text), position)


def _read_words(held: _Held, text: str, position: int) -> None:
    _put(held.words, _WORD.findall(text), position)
    _put(held.tokens, tokens(text), position)


def _read_addresses(held: _Held, text: str, position: int) -> None:
    at = text.find("@")
    while at != -1:
        local = _LOCAL_BEFORE.search(text[max(0, at - 64) : at])
        domain = _DOMAIN_AFTER.match(text, at + 1)
        if local and domain:
            _put(held.locals, (local[0],), position)
            _put(held.domains, (domain[0].removeprefix("www."),), position)
        at = text.find("@", at + 1)
    for mark, skip in (("://", 3), ("www.", 0)):
        at = text.find(mark)
        while at != -1:
            host = _HOST.match(text, at + skip)
            if host:
                _put(held.domains, (host[1],), position)
            at = text.find(mark, at + len(mark))


_READERS = {"numbers": _read_numbers, "dates": _read_dates, "words": _read_words, "addresses": _read_addresses}
_WORD = re.compile(r"[^\W\d_]{2,}")
_LOCAL_BEFORE = re.compile(r"[a-z0-9._%+\-]{1,64}$")
_DOMAIN_AFTER = re.compile(r"[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,63}")
_HOST = re.compile(r"(?:www\.)?((?:[a-z0-9\-]+\.)+[a-z]{2,63})")


def of(prov: Provenance) -> Composition:
    """The run's ``Composition``, made on first use and kept on ``prov`` (both grounding checks ask it)."""
    found = prov.derived.get("composition")
    if found is None:
        found = prov.derived["composition"] = Composition(prov)
    return cast(Composition, found)


def _put(table: dict[Any, int], keys: Iterable[Any], position: int) -> None:
    for key in keys:
        if len(table) >= MAX_FACTS:
            return
        table.setdefault(key, position)


def _held(table: dict[Any, int], key: object, n: int) -> bool:
    at = table.get(key)
    return at is not None and at < n


def _show(cents: int) -> str:
    return f"{cents // 100}" if cents % 100 == 0 else f"{cents / 100:.2f}"


def _date_of(value: str) -> tuple[str, bool] | None:
    """``(ISO date, has a time)`` when the whole value is one dated date or date-time."""
    found = forms.dates(value)
    if len(found) != 1 or found[0][0].startswith("--"):
        return None
    key, stamp, (start, end) = found[0]
    if start != 0 or end != len(value):
        return None
    return key, stamp is not None

"""Normalised forms: the spellings of one value that a model may write for another.

A model copies ``www.example.com`` from a page and calls ``url='http://www.example.com/'``; it reads
``2024-05-15 10:00`` and passes ``day='2024-05-15'``; it is told "May 15th" and writes ``2024-05-15``.
Each such value has one canonical key here, and the provenance index matches keys, so these count as
the same value. Where possible the canonical key *is* the plain token (an ISO date, a bare number, a
compact IBAN), so a source that already spells a value canonically is found by the plain token index.

Canonical keys (all case-folded):

- URL: host without ``www.``, then path without trailing slash, then query; no scheme, default port
  or fragment. ``HTTP://WWW.Example.com/a/`` -> ``example.com/a``.
- Number: digits with group commas removed, currency signs dropped, trailing zeros of a fraction
  dropped. ``$1,290.00`` -> ``1290``; ``129.0`` -> ``129``.
- Grouped digits (IBAN, phone, card): the characters without spaces, dashes, dots or brackets, when
  there are at least 9 digits (so a date never is one). ``DE89 3704 0044`` -> ``de8937040044``.
- Date: ISO ``2024-05-15``; a written date without a year gets the ISO year-less form ``--05-15``, which
  a dated value also looks up (the user said "May 15", the call has the year). Forms read: ISO and
  ``2024/05/15``, ``5/15/2024`` (and ``15/5/2024``: both readings where both are dates), ``May 15``,
  ``May 15th, 2024``, ``15 May 2024``, ``15th of May``, and the date part of a date-time.
- Time: ``HH:MM`` on a 24-hour clock: ``10:00:00``, ``10am``, ``10:00 AM`` -> ``10:00``.
- Date-time: ``2024-05-15t10:00``, a zone after the clock read and set aside (``z``, ``+02:00``: the
  clock as written is what a source shows); a date-time value is also found when its date and its time
  are each found (a source that says "May 15 at 10:00"), and at ``00:00`` or ``23:59`` by its date
  alone (the user gave a day; the tool wanted a date-time).

Out of reach, by design (see core/provenance.py for why a near-miss stays ``ungrounded``):
- relative dates ("tomorrow", "next Tuesday"): they need the run's own "today", which a trace rarely
  records reliably, and a wrong guess would ground fabricated dates;
- arithmetic (a total of two amounts, a date one day after a grounded one): a form grounds a value, and
  searching sums would also ground an id one digit off, the very fabrication the ``ungrounded`` check
  exists to catch. core/composition.py recognises a few composed shapes apart (a bounded search that
  never grounds anything: it reports them as ``composed`` instead of ``ungrounded``);
- values spelled out ("five hundred"), split across fields, translated or encoded.
"""

from __future__ import annotations

import datetime
import functools
import re
from decimal import Decimal, InvalidOperation

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_TIME = r"(\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:\s*([ap])\.?m\.?\b)?"

# Dates with the year first (ISO, slashes, dots), optionally followed by a time: the date part of a
# date-time is a date of its own. The time's zone (``z``, ``+02:00``) is read and set aside: the clock
# as written is what a source shows.
_ZONE = r"(?:\s?(?:z|utc|[+-]\d\d:?\d\d)\b)?"
_YMD = re.compile(r"(?<![\d.])(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?:[t ]" + _TIME + _ZONE + r")?(?![\d])")
_MDY = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?![\d/])")
_MONTH_DAY = re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})" + _ORD + r"\b(?:,?\s+(\d{4})\b)?")
_DAY_MONTH = re.compile(r"(?<![\d])(\d{1,2})" + _ORD + r"\s+(?:of\s+)?" + _MONTH + r"(?![a-z])(?:,?\s+(\d{4})\b)?")
_CLOCK = re.compile(r"(?<![\d:])" + _TIME + r"(?![\d:])")
_HOUR = re.compile(r"(?<![\d:])(\d{1,2})\s*([ap])\.?m\b\.?")
# Digit groups as IBANs, phones and cards are written: at least 9 digits in all (checked after).
_GROUPS = re.compile(
    r"(?<![\w@.])(?:[a-z]{2}\d{2}(?: [a-z0-9]{4}){2,7}(?: [a-z0-9]{1,3})?"
    r"|\+?\(?\d+\)?(?:[ \-.]\(?\d+\)?){1,8})(?![\w@])"
)
# Numbers as prose writes amounts: group commas, a fraction, a currency sign. Read from the text, not
# from tokens, because a comma cuts tokens.
_AMOUNT = re.compile(r"(?<![\w.,])[$€£¥₹]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d|[.,]\d)")

_URL = re.compile(
    r"(?:[a-z][a-z0-9+.\-]*://)?(?:www\d?\.)?((?:[a-z0-9](?:[a-z0-9_\-]*[a-z0-9])?\.)+[a-z]{2,63})"
    r"(?::(\d{1,5}))?((?:/[^\s?#]*)?)(\?[^\s#]*)?(?:#\S*)?"
)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_CURRENCY = "$€£¥₹"
_STRUCTURED = re.compile(r"[0-9]")
_WHOLE_START = re.compile(r"[0-9+(]|[a-z]{2}\d{2}|" + _MONTH)


def url_key(token: str) -> str | None:
    """The canonical key of a URL-shaped token (case-folded), or None."""
    if "." not in token or "@" in token:
        return None
    m = _URL.fullmatch(token)
    if m is None:
        return None
    host, port, path, query = m.groups()
    key = host + (f":{port}" if port and port not in ("80", "443") else "") + path.rstrip("/") + (query or "")
    return key


def number_key(token: str) -> str | None:
    """The canonical key of a number written with a currency sign, group commas or a fraction, or None.

    Plain digit strings are left alone: ``0044`` is an id, not the number 44."""
    bare = token.strip(_CURRENCY)
    if not bare or bare == token and "," not in bare and "." not in bare or not _NUMBER.fullmatch(bare):
        return None
    try:
        value = Decimal(bare.replace(",", ""))
    except InvalidOperation:
        return None
    return format(value.normalize(), "f").lstrip("+")


_NINE_DIGITS = re.compile(r"(?:\D*\d){9}")


def _grouped_key(text: str) -> str | None:
    if not _NINE_DIGITS.match(text):
        return None
    compact = re.sub(r"[ \-.()+]", "", text)
    return compact if sum(c.isdigit() for c in compact) >= 9 and compact.isalnum() else None


def _date(year: int | None, month: int, day: int) -> str | None:
    try:
        datetime.date(year or 2000, month, day)  # 2000: a leap year, so 29 February is a year-less date
    except ValueError:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}" if year is not None else f"--{month:02d}-{day:02d}"


def _clock(hour: str, minute: str, half: str | None) -> str | None:
    h, m = int(hour), int(minute)
    if half:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if half == "p" else 0)
    return f"{h:02d}:{m:02d}" if h < 24 and m < 60 else None


def _year(text: str | None) -> int | None:
    if text is None:
        return None
    return int(text) + 2000 if len(text) == 2 else int(text)


def dates(text: str) -> list[tuple[str, str | None, tuple[int, int]]]:
    """Every date in ``text`` (case-folded) as ``(date key, date-time key or None, span)``."""
    out: list[tuple[str, str | None, tuple[int, int]]] = []
    if not _STRUCTURED.search(text):
        return out
    for m in _YMD.finditer(text):
        key = _date(int(m[1]), int(m[3]), int(m[4]))
        if key:
            clock = _clock(m[5], m[6], m[7]) if m[5] else None
            out.append((key, f"{key}t{clock}" if clock else None, m.span()))
    for m in _MDY.finditer(text):
        year = _year(m[3])
        for month, day in {(int(m[1]), int(m[2])), (int(m[2]), int(m[1]))}:
            key = _date(year, month, day)
            if key:
                out.append((key, None, m.span()))
    for m in _MONTH_DAY.finditer(text):
        key = _date(_year(m[3]), _MONTHS[m[1]], int(m[2]))
        if key:
            out.append((key, None, m.span()))
    for m in _DAY_MONTH.finditer(text):
        key = _date(_year(m[3]), _MONTHS[m[2]], int(m[1]))
        if key:
            out.append((key, None, m.span()))
    return out


_MONTH_YEAR = re.compile(r"\b" + _MONTH + r",?\s+(\d{4})\b")
_YEAR_MONTH = re.compile(r"(?<![\d\-/.])(\d{4})[-/](\d{1,2})(?![\d\-/.])")
_ORDINAL_DAY = re.compile(r"(?<![\w.])(\d{1,2})(?:st|nd|rd|th)\b")


def month_years(text: str) -> set[tuple[int, int]]:
    """Every month named with its year and no day in ``text`` (case-folded): ``December 2023``,
    ``2023-12``, as ``(year, month)``."""
    out = {(int(m[2]), _MONTHS[m[1]]) for m in _MONTH_YEAR.finditer(text)}
    out.update((int(m[1]), int(m[2])) for m in _YEAR_MONTH.finditer(text) if 1 <= int(m[2]) <= 12)
    return out


def month_days(text: str) -> set[int]:
    """Every day of a month named as one in ``text`` (case-folded): ``the 14th``, ``on the 2nd``."""
    return {int(m[1]) for m in _ORDINAL_DAY.finditer(text) if 1 <= int(m[1]) <= 31}


def times(text: str) -> list[tuple[str, tuple[int, int]]]:
    """Every clock time in ``text`` (case-folded) as ``(HH:MM, span)``."""
    if not _STRUCTURED.search(text):
        return []
    out = [(key, m.span()) for m in _CLOCK.finditer(text) if (key := _clock(m[1], m[2], m[3]))]
    out += [(key, m.span()) for m in _HOUR.finditer(text) if (key := _clock(m[1], "0", m[2]))]
    return out


def text_keys(text: str, toks: set[str]) -> set[str]:
    """The canonical keys found in ``text`` (case-folded) beyond its plain tokens ``toks``."""
    keys: set[str] = set()
    if not _STRUCTURED.search(text) and "." not in text:
        return keys
    for tok in toks:
        key = url_key(tok) if "." in tok else None
        if key:
            keys.add(key)
        key = _grouped_key(tok)
        if key:
            keys.add(key)
    keys.update(key for m in _AMOUNT.finditer(text) if (key := number_key(m[0])))
    for date, stamp, _ in dates(text):
        keys.add(date)
        if stamp:
            keys.add(stamp)
    keys.update(key for key, _ in times(text))
    keys.update(key for m in _GROUPS.finditer(text) if (key := _grouped_key(m[0])))
    keys -= toks
    return keys


_DAY_BOUNDS = ("00:00", "23:59")
"""The times a date alone stands for: its start and its end."""


@functools.lru_cache(maxsize=4096)  # ids recur across a run's steps; a pure function of a bounded string
def whole(value: str) -> tuple[tuple[str, ...], ...]:
    """The keys a value (case-folded, stripped) may be found under, each tuple all needed together.

    The value itself comes first; a date-time also offers its date and its time found separately.
    """
    alts: list[tuple[str, ...]] = [(value,)]
    if "@" in value or not _STRUCTURED.search(value) and "." not in value:
        return tuple(alts)  # an address, or a value with neither digits nor dots, has no other form here
    for key in (url_key(value), number_key(value), _grouped_key(value)):
        if key and (key,) not in alts:
            alts.append((key,))
    found = dates(value)
    if len(found) == 1 and found[0][2] == (0, len(value)):
        date, stamp, _ = found[0]
        yearless = "--" + date[5:] if not date.startswith("--") else None
        if stamp:
            clock = stamp.rsplit("t", 1)[1]
            alts += [(stamp,), (date, clock)] + ([(yearless, clock)] if yearless else [])
            if clock in _DAY_BOUNDS:  # a date given alone, sent where a date-time is asked for
                alts += [(date,)] + ([(yearless,)] if yearless else [])
        else:
            alts += [(date,)] + ([(yearless,)] if yearless else [])
    clocks = times(value)
    if len(clocks) == 1 and clocks[0][1] == (0, len(value)):
        alts.append((clocks[0][0],))
    return tuple(dict.fromkeys(alts))  # a tuple: the cached answer is shared


_EMAIL = re.compile(r"[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,63}")
_IBAN = re.compile(r"[a-z]{2}\d{2}[a-z0-9]{10,30}")
_LONG_DIGITS = re.compile(r"\+?\d{9,}")
_KEY = re.compile(r"(?=[a-z0-9+/]*\d)(?=[a-z0-9+/]*[a-z])[a-z0-9+/]{32,}={0,2}")
"""A key or token: 32 characters or more of base64 with letters and digits (an SSH key's body, an API token)."""
_WEB_TLDS = frozenset("com org net io co info biz app dev ai me edu gov uk de fr eu us ca au".split())


def is_strong(token: str) -> bool:
    """An identifier no prose uses by accident: an e-mail address, a URL, an IBAN, a long number or a key.

    Used to find identifiers inside free-text arguments (a message body): a bare ``name.ext`` counts as
    a URL only with a scheme, ``www.``, a path, or a common web top-level domain, so file names do not.
    """
    if "@" in token:
        return _EMAIL.fullmatch(token.removeprefix("mailto:")) is not None
    if "." in token:
        key = url_key(token)
        if key is None:
            return False
        host = key.split("/", 1)[0].split(":", 1)[0]
        return "://" in token or token.startswith("www") or "/" in key or host.rsplit(".", 1)[-1] in _WEB_TLDS
    return (
        _IBAN.fullmatch(token) is not None
        or _LONG_DIGITS.fullmatch(token) is not None
        or _KEY.fullmatch(token) is not None
    )


_CANONICAL = re.compile(r"-?\d+(?:\.\d+)?|[a-z0-9]*\d[a-z0-9]*|--\d\d-\d\d|\d{4}-\d\d-\d\d(?:t\d\d:\d\d)?|\d\d:\d\d")


def could_be_form(key: str) -> bool:
    """Whether some source's canonical form could equal ``key``: only a URL key, a number, a compact
    grouped number, a date, date-time or time can. An id like ``sku-12`` or an address cannot, so its
    verbatim miss needs no forms index at all."""
    if "@" in key:
        return False
    if "." in key and url_key(key) == key:
        return True
    return _CANONICAL.fullmatch(key) is not None


def is_whole_value(value: str) -> bool:
    """True when text with spaces is still one value: a date, date-time, time or grouped number."""
    if not _STRUCTURED.search(value):
        return False
    folded = value.strip().casefold()
    if not _WHOLE_START.match(folded):  # every form starts with a digit, a sign, a bracket, a month or an IBAN
        return False
    found = dates(folded)
    if len(found) == 1 and found[0][2] == (0, len(folded)):
        return True
    clocks = times(folded)
    if len(clocks) == 1 and clocks[0][1] == (0, len(folded)):
        return True
    m = _GROUPS.fullmatch(folded)
    return m is not None and _grouped_key(folded) is not None

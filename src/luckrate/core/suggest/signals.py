"""What one tool's name, description, arguments and results say about it: the evidence ``suggest`` weighs.

Every signal is a generic reading of English tool vocabulary or of data shapes, never of one
product's tool names:

- a tool **acts** (a privileged candidate) when its name or description starts with an acting verb
  (send, pay, create, delete ...), or when a call that is not a plain read passes an address, an
  account number or a URL, or a parameter that only a write takes (a recipient, an amount, a body);
  a URL passed to any tool counts as well: the request reaches a host the URL chose, and the URL can
  carry data out;
- a tool's results carry **third-party text** (an untrusted candidate) when they hold sentences of
  free text (read as fields by ``core/fields.py``) or markup, or when a read tool's name or
  description names something other people write (messages, mail, pages, reviews, files ...).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from luckrate.core.fields import Field, fields
from luckrate.core.suggest.vocabulary import (
    ACT_VERBS,
    FILLER,
    NOUN_VERBS,
    READ_VERBS,
    THIRD_PARTY_NOUNS,
    URL_PARAMS,
    WRITE_PARAMS,
)

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_ACCOUNT = re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b")
_URL = re.compile(r"(?:\b[a-z][a-z0-9+.\-]*://|\bwww\d?\.)[^\s\"'<>]+", re.IGNORECASE)
_MARKUP = re.compile(r"<(?:[a-zA-Z][a-zA-Z0-9]*)(?:\s[^<>]*)?/?>|</[a-zA-Z][a-zA-Z0-9]*>|\]\(https?://")
_END = re.compile(r"[.!?](?=\s|$|[\"')\]])")
"""A sentence's end: a stop followed by a space, the end, or a closing quote (``evil.example`` is not one)."""
_WORD = re.compile(r"[^\W\d_]{2,}")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")

SENTENCE_WORDS = 5
"""A sentence: at least this many words ending in ``.``, ``!`` or ``?``, some of them in lower case."""
MAX_SCANNED = 20_000
"""Characters of a result read for sentences and markup (the rest is not looked at)."""


def words(name: str) -> list[str]:
    """A tool name's words, lower case: ``sendMoney`` / ``send_money`` / ``send-money`` -> send, money."""
    return [w.lower() for part in _SPLIT.split(name) for w in _CAMEL.split(part) if w]


def _stem(word: str) -> str:
    """A description's verb in its imperative form: Sends -> send, Creates -> create, Searches -> search."""
    word = word.lower()
    for suffix, cut in (("ches", 2), ("shes", 2), ("sses", 2), ("ies", 3), ("s", 1)):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[:-cut] + ("y" if suffix == "ies" else "")
    return word


def name_verbs(name: str) -> tuple[str | None, str | None]:
    """(the acting verb, the reading verb) that the name is built on, either None: the first word that is
    a verb decides (``send_email``, ``contact_lookup``), except that a word that is as often a noun gives
    way to a later plain verb (``email_search`` reads; ``smart_lock_unlock`` unlocks; ``post_comment`` posts)."""
    verbs = [w for w in words(name) if w in ACT_VERBS or w in READ_VERBS]
    while len(verbs) > 1 and verbs[0] in NOUN_VERBS and any(w not in NOUN_VERBS for w in verbs[1:]):
        verbs = verbs[1:]
    if not verbs:
        return None, None
    return (verbs[0], None) if verbs[0] in ACT_VERBS else (None, verbs[0])


def is_handoff(name: str) -> bool:
    """A framework's hand-over to another agent (``transfer_to_billing_agent``, ``handoff``): it moves the
    conversation inside the system, so it neither acts outside nor returns anyone else's text."""
    ws = words(name)
    return bool({"handoff", "handover"} & set(ws)) or (
        bool(ws) and ws[0] == "transfer" and bool({"agent", "agents"} & set(ws))
    )


def description_verb(description: str) -> tuple[str | None, str | None]:
    """(acting verb, reading verb) that opens a description ("Sends an e-mail ...", "Use this to search ...",
    "Returns ..."): the first of its first eight words that is not filler."""
    for m in list(_WORD.finditer((description or "")[:200]))[:8]:
        word = m[0].lower()
        if word in FILLER:
            continue
        verb = _stem(word)
        if verb in ACT_VERBS:
            return verb, None
        return None, (verb if verb in READ_VERBS or verb in {"return", "give", "provide"} else None)
    return None, None


def nouns(text: str) -> list[str]:
    """The third-party nouns among a name's (or description's) words."""
    return sorted({w for w in words(text) if w in THIRD_PARTY_NOUNS})


def argument_shapes(args: dict[str, Any]) -> set[str]:
    """What a call's arguments carry: ``address``, ``account``, ``url``, and ``param:NAME`` for a write's
    parameter name that is set."""
    out: set[str] = set()
    for key, value in _leaves(args, "", 0):
        last = words(key)[-1] if words(key) else ""
        if last in URL_PARAMS or key.lower() in URL_PARAMS:
            out.add("url")
        if key.lower() in WRITE_PARAMS and value not in ("", None, [], {}):
            out.add(f"param:{key.lower()}")
        if isinstance(value, str) and value:
            text = value[:2000]
            if _EMAIL.search(text):
                out.add("address")
            if _ACCOUNT.search(text):
                out.add("account")
            if _URL.search(text) and (last in URL_PARAMS or _URL.fullmatch(text.strip())):
                out.add("url")
    return out


def _leaves(value: Any, key: str, depth: int) -> Iterable[tuple[str, Any]]:
    if depth > 6:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:64]:
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value[:64]:
            yield from _leaves(v, key, depth + 1)
    else:
        yield key, value


def is_sentence_text(text: str) -> bool:
    """The text holds a sentence someone wrote: SENTENCE_WORDS words or more ending in . ! or ?, at least
    two of them starting in lower case (a list of names or a title is not one)."""
    return skeleton(text) is not None


def skeleton(text: str) -> str | None:
    """The first sentence's lower-case words (``for from to has been made``), or None when the text holds
    no sentence. A template a system fills in ("Reservation for X from D1 to D2 has been made.") keeps
    its skeleton across results; text that people write does not."""
    text, start = text[:MAX_SCANNED], 0
    for m in _END.finditer(text):
        found = _WORD.findall(text, start, m.start())
        start = m.end()
        lower = [w for w in found if w[0].islower()]
        if len(found) >= SENTENCE_WORDS and len(lower) >= 2:
            return " ".join(lower[:12])
    return None


@dataclass(frozen=True)
class Shape:
    """What one result looks like."""

    sentences: bool
    markup: bool
    named: frozenset[str]
    """The field names holding sentences."""
    structured: bool
    """Every sentence sits in a named field."""
    skeletons: frozenset[int]
    """A checksum of each sentence-bearing field's skeleton (at most MAX_SKELETONS)."""


MAX_SKELETONS = 8


def result_fields(result: str) -> list[Field]:
    """The fields of a result as ``suggest`` reads them (its first ``MAX_SCANNED`` characters): read once, handed to
    ``result_shape`` and ``senders``."""
    return fields(result[:MAX_SCANNED])


def result_shape(result: str, parsed: list[Field] | None = None) -> Shape:
    """What ``result`` looks like; ``parsed`` its ``result_fields`` when already read."""
    markup = _MARKUP.search(result[:MAX_SCANNED]) is not None
    named: set[str] = set()
    skeletons: set[int] = set()
    whole = False
    for f in result_fields(result) if parsed is None else parsed:
        if not f.prose or (found := skeleton(f.text)) is None:
            continue
        if len(skeletons) < MAX_SKELETONS:
            skeletons.add(zlib.crc32(found.encode("utf-8", "replace")))
        if f.name and f.path:
            named.add(f.name)
        else:
            whole = True
    return Shape(
        bool(named) or whole, markup, frozenset(sorted(named)[:32]), bool(named) and not whole, frozenset(skeletons)
    )


_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]{2,}", re.IGNORECASE)


def senders(parsed: list[Field]) -> list[tuple[str, str, int | None, int]]:
    """Each record's own address in a result read as a list of records (``parsed``: its ``result_fields``):
    ``(field name, address, skeleton checksum of the record's first sentence or None, checksum of its free text)``.
    A record's own address is a field of its own holding one e-mail address (a ``sender``, a ``from``), not an item
    of a list (its recipients)."""
    out = []
    by_record: dict[str, list[Field]] = {}
    for f in parsed:
        if f.record is not None:
            by_record.setdefault(f.record, []).append(f)
    for record, fs in by_record.items():
        sentence = next((sk for f in fs if f.prose and (sk := skeleton(f.text)) is not None), None)
        checksum = None if sentence is None else zlib.crc32(sentence.encode("utf-8", "replace"))
        text = zlib.crc32("\n".join(f.text for f in fs if f.prose).encode("utf-8", "replace"))
        for f in fs:
            own = f.path[len(record) :]
            if not f.prose and "[" not in own and _ADDRESS.fullmatch(f.text.strip()):
                out.append((f.name, f.text.strip().casefold(), checksum, text))
    return out

"""Intent: what the user's request asked for, as far as a trace's words tell (taint's rules 5 and 6).

A value found only in untrusted free text is still *asked for* when the request covers it:

- it sits in a record the request singled out by a name: a record of a result (a message, an e-mail,
  an event) whose value field is a name the user wrote and no sibling record shares (``sender: Priya``
  for "the report Priya shared"). A record singled out by a date, an id or a description is *not*
  enough: the event on the day the user asked about is exactly where an injected description sits
  (measured: endorsing every value of records described by shared words lost a third of the dev set's
  workspace attacks). Only a *link* in a described record is endorsed, in a source the user pointed at
  ("the post where someone described a new bakery", then its website);
- it is an e-mail address in the name of a person the request names ("add Ana; her e-mail is on
  her site" and ``ana@...``);
- it is a link or a date, the request asks for links or dates by a common noun ("the links shared
  in the team room", "the due dates in the notes"), and the source is one the request pointed
  at: the call that read it was given something the user wrote (a channel, a file name, a URL).

Not covered: a link from a source the user named by its own URL. "Her e-mail is on her site: <url>"
asks for an e-mail from that page, "look at the sites of Ana (<url>) and Ben (<url>)" for those very
pages; neither asks for further links. Nor an address whose local part adds a name the user never wrote.

Covered too: every value of a source the request handed its tasks to ("work through the tasks on the checklist
at <url>": a verb of doing, a noun of tasks, then the reference to the source).

A request extends to the free text of the records it singled out by a name (one level): "the details
are in Priya's note to Sam" makes that message's words part of what was asked; and to the text
of the sources it handed its tasks to.

Short values (grounding's rule 4): ``3`` or ``2024`` occurs in almost any text, so a short value counts
only where free text names it by the argument's own label ("remove the note with ID 7" for ``note_id``).

The ceiling: these read words, not meaning. An injection placed inside a record the user singled out,
or on a page the user asked to take links from, is endorsed with it; an attacker who picks an address
carrying the name the user wrote passes; a request phrased without the nouns above is not matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from luckrate.core import forms
from luckrate.core.fields import Field, field_name, record_of
from luckrate.core.provenance import USER, Argument, Origin, Provenance, tokens

WEAK_DIGITS = 4
WEAK_LENGTH = 2

_WORD = re.compile(r"[^\W\d_]{3,}")
_LONG_WORD = re.compile(r"[^\W\d_]{5,}")
DESCRIBED_BY = 2
"""Long words a record's free text must share with the request, and no sibling record, to be described."""
_NAME = re.compile(r"(?<![\w.@/])[A-Z][a-z]{2,}(?![\w@])")
# The kinds of value a request can ask for by a common noun (English).
_KINDS = {
    "url": frozenset({"website", "websites", "site", "sites", "link", "links", "url", "urls"}),
    "date": frozenset({"date", "dates", "deadline", "deadlines", "yyyy"}),
}


# A request that hands a list of tasks over to a source: "work through the tasks listed at <url>", "follow
# the instructions in <file>". The noun comes right before the reference to the source (English).
_TASKS = r"\b(?:to-?dos?|tasks?|instructions?|checklists?|steps)\b"
_DELEGATION = re.compile(
    r"\b(?:do|perform|complete|follow|execute|carry\s+out|work\s+through)\b[^.!?\n]{0,40}?"
    + _TASKS
    + r"(?:\s+list)?[^.!?\n]{0,24}?\b(?:at|in|on|from)\s+(?:the\s+|my\s+|this\s+)?(?:\S+\s+)?$"
)

_TASK_NOUN = re.compile(_TASKS)


@dataclass(frozen=True)
class Request:
    """What the user's input asks for: its text, words, the names written, its tokens."""

    text: str
    words: frozenset[str]
    names: frozenset[str]
    tokens: frozenset[str]
    delegated: frozenset[int] = frozenset()
    """Index positions of the sources the request handed its tasks over to (``_DELEGATION``)."""

    @classmethod
    def of_text(cls, text: str) -> Request:
        folded = text.casefold()
        return cls(
            folded,
            frozenset(_WORD.findall(folded)),
            frozenset(n.casefold() for n in _NAME.findall(text)),
            frozenset(tokens(text)),
        )

    @classmethod
    def of(cls, prov: Provenance) -> Request:
        """The user's request, extended by the records it singled out by name (worked out once per run)."""
        cached = prov.request
        if cached is None:
            base = cls.of_text(prov.user_text)
            handed = _delegated(prov, base)
            extra = [f.text for f in _named_records(prov, base)] if base.names else []
            extra += [prov.sources.text(position) for position in handed]
            cached = cls.of_text("\n".join([prov.user_text, *extra])) if extra else base
            if handed:
                cached = Request(cached.text, cached.words, cached.names, cached.tokens, frozenset(handed))
            prov.request = cached
        return cached


def endorsed(arg: Argument, origin: Origin, prov: Provenance, request: Request) -> str | None:
    """Why the request covers a value found only in untrusted free text, or None. Nothing is covered where
    the text that holds the value reads as instructions to the agent (``instructs``), but in a source the
    user handed tasks to: there, instructions are what the user pointed at."""
    if origin.position in request.delegated:
        return "in the tasks the user handed over to this source"
    why = _covered(arg, origin, prov, request)
    if why and instructs(prov.sources.texts(origin, arg.matched), arg.matched):
        return None
    return why


def _covered(arg: Argument, origin: Origin, prov: Provenance, request: Request) -> str | None:
    designated = _designated(origin, prov, request)
    record = prov.sources.record(origin)
    if record:
        named = _named(origin, record, prov, request)
        if named is not None:
            return f"in the record of {named.text!r}, whom the user named ({named.path})"
    if "@" in arg.value and not arg.embedded:
        named_by = _address_of(arg.value, request)
        if named_by:
            return f"an address in the name of {named_by!r}, whom the user named"
    kind = _kind(arg.value)
    # A source the user named by its address (a page's URL) is a request for that page, not for more
    # addresses of that kind: "her e-mail is on her site: <url>" asks for an e-mail from the page, and
    # "look at the sites of Ana (<url>) and Ben (<url>)" for those very pages.
    if kind == "url" and designated and _named_by_address(origin, prov, request):
        return None
    if kind == "url" and record and designated and not arg.embedded and _described(origin, prov, request):
        return "a link in the record the request described, in a source the user pointed at"
    # A link inside a message body is not a link the user asked to visit; a date inside one may be the date
    # the user asked to be told.
    if kind and not (arg.embedded and kind == "url") and request.words & _KINDS[kind] and designated:
        return f"a {kind} the user asked for, from a source the user pointed at"
    return None


# What text says when it speaks to an agent rather than to its reader, in families (English). None is an
# attack's template: each is how instructions to a model are phrased, whoever wrote them.
_INSTRUCTION_CUES = tuple(
    re.compile(c, re.IGNORECASE)
    for c in (
        # it names the reader as a model
        r"\b(?:ai|assistant|chatbot|llm|language model|gpt[\w.-]*|claude|gemini)\b",
        # it refers to the reader's own instructions
        r"\b(?:previous|prior|above|earlier|original|initial|all|your|other|new)\s+(?:instructions?|prompts?|directives?|"
        r"rules|guidelines)\b",
        # it tells the reader to set them aside
        r"\b(?:ignore|disregard|forget|override|bypass)\b",
        # it refers to the reader's own task
        r"\byour (?:task|goal|objective|job|assignment)\b",
        # it claims to speak for the system
        r"\b(?:system|admin(?:istrator)?|developer)\s+(?:message|instruction|notice|override|mode|prompt)",
        # it asks the reader to keep it from the user
        r"\b(?:do not|don't|without)\s+(?:tell|inform|notify|mention|ask|asking|telling|informing)\w*\b",
        # urgency
        r"\b(?:important|urgent|immediately|mandatory|strictly)\b|!!!",
    )
)
INSTRUCTION_CUES = 2
"""Cue families a text must show to read as instructions to the agent (benchmarks/instructions.py, on the
development set's untrusted free text): no benign text shows two; the injected texts of three of its six
attack classes mostly do; a bare imperative ("send X to Y"), a marker line or a misspelt "instructions"
shows at most one and is not caught this way."""


INSTRUCTION_WINDOW = 300
"""How far before a value its text is read for cues: an instruction leads up to what it asks for, and a
value written before an injected paragraph (an address, then the injection) is not part of it."""


def instructs(texts: list[str], keys: tuple[str, ...]) -> bool:
    """The text leading up to a value reads as instructions to the agent: ``INSTRUCTION_CUES`` families of
    ``_INSTRUCTION_CUES`` within ``INSTRUCTION_WINDOW`` characters before the value, and in its own words."""
    for text in texts:
        folded = text.casefold()
        for key in keys:
            at = folded.find(key)
            while at >= 0:
                window = folded[max(0, at - INSTRUCTION_WINDOW) : at + len(key)]
                if sum(1 for cue in _INSTRUCTION_CUES if cue.search(window)) >= INSTRUCTION_CUES:
                    return True
                at = folded.find(key, at + len(key))
    return False


def _address_of(address: str, request: Request) -> str | None:
    """The name an e-mail address is in, when every word of its local part is a name the request names
    (``ana@...`` for "add Ana"; not ``sam.reyes-77@...``, which adds a name nobody wrote)."""
    words = _WORD.findall(address.casefold().split("@", 1)[0])
    if words and all(w in request.names for w in words):
        return str(words[0])
    return None


def _named_by_address(origin: Origin, prov: Provenance, request: Request) -> bool:
    """The call that produced ``origin``'s source was given a URL the user wrote, and the request does not
    ask for links *from* it ("the links on <url>")."""
    for value in prov.sources.called_at(origin.position):
        key = forms.url_key(value)
        if key is None or "@" in value or not _written(value, request):
            continue
        at = request.text.find(value)
        at = request.text.find(key) if at < 0 else at
        if at >= 0 and _LINKS_FROM.search(request.text, max(0, at - 60), at):
            continue
        return True
    return False


# "the links on <url>", "websites listed at <url>": links asked for from the page the URL names (English).
_LINKS_FROM = re.compile(
    r"\b(?:links?|urls?|websites?|sites?|pages?)\b[^.!?\n:(]{0,24}?\b(?:on|at|in|from)\s+"
    r"(?:the\s+|my\s+|this\s+)?(?:page\s+|site\s+)?$"
)


def _named(origin: Origin, record: list[Field], prov: Provenance, request: Request) -> Field | None:
    """The value field of ``record`` naming a person the request names, when it tells the record from its
    siblings."""
    count, seen = prov.sources.siblings(origin)
    for f in record:
        value = f.text.casefold()
        if value in request.names and (count == 1 or seen.get((f.name, value), 0) < count):
            return f
    return None


def _described(origin: Origin, prov: Provenance, request: Request) -> bool:
    """The record's free text shares ``DESCRIBED_BY`` long words with the request that no sibling record has
    ("the post where someone described a new bakery near the office")."""
    prefix = record_of(origin.field)
    if prefix is None:
        return False
    mine: set[str] = set()
    others: set[str] = set()
    for f in prov.sources.all_fields(origin):
        if f.prose and f.record is not None:
            (mine if f.record == prefix else others).update(_LONG_WORD.findall(f.text.casefold()))
    wanted = {w for w in request.words if len(w) >= 5}
    return len((mine & wanted) - others) >= DESCRIBED_BY


def _named_records(prov: Provenance, request: Request) -> list[Field]:
    """The free text of every record, in a source the request pointed at, that the request names."""
    out: list[Field] = []
    for origin in prov.sources.designated_records(lambda values: any(_written(v, request) for v in values)):
        if _named(origin, prov.sources.record(origin), prov, request) is not None:
            out.extend(f for f in prov.sources.record_fields(origin) if f.prose)
    return out


def _delegated(prov: Provenance, request: Request) -> list[int]:
    """The sources whose call was given a reference the request hands its tasks over to."""
    if _TASK_NOUN.search(request.text) is None:  # most requests hand nothing over: no source is looked at
        return []
    out = []
    for position in prov.sources.tool_positions():
        for value in prov.sources.called_at(position):
            at = request.text.find(value) if len(value) >= 3 else -1
            if at < 0 and forms.url_key(value):
                at = request.text.find(forms.url_key(value) or "\0")
            if at >= 0 and _DELEGATION.search(request.text, max(0, at - 80), at):
                out.append(position)
                break
    return out


def _kind(value: str) -> str | None:
    folded = value.casefold()
    if forms.url_key(folded) and "@" not in folded:
        return "url"
    if forms.dates(folded):
        return "date"
    return None


def _designated(origin: Origin, prov: Provenance, request: Request) -> bool:
    """The call that produced the source was given something the user wrote (a file name, a URL, a channel)."""
    return origin.source != USER and any(_written(v, request) for v in prov.sources.called_at(origin.position))


def _written(value: str, request: Request) -> bool:
    """The user wrote ``value`` (case-folded), or the same URL in another form."""
    if len(value) < 3:
        return False
    if value in request.text:
        return True
    key = forms.url_key(value)
    return key is not None and len(key) >= 3 and key in request.text


def labelled(arg: Argument, origins: list[Origin], prov: Provenance) -> bool:
    """A short value that the free text names by the argument's own label: ``note_id='7'`` and "the note
    with ID 7". Only a label next to the value makes a short number evidence (grounding's rule 4)."""
    names = labels(arg.path)
    if not names:
        return False
    mention = re.compile(
        r"\b(?:"
        + "|".join(map(re.escape, names))
        + r")s?\b\W{0,3}(?:#|no\.|number\s)?\s*"
        + re.escape(arg.value.casefold())
        + r"(?![\w.]\w)"
    )
    return any(mention.search(text.casefold()) for o in origins for text in prov.sources.texts(o, arg.matched))


def labels(path: str) -> list[str]:
    last = field_name(path, fold=False)  # before folding, so camelCase still splits (fileId -> file, id)
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", last)
    return [part for part in re.split(r"[\W_]+", spaced.casefold()) if len(part) >= 2]


def weak(value: str) -> bool:
    return len(value) <= WEAK_LENGTH or (value.isdigit() and len(value) <= WEAK_DIGITS)

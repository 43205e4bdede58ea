"""Provenance: where did each identifier-shaped argument come from? (``trace``)

Walking the trajectory in order, the sources seen so far are the user's input (``user``) and each
tool result once it returned (``tool:<name>``). A run's first lookups search the sources' text and cut
only the tokens a key occurs in; once the text searched passes a few times the text held, each source is
indexed once into a map from key to the sources that contain it, so grading stays linear in the size of
the trajectory however many arguments it has (``SourceIndex.tokens_of``).

The ceiling of the method, honestly, it cannot tell apart:
- a value the agent computed from one it made up, in general: a few composed shapes (a date from its
  month or day, a sum of two amounts, an address from a name and a domain, a path from its parts) are
  told apart by core/composition.py and reported ``composed``; any other computed value (a date one day
  on) is reported ungrounded (a warning), by decision (core/forms.py says why);
- a value glued inside a longer token with no separator (``xORD-1y``) — not found;
- a value that occurs in a source by coincidence — counted as grounded in it;
- which of several sources the agent actually read it from — all of them are listed.

The parts: which values are identifiers and how a text is cut into tokens (core/identifiers.py); the sources
seen so far, indexed by key (core/sources.py); where in a source a key sits (core/records.py).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from luckrate.core import forms
from luckrate.core.identifiers import IDENTIFIER_SHAPE, MAX_ID_LENGTH, MAX_SCANNED, is_identifier, walk, words
from luckrate.core.sources import USER, Origin, SourceIndex, source_name
from luckrate.core.step import Step, Trajectory, clocked


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
        self.derived: dict[str, Any] = {}
        """What the modules that read this provenance work out from it once per run, on first use, each under its
        own name: the user's request (core/intent.py), the facts the sources hold in parts (core/composition.py),
        taint's judgements and the arguments no source holds as written (core/checks). Nothing here is read by
        tracing itself, so it knows none of their types."""
        self._run_days: frozenset[str] | None = None

    @property
    def run_days(self) -> frozenset[str]:
        """The run's own dates (ISO, UTC) from its clock: the days its steps started on; empty without a clock
        (worked out on first use: most runs never ask)."""
        if self._run_days is None:
            times = {step.t for step in self.steps} if clocked(self.steps) else set()
            self._run_days = frozenset(filter(None, map(_day, times)))
        return self._run_days

    def origins(self, arg: Argument) -> list[Origin]:
        """Every place ``arg`` was found, located to a field of each tool result."""
        out: list[Origin] = []
        for position in arg.positions:
            out.extend(self.sources.origins(position, arg.matched))
        return out


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
    found: list[Argument] = []
    append = found.append
    shaped = IDENTIFIER_SHAPE.fullmatch
    for step in traj.steps:
        scanning, deep = step.tool in scan, step.tool in thorough
        for path, value in walk(step.args):
            # is_identifier, with its string case written out: a call per leaf was 2% of grading
            # (tests/core/test_properties.py checks the two agree).
            if (
                0 < len(value) <= MAX_ID_LENGTH and shaped(value) is not None
                if value.__class__ is str
                else is_identifier(value)
            ):
                append(_lookup(index, step, path, str(value), False, deep))
            elif scanning and isinstance(value, str) and value:
                for text, embedded in _inside(value, scanning):
                    append(_lookup(index, step, path, text, embedded, deep)._replace(whole=value))
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
    return [(tok, True) for tok in dict.fromkeys(words(value)) if _MARKED.search(tok) and forms.is_strong(tok)]


_MARKED = re.compile(r"[0-9@.]")


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

"""From a ``Tally`` to a proposed spec per agent: each entry with the signals that put it there."""

from __future__ import annotations

import math
from dataclasses import dataclass

from luckrate.core.suggest import signals, vocabulary
from luckrate.core.suggest.tally import MAX_TOOLS, MAX_UNTRACKED_NAMES, AgentTally, Tally, ToolTally


@dataclass(frozen=True)
class Thresholds:
    """The knobs, each with the default ``benchmarks/suggest.py`` chose leave-one-suite-out."""

    sentence_share: float = 0.05
    """An untrusted candidate: at least this share of a tool's results hold sentences of free text (or markup)."""
    min_runs: int = 3
    """A ``before`` rule needs at least this many supporting runs."""
    quantile: float = 0.99
    """``max_steps`` is this quantile of the usable runs' step counts (nearest rank)."""
    url_acts: bool = True
    """A URL argument makes even a read privileged (the request reaches the URL's host)."""
    fields: bool = False
    """Declare field-level ``untrusted`` (the dict form) for tools whose sentences all sat in named fields.
    Off by default: the dict form gives every other tool ``"*"`` (its whole result, values too), broader
    than the list form's free text, and on the dev set it cost taint precision; the fields are named in
    each entry's comment instead."""


@dataclass(frozen=True)
class Entry:
    """One proposed tool-list entry."""

    tool: str
    why: str
    """The signals that fired, for the comment beside the entry."""
    fields: tuple[str, ...] = ()
    """For ``untrusted``: the fields holding third-party text; empty = the whole result."""


@dataclass(frozen=True)
class Rule:
    """One proposed ``before`` rule."""

    first: str
    then: str
    runs: int
    """Usable runs calling ``then``; in every one ``first`` came first."""
    same: tuple[str, str] | None = None


@dataclass(frozen=True)
class Proposal:
    """The spec proposed for one agent, and what it rests on."""

    agent: str | None
    runs: int
    usable: int
    tools: tuple[tuple[str, int, int], ...]
    """(tool, calls, runs), sorted by tool name."""
    privileged: tuple[Entry, ...]
    untrusted: tuple[Entry, ...]
    before: tuple[Rule, ...]
    max_steps: int | None
    max_steps_why: str
    notes: tuple[str, ...]
    """What could not be judged, and why."""
    trusted: tuple[Trusted, ...] = ()
    """``trusted_records`` candidates: addresses whose messages, in an untrusted tool's results, are a system's."""


@dataclass(frozen=True)
class Trusted:
    """One proposed ``trusted_records`` pattern."""

    tool: str
    field: str
    address: str
    why: str


def propose(tally: Tally, th: Thresholds = Thresholds()) -> tuple[list[Proposal], list[str]]:
    """Proposals sorted by agent name (None last), and notes about the whole input."""
    names = sorted(tally.agents, key=lambda a: (a is None, a or ""))
    out = [_agent(name, tally.agents[name], th) for name in names]
    notes = []
    if not tally.agents:
        notes.append("no agent runs were read: nothing to propose")
    if tally.untracked["calls"]:
        more = f"{tally.untracked_names:,}{'+' if tally.untracked_names >= MAX_UNTRACKED_NAMES else ''}"
        notes.append(
            f"more than {MAX_TOOLS:,} distinct tool names: {more} further names "
            f"({tally.untracked['calls']:,} calls) were counted but not proposed"
        )
    if tally.untracked["unnamed"]:
        notes.append(f"{tally.untracked['unnamed']:,} calls named no tool: not proposed")
    if tally.untracked["agents"]:
        notes.append(f"more agents than tracked: {tally.untracked['runs']:,} runs of further agents were skipped")
    return out, notes


def _agent(name: str | None, a: AgentTally, th: Thresholds) -> Proposal:
    tools = tuple((t, s.calls, s.runs) for t, s in sorted(a.tools.items()))
    privileged = tuple(e for t, s in sorted(a.tools.items()) if (e := privileged_entry(t, s, th)))
    untrusted = tuple(e for t, s in sorted(a.tools.items()) if (e := untrusted_entry(t, s, th)))
    max_steps, why = _max_steps(a, th)
    trusted = tuple(t for e in untrusted for t in trusted_entries(e.tool, a.tools[e.tool]))
    return Proposal(
        name, a.runs, a.usable, tools, privileged, untrusted, _before(a, th), max_steps, why, _notes(a, th), trusted
    )


def trusted_entries(tool: str, t: ToolTally) -> list[Trusted]:
    """The addresses of an untrusted tool's records whose many distinct messages (``TEMPLATE_RESULTS`` or more)
    all share one or two sentence skeletons: a system filling in its template (a platform's codes and notices),
    not people writing. A person's mail seen in every run is one message, not many."""
    out = []
    for (name, address), sender in sorted(t.senders.items()):
        if len(sender.texts) >= TEMPLATE_RESULTS and 1 <= len(sender.skeletons) <= 2:
            why = f"{len(sender.texts)}+ distinct messages from {address}, all one template: a system's"
            out.append(Trusted(tool, name, address, why))
    return out


def privileged_entry(tool: str, t: ToolTally, th: Thresholds) -> Entry | None:
    """The tool acts: its name's or description's verb, else the arguments it was called with."""
    if signals.is_handoff(tool):
        return None
    act, read = signals.name_verbs(tool)
    d_act, d_read = signals.description_verb(t.description or "")
    why = []
    if act:
        why.append(f"name verb {act!r}")
    if d_act:
        why.append(f"description verb {d_act!r}")
    shapes = _shapes(t)
    if th.url_acts and "url" in shapes:
        why.append("takes a URL (the request reaches the URL's host and can carry data out)")
    if not (read or d_read):  # a plain read is not privileged by what it is passed
        named = [s for s in ("address", "account") if s in shapes]
        params = sorted(s.removeprefix("param:") for s in shapes if s.startswith("param:"))
        if named:
            why.append(
                "arguments carry "
                + " and ".join({"address": "an address", "account": "an account number"}[s] for s in named)
            )
        if params:
            why.append("takes " + ", ".join(repr(p) for p in params[:3]))
    return Entry(tool, "; ".join(why)) if why else None


SHAPE_SHARE = 0.5
"""An argument shape describes a tool when at least this share of its captured calls carry it (a URL
pasted once into a file name does not make a file reader fetch URLs)."""


def _shapes(t: ToolTally) -> set[str]:
    shapes = {s for s, n in t.shapes.items() if t.captured and n / t.captured >= SHAPE_SHARE}
    for p in t.params:  # a definition's parameter names count as much as a call's
        low = p.lower()
        if low in vocabulary.URL_PARAMS:
            shapes.add("url")
        elif low in vocabulary.WRITE_PARAMS:
            shapes.add(f"param:{low}")
    return shapes


def untrusted_entry(tool: str, t: ToolTally, th: Thresholds) -> Entry | None:
    """The tool's results carry text a third party can write. A tool named for an action is left out:
    its result reports on what the agent itself wrote."""
    if signals.is_handoff(tool):
        return None
    act, _ = signals.name_verbs(tool)
    d_act, _ = signals.description_verb(t.description or "")
    if act or d_act:
        return None
    named, described = signals.nouns(tool), signals.nouns(t.description or "")
    why = []
    share = t.sentences / t.results if t.results else 0.0
    templated = _templated(t)
    if t.results and share >= th.sentence_share and not templated:
        why.append(f"{_pct(share)} of {t.results} results hold sentences of free text")
    if (
        t.results and t.markup / t.results >= th.sentence_share
    ):  # a stray <br> in one result in a thousand is not a page
        why.append(f"{t.markup} of {t.results} results hold markup")
    if (
        named or described
    ) and t.sentences:  # a page fetched daily repeats itself: the name still says whose text it is
        where = f"name says {', '.join(named[:3])}" if named else f"description says {', '.join(described[:3])}"
        why.append(where if why else f"{where}; {t.sentences} of {t.results} results hold sentences")
    elif named and not t.results:  # content capture off, or defined and never called: the name is all there is
        why.append(f"name says {', '.join(named[:3])} (from the name only: no result was captured)")
    if not why:
        return None
    fields = _fields(t)
    if fields and not th.fields:  # said, not declared: the list form reads free text only, "*" would take all
        why.append(f"sentences only in field{'s' if len(fields) > 1 else ''} {', '.join(fields[:4])}")
    return Entry(tool, "; ".join(why), fields if th.fields else ())


TEMPLATE_RESULTS = 5
"""A tool whose sentence-bearing results (at least this many) all share one or two sentence skeletons
returns a system's template, not text anyone wrote."""


def _templated(t: ToolTally) -> bool:
    return t.sentences >= TEMPLATE_RESULTS and len(t.skeletons) <= 2


def _fields(t: ToolTally) -> tuple[str, ...]:
    if not t.sentences or t.structured < t.sentences or t.markup or not t.sentence_fields:
        return ()
    return tuple(sorted(t.sentence_fields))


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 else f"{100 * x:.1f}%"


def _before(a: AgentTally, th: Thresholds) -> tuple[Rule, ...]:
    rules = {}
    for (first, then), held in a.held.items():
        runs = a.with_tool[then]
        if held == runs and runs >= th.min_runs:
            same = sorted(a.same.get((first, then), ()), key=lambda p: (p[0] != p[1], p))
            rules[(first, then)] = Rule(first, then, runs, same[0] if same else None)
    # a before b before c already orders a before c: keep only the steps of a chain (unless it shares an argument)
    after: dict[str, set[str]] = {}
    for first, then in rules:
        after.setdefault(first, set()).add(then)
    out = []
    for (first, then), rule in sorted(rules.items()):
        implied = any(then in after.get(mid, ()) for mid in after[first] if mid != then)
        if rule.same is not None or not implied:
            out.append(rule)
    return tuple(out)


def _max_steps(a: AgentTally, th: Thresholds) -> tuple[int | None, str]:
    n = sum(a.lengths.values())
    if not n:
        return None, "no usable run (every run failed its output check or crashed)"
    rank = max(1, math.ceil(th.quantile * n))
    seen = 0
    for length in sorted(a.lengths):
        seen += a.lengths[length]
        if seen >= rank:
            break
    longest = max(a.lengths)
    q = f"p{th.quantile * 100:g}"
    value = max(length, 1)
    return value, f"{q} of {n:,} usable runs' step counts (longest {longest})"


def _notes(a: AgentTally, th: Thresholds) -> tuple[str, ...]:
    notes = []
    if a.no_content:
        notes.append(
            f"{a.no_content:,} of {a.runs:,} runs had content capture off: their arguments and results "
            "could not be read, so untrusted and argument signals rest on the other runs (or names only)"
        )
    if not a.judged:
        notes.append("no run carries an output verdict: before and max_steps read every run that did not crash")
    if a.usable < th.min_runs:
        notes.append(f"too few usable runs ({a.usable}) to propose before rules (needs {th.min_runs})")
    if a.pairs_dropped:
        notes.append(f"ordering pairs past {len(a.held):,} were not tracked ({a.pairs_dropped:,} observations)")
    if a.wide_runs:
        notes.append(f"{a.wide_runs:,} runs called too many distinct tools to read their ordering")
    never = sorted(
        t for t, s in a.tools.items() if s.calls and not s.results and s.captured and not signals.is_handoff(t)
    )
    if never:
        notes.append(
            f"{len(never)} tools never returned a result to read: "
            + ", ".join(repr(t) for t in never[:5])
            + ("..." if len(never) > 5 else "")
        )
    return tuple(notes)

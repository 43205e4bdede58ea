"""Grounding: ``ungrounded`` (an argument no earlier source holds) and ``composed`` (one built from what the
sources hold), and ``--explain``'s view of every traced argument (grounding and taint, core/checks/taint.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from luckrate.core import composition
from luckrate.core.checks.taint import judgements
from luckrate.core.intent import is_search
from luckrate.core.provenance import Argument, Provenance
from luckrate.core.spec import Spec
from luckrate.core.violation import Violation


def is_ungrounded(arg: Argument) -> bool:
    """In no source in any form, and a reference rather than a search input (``is_query``); identifiers
    found inside free text are traced for taint only."""
    return not arg.sources and not arg.embedded and not is_query(arg)


def is_query(arg: Argument) -> bool:
    """A search input (``intent.is_search``): a query is the model's guess at what to look for; an invented query
    finds nothing and harms nothing, an invented id is the fabrication ``ungrounded`` exists for."""
    return is_search(arg.tool, arg.path)


def ungrounded(prov: Provenance, spec: Spec) -> Iterator[Violation]:
    """An argument no source holds. A value that names one of the run's agents (a hand-off's target: the
    framework lists them to the model, in no source the trace records) is known, not invented; a value
    the sources hold in another form or in parts is not invented either (``composed`` reports the
    latter; core/composition.py)."""
    for arg, found in _unwritten_args(prov):
        if found == (False, None):
            yield Violation(
                "ungrounded",
                spec.severity("ungrounded"),
                arg.step,
                arg.tool,
                f"argument {arg.path}={arg.value!r} appears in no earlier source (user input or tool result)",
            )


def composed(prov: Provenance, spec: Spec) -> Iterator[Violation]:
    """An argument no source holds as written, built from what the earlier sources hold: a date from
    its month or day, a sum of two amounts, an address from a name and a domain, a path from its parts
    (core/composition.py). A different fact from an invented value: shown, apart from ``ungrounded``."""
    for arg, found in _unwritten_args(prov):
        how = found[1]
        if how is not None:
            yield Violation(
                "composed",
                spec.severity("composed"),
                arg.step,
                arg.tool,
                f"argument {arg.path}={arg.value!r} appears in no earlier source as written; it is {how}",
            )


def _unwritten_args(prov: Provenance) -> list[tuple[Argument, tuple[bool, str | None]]]:
    """Every argument ``_unwritten`` answers for, with its answer: worked out once per run (``ungrounded`` and
    ``composed`` both read it; in most runs every argument is found and the list is empty)."""
    cached: list[tuple[Argument, tuple[bool, str | None]]] | None = prov.derived.get("unwritten")
    if cached is None:
        cached = prov.derived["unwritten"] = [
            (arg, found)
            for arg in prov
            if not arg.sources and not arg.embedded and (found := _unwritten(arg, prov)) is not None
        ]
    return cached


def _unwritten(arg: Argument, prov: Provenance) -> tuple[bool, str | None] | None:
    """For an argument ``ungrounded`` would report (no source, not a search input, no agent's name): whether the
    sources hold it in another form, and else how it was composed (None when it was not). None for any other
    argument. ``ungrounded`` reports ``(False, None)``, ``composed`` a composition."""
    if not is_ungrounded(arg) or arg.value in prov.agents:
        return None
    parts = composition.of(prov)
    if parts.another_form(arg):
        return (True, None)
    return (False, parts.composed(arg))


def _grounding(arg: Argument, prov: Provenance) -> dict[str, Any]:
    """``--explain``'s view of the two grounding checks: ``ungrounded`` as the check reports it, and
    ``composed``, how the value was composed (None when it was not, or is grounded)."""
    found = _unwritten(arg, prov)
    return {"ungrounded": found == (False, None), "composed": found[1] if found else None}


def explain(prov: Provenance, spec: Spec) -> list[dict[str, Any]]:
    """Every traced argument with its sources and why it was or was not ungrounded or taint (``--explain``)."""
    out = []
    judged_at = {id(arg): judged for arg, judged in judgements(prov, spec)} if spec.taint_declared else {}
    for arg in prov:
        entry = {
            "step": arg.step,
            "tool": arg.tool,
            "path": arg.path,
            "value": arg.value,
            "embedded": arg.embedded,
            "looked_up": [arg.value.casefold(), *arg.looked_up],
            "sources": sorted(arg.sources),
            "origins": [o.to_dict() for o in prov.origins(arg)],
            **_grounding(arg, prov),
        }
        if spec.taint_declared and arg.tool in spec.privileged:
            judged = judged_at[id(arg)]
            entry.update(
                taint=judged.tainted,
                tier=judged.tier,
                reason=judged.reason,
                evidence=[e.to_dict() for e in judged.evidence],
            )
        else:
            entry.update(
                taint=None,
                tier=None,
                reason="not a privileged call" if spec.taint_declared else "taint not declared",
                evidence=[],
            )
        out.append(entry)
    return out

"""A proposal as a Python spec file for a person to review (``render``), and an existing spec set beside
what the traffic suggests (``compare``).

Every name in the file comes from span data, so each is written with ``repr`` (a string literal that
escapes quotes, line breaks and non-printable characters) and comments hold only our own words and
``repr``'d names: the file can only ever define the dict it shows.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from luckrate.core.spec import FALLBACK, Spec, spec_for
from luckrate.core.suggest.propose import Entry, Proposal, Rule, Trusted

MAX_COMMENT = 160


def render(proposals: Sequence[Proposal], notes: Sequence[str], sources: Sequence[str] = ()) -> str:
    """The spec file: ``SPEC`` for one agent, ``SPECS`` keyed by agent name (``*`` for runs naming none)
    for several; a summary block at the top."""
    lines = [
        '"""Spec proposed by `luckrate suggest` from recorded runs. Review every entry before committing it:',
        "each comment says why the entry was proposed. `forbidden` is never proposed: no traffic can",
        'tell what is forbidden."""',
        "",
    ]
    lines += _summary(proposals, notes, sources)
    if len(proposals) == 1:
        lines.append("SPEC = {")
        lines += _body(proposals[0], "    ")
        lines.append("}")
    elif not proposals:
        lines.append("SPEC: dict = {}  # nothing was read: no agent runs")
    else:
        lines.append("SPECS = {")
        for p in proposals:
            lines.append(f"    {p.agent if p.agent is not None else FALLBACK!r}: {{")
            lines += _body(p, "        ")
            lines.append("    },")
        lines.append("}")
    return "\n".join(lines) + "\n"


def _summary(proposals: Sequence[Proposal], notes: Sequence[str], sources: Sequence[str]) -> list[str]:
    runs = sum(p.runs for p in proposals)
    out = [
        f"# Summary: {_n(runs, 'run')} of {_n(len(proposals), 'agent')}"
        + (f" from {_n(len(sources), 'file')}" if sources else "")
        + "."
    ]
    for p in proposals:
        name = repr(p.agent) if p.agent is not None else "runs naming no agent"
        out.append(
            _comment(
                f"{name}: {len(p.tools)} tools, {len(p.privileged)} privileged, {len(p.untrusted)} "
                f"untrusted, {_n(len(p.before), 'before rule')} from {_n(p.runs, 'run')} ({p.usable:,} usable)"
            )
        )
        out += [line for n in p.notes for line in _wrapped(f"not judged: {n}", "  ")]
    out += [line for n in notes for line in _wrapped(f"note: {n}")]
    return out + [""]


def _wrapped(text: str, indent: str = "", width: int = 104, most: int = 6) -> list[str]:
    """A summary line as comment lines: wrapped, not cut (at most ``most`` lines)."""
    lines = textwrap.wrap(text, width, subsequent_indent=indent + "  ", initial_indent=indent)[:most]
    return [_comment(line) for line in lines]


def _n(k: int, word: str) -> str:
    return f"{k:,} {word}{'' if k == 1 else 's'}"


def _comment(text: str, indent: str = "") -> str:
    text = "".join(c if c.isprintable() else "?" for c in text)
    if len(text) > MAX_COMMENT:
        text = text[: MAX_COMMENT - 3] + "..."
    return f"{indent}# {text}"


def _body(p: Proposal, pad: str) -> list[str]:
    out = [f'{pad}"tools": [']
    out += [
        f"{pad}    {tool!r},  "
        + _comment(f"{_n(calls, 'call')} in {_n(runs, 'run')}" if calls else "defined in the traces, never called")
        for tool, calls, runs in p.tools
    ]
    out.append(f"{pad}],")
    out += _entries("privileged", p.privileged, pad)
    out += _untrusted(p.untrusted, pad)
    out += _trusted(p.trusted, pad)
    if p.before:
        out.append(f'{pad}"before": [')
        out += [
            f"{pad}    {_rule(r)},  " + _comment(f"held in all {r.runs:,} usable runs calling {r.then!r}")
            for r in p.before
        ]
        out.append(f"{pad}],")
    if p.max_steps is not None:
        out.append(f'{pad}"max_steps": {p.max_steps},  ' + _comment(p.max_steps_why))
    return out


def _entries(key: str, entries: Sequence[Entry], pad: str) -> list[str]:
    if not entries:
        return [_comment(f"{key}: no candidate", pad)]
    return [f'{pad}"{key}": ['] + [f"{pad}    {e.tool!r},  " + _comment(e.why) for e in entries] + [f"{pad}],"]


def _untrusted(entries: Sequence[Entry], pad: str) -> list[str]:
    if not any(e.fields for e in entries):
        return _entries("untrusted", entries, pad)
    out = [f'{pad}"untrusted": {{']
    for e in entries:
        value = repr(list(e.fields)) if e.fields else '"*"'
        out.append(f"{pad}    {e.tool!r}: {value},  " + _comment(e.why))
    return out + [f"{pad}}},"]


def _trusted(entries: Sequence[Trusted], pad: str) -> list[str]:
    """``trusted_records``: the patterns by tool and field, each with why."""
    if not entries:
        return []
    out = [f'{pad}"trusted_records": {{']
    by_tool: dict[str, dict[str, list[Trusted]]] = {}
    for e in entries:
        by_tool.setdefault(e.tool, {}).setdefault(e.field, []).append(e)
    for tool, by_field in by_tool.items():
        out.append(f"{pad}    {tool!r}: {{")
        for name, found in by_field.items():
            out.append(f"{pad}        {name!r}: [")
            out += [f"{pad}            {e.address!r},  " + _comment(e.why) for e in found]
            out.append(f"{pad}        ],")
        out.append(f"{pad}    }},")
    return out + [f"{pad}}},"]


def _rule(r: Rule) -> str:
    if r.same is None:
        return f"({r.first!r}, {r.then!r})"
    same = repr(r.same[0]) if r.same[0] == r.same[1] else repr(list(r.same))
    return f'{{"first": {r.first!r}, "then": {r.then!r}, "same": {same}}}'


def compare(proposals: Sequence[Proposal], specs: Mapping[str, Spec]) -> list[str]:
    """What the traffic suggests that ``specs`` does not say, one line each (empty: they agree)."""
    out = []
    for p in proposals:
        spec = spec_for(specs, p.agent)
        who = f"agent {p.agent!r}" if p.agent is not None else "runs naming no agent"
        if spec is None:
            out.append(f"{who}: no spec for this agent and no '*' fallback")
            continue
        seen = {t for t, _, _ in p.tools}
        if spec.tools:
            out += [f"{who}: tool {t!r} called but not in tools" for t in sorted(seen - set(spec.tools))]
            out += [f"{who}: tool {t!r} in tools but never seen in the traffic" for t in spec.tools if t not in seen]
        out += [
            f"{who}: {e.tool!r} looks privileged ({e.why}) but is not declared privileged"
            for e in p.privileged
            if e.tool not in spec.privileged
        ]
        out += [
            f"{who}: {e.tool!r} looks untrusted ({e.why}) but is not declared untrusted"
            for e in p.untrusted
            if e.tool not in spec.untrusted
        ]
    return out

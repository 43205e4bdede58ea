"""Reports of graded runs: the text verdicts people read and the JSON scripts read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from luckrate.core.gate import GateResult
from luckrate.core.grade import RunGrade
from luckrate.core.metric import LuckRate

SKIPPED_REASON = "no agent, model or tool span"
"""Why a file's trace is not graded: it is no agent's run (an HTTP request's, a database call's)."""


def as_json(
    grades: Sequence[RunGrade],
    luck: LuckRate,
    result: GateResult,
    explained: Sequence[list[dict]] | None = None,
    skipped: Mapping[str, int] | None = None,
    assembly: Mapping[str, int] | None = None,
) -> str:
    """The JSON report; with ``explained`` (``--explain``) each run also carries its ``provenance`` list.
    When files held traces that are no run (``skipped``: file -> count), a ``skipped`` object says how
    many and where: ``{"traces": n, "reason": "no agent, model or tool span", "files": {file: n}}``. When
    runs were assembled across traces (``assembly``), an ``assembly`` object holds the non-zero counts
    (``traces_joined``, ``links_missing``, ``links_dropped``, ``runs_split``, ``conversation_ids_too_long``)."""
    runs = [g.to_dict() for g in grades]
    if explained is not None:
        for run, traced in zip(runs, explained):
            run["provenance"] = traced
    report: dict = {"runs": runs, "luck": luck.to_dict(), "gate": result.to_dict()}
    if skipped:
        report["skipped"] = {"traces": sum(skipped.values()), "reason": SKIPPED_REASON, "files": dict(skipped)}
    if assembly:
        report["assembly"] = dict(assembly)
    return json.dumps(report, ensure_ascii=False)


def as_text(
    grades: Sequence[RunGrade],
    luck: LuckRate,
    result: GateResult,
    explained: Sequence[list[dict]] | None = None,
    skipped: Mapping[str, int] | None = None,
    assembly: Mapping[str, int] | None = None,
) -> str:
    lines = []
    for i, g in enumerate(grades):
        if g.not_gradable is not None:
            lines.append(f"{g.id}  case={g.case}  output={g.output}  not gradable: {g.not_gradable}")
            continue
        path = "ok" if g.path_ok else "BAD"
        lines.append(f"{g.id}  case={g.case}  output={g.output}  path={path}")
        for v in g.violations:
            step = f"step {v.step}" if v.step is not None else "run"
            tool = f" {v.tool}" if v.tool else ""
            lines.append(f"    {v.severity.value:<4}  {v.check:<12}  {step}{tool}: {v.detail}")
        if g.skipped:
            lines.append(f"    skipped: {', '.join(g.skipped)}")
        for entry in explained[i] if explained is not None else ():
            lines.append(_explained(entry))
    lines.append("")
    if skipped:
        where = ", ".join(f"{path} ({n})" for path, n in skipped.items())
        lines.append(f"Skipped {sum(skipped.values())} traces with {SKIPPED_REASON}: {where}")
    if assembly:
        lines.append("Runs across traces: " + ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in assembly.items()))
    if ungradable := sum(g.not_gradable is not None for g in grades):
        lines.append(f"Not gradable: {ungradable} run{'s' if ungradable != 1 else ''} (out of the Luck Rate)")
    lines.append(str(luck))
    lines.append("Gate: FAILED" if result.failed else "Gate: passed")
    lines.extend(f"  - {reason}" for reason in result.reasons)
    return "\n".join(lines)


def _explained(entry: dict) -> str:
    verdict = entry.get("tier") or ("ungrounded" if entry["ungrounded"] else "ok")
    if entry.get("composed") and not entry.get("tier"):
        verdict = f"composed ({entry['composed']})"
    forms = ", ".join(entry["looked_up"][1:])
    looked = f" (also looked up as {forms})" if forms else ""
    found = ", ".join(entry["sources"]) or "nowhere"
    evidence = entry.get("evidence") or []
    weighed = ""
    if evidence:
        pro = ", ".join(e["kind"] for e in evidence if e["for"]) or "none"
        con = ", ".join(e["kind"] for e in evidence if not e["for"]) or "none"
        weighed = f"; evidence for: {pro}; against: {con}"
    return (
        f"    traced  step {entry['step']} {entry['tool']} {entry['path']}={entry['value']!r}{looked}: "
        f"{verdict}; found in {found}; {entry['reason']}{weighed}"
    )

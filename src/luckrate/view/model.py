"""A graded run as plain data (dicts of str, numbers, lists): the JSON API's answers and the pages' input.

Standard library and core only. Values from span data are cut (``MAX_VALUE``) and never interpreted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from luckrate.core.checks.grounding import explain
from luckrate.core.grade import RunGrade, traced
from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory

MAX_VALUE = 16_384
"""Longest value from span data a page or an answer carries (longer ones end in ``…``)."""
MAX_ITEMS = 200
"""Most items of a list from span data (provenance entries, origins) a page shows."""
FILTERS = ("agent", "spec", "output", "path", "check", "trace_id")


def cut(value: Any, limit: int = MAX_VALUE) -> Any:
    """Bound a value from span data: strings cut, lists and dicts cut to ``MAX_ITEMS``, recursively."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, (list, tuple)):
        return [cut(v, limit) for v in value[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {str(k)[:256]: cut(v, limit) for k, v in list(value.items())[:MAX_ITEMS]}
    return value


def as_text(value: Any) -> str:
    """An argument value as the text a person reads: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return cut(value)
    try:
        return cut(json.dumps(value, ensure_ascii=False, default=str))
    except ValueError:  # a circular structure cannot come from JSON; stay safe anyway
        return cut(repr(value))


def path_word(g: RunGrade) -> str:
    """``ok``, ``bad`` or ``not_gradable``: the ``path`` filter's values."""
    if g.not_gradable is not None:
        return "not_gradable"
    return "ok" if g.path_ok else "bad"


def _clock(traj: Trajectory) -> tuple[float | None, float | None]:
    """The run's first step start and its length (first start to last end), None without a clock."""
    if not traj.has_clock:
        return None, None
    start = min(s.t for s in traj.steps)
    return start, max(s.t + s.duration for s in traj.steps) - start


def summary(
    g: RunGrade, traj: Trajectory, spec: Spec, traces: tuple[str, ...], seq: int = 0, graded_at: float = 0.0
) -> dict[str, Any]:
    """One row of the runs list."""
    start, length = _clock(traj)
    return {
        "seq": seq,
        "trace_id": traces[0],
        "agent": cut(g.agent, 256),
        "spec": spec.name,
        "case": cut(g.case, 256),
        "output": g.output,
        "path": path_word(g),
        "lucky": g.lucky,
        "checks": sorted({v.check for v in g.violations}),
        "steps": len(traj.steps),
        "graded_at": graded_at,
        "start": start,
        "duration": length,
    }


def matches(row: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """A runs-list row against the filters given (empty ones ignored); ``trace_id`` matches a part."""
    for key, wanted in filters.items():
        if not wanted:
            continue
        if key == "check":
            if wanted not in row["checks"]:
                return False
        elif key == "trace_id":
            if wanted.strip().lower() not in row["trace_id"]:
                return False
        elif str(row.get(key) or "") != wanted:
            return False
    return True


def _skipped(entry: str) -> dict[str, str]:
    check, _, reason = entry.partition(" (")
    return {"check": check, "reason": reason.rstrip(")")}


def provenance(traj: Trajectory, spec: Spec) -> list[dict[str, Any]]:
    """Every traced argument, as ``luckrate grade --explain`` lists it (empty without content)."""
    if not traj.content:
        return []
    return [cut(entry) for entry in explain(traced(traj, spec), spec)[:MAX_ITEMS]]


def detail(
    g: RunGrade,
    traj: Trajectory,
    spec: Spec,
    traces: tuple[str, ...],
    *,
    seq: int = 0,
    graded_at: float = 0.0,
    output_from: str = "",
) -> dict[str, Any]:
    """A run's page: its steps as a timeline, each with its findings and its traced arguments."""
    run = summary(g, traj, spec, traces, seq, graded_at)
    traced_args = provenance(traj, spec) if g.not_gradable is None else []
    start = run["start"]
    steps = []
    for s in traj.steps:
        steps.append(
            {
                "index": s.index,
                "tool": cut(s.tool, 256),
                "agent": cut(s.agent, 256),
                "t": s.t or None,
                "offset": None if start is None else s.t - start,
                "duration": s.duration if start is not None else None,
                "args": {str(k)[:256]: as_text(v) for k, v in list(s.args.items())[:MAX_ITEMS]},
                "result": None if s.result is None else cut(s.result),
                "error": None if s.error is None else cut(s.error),
                "findings": [v.to_dict() for v in g.violations if v.step == s.index],
                "provenance": [e for e in traced_args if e.get("step") == s.index],
            }
        )
    run.update(
        traces=list(traces),
        not_gradable=g.not_gradable,
        content=traj.content,
        input=cut(" / ".join(traj.inputs)) if traj.content else "",
        output_from=output_from,
        skipped=[_skipped(x) for x in g.skipped],
        findings=[v.to_dict() for v in g.violations if v.step is None or v.step >= len(traj.steps)],
        violations=[v.to_dict() for v in g.violations],
        steps=steps,
    )
    return run


def luck_by_agent(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Luck Rate per agent with its counts, and the checks found in most runs."""
    agents: dict[str, dict[str, Any]] = {}
    checks: Counter[str] = Counter()
    for row in rows:
        a = agents.setdefault(
            row["agent"] or "", {"agent": row["agent"] or "", "runs": 0, "passing": 0, "lucky": 0, "not_gradable": 0}
        )
        a["runs"] += 1
        if row["path"] == "not_gradable":
            a["not_gradable"] += 1
            continue
        if row["output"] == "pass":
            a["passing"] += 1
            a["lucky"] += row["path"] == "bad"
        checks.update(row["checks"])
    for a in agents.values():
        a["rate"] = round(a["lucky"] / a["passing"], 4) if a["passing"] else None
        a["rate_text"] = "—" if a["rate"] is None else f"{100 * a['lucky'] / a['passing']:.1f}%"
    return {
        "agents": sorted(agents.values(), key=lambda a: a["agent"]),
        "checks": [{"check": c, "runs": n} for c, n in checks.most_common(10)],
    }

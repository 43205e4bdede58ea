"""Reports of graded runs: the text verdicts people read and the JSON scripts read."""

from __future__ import annotations

import json
from collections.abc import Sequence

from luckrate.core.gate import GateResult
from luckrate.core.grade import RunGrade
from luckrate.core.metric import LuckRate

def as_json(grades: Sequence[RunGrade], luck: LuckRate, result: GateResult) -> str:
    return json.dumps({"runs": [g.to_dict() for g in grades], "luck": luck.to_dict(), "gate": result.to_dict()},
                      ensure_ascii=False)


def as_text(grades: Sequence[RunGrade], luck: LuckRate, result: GateResult) -> str:
    lines = []
    for g in grades:
        path = "ok" if g.path_ok else "BAD"
        lines.append(f"{g.id}  case={g.case}  output={g.output}  path={path}")
        for v in g.violations:
            step = f"step {v.step}" if v.step is not None else "run"
            tool = f" {v.tool}" if v.tool else ""
            lines.append(f"    {v.severity.value:<4}  {v.check:<12}  {step}{tool}: {v.detail}")
        if g.skipped:
            lines.append(f"    skipped: {', '.join(g.skipped)}")
    lines.append("")
    lines.append(str(luck))
    lines.append("Gate: FAILED" if result.failed else "Gate: passed")
    lines.extend(f"  - {reason}" for reason in result.reasons)
    return "\n".join(lines)

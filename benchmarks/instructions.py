"""Does untrusted text read as instructions to the agent? The cue families of ``core/instructions.py``
(``_INSTRUCTION_CUES``), measured on the detection set's texts, leaving one attack class out.

    .venv/bin/python benchmarks/instructions.py

Texts, from benchmarks/data (no agentdojo needed): every free-text field of an untrusted tool's result in
the replayed runs. *Benign*: the fields of clean runs. *Injected*, per attack class: the fields of resisted
runs that no clean run's result holds (the injected paragraph and the field around it). For each attack
class left out, the threshold (how many families must show) is chosen on the other five classes and the
benign texts (most injected texts caught, a benign text flagged counting as five missed), then scored on
the class left out. The cues were written as instructions to a model are phrased, not from any class's
template; a class whose only mark is its template (a bare imperative, a marker line) is not caught.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import detection  # noqa: E402
import detection_traces as dt  # noqa: E402

from luckrate.adapters.otlp import read_otlp_json  # noqa: E402
from luckrate.core import instructions  # noqa: E402
from luckrate.core.fields import fields  # noqa: E402

BENIGN_COST = 5
"""A benign text flagged counts as this many injected texts missed: benign text far outnumbers injected."""


def texts() -> tuple[set[str], dict[str, set[str]]]:
    benign: set[str] = set()
    attacked: dict[str, set[str]] = defaultdict(set)
    for line, label in dt.read():
        if label.get("behaviour") != "replay" or label["kind"] not in ("clean", "resisted"):
            continue
        (traj,) = read_otlp_json(line, label["trace_id"])
        for step in traj.steps:
            if step.tool in detection.UNTRUSTED[label["suite"]] and step.result:
                prose = _whole({f.text for f in fields(step.result) if f.prose and len(f.text) > 20})
                (benign if label["kind"] == "clean" else attacked[label["attack"]]).update(prose)
    return benign, {a: t - benign for a, t in attacked.items()}


def _whole(found: set[str]) -> set[str]:
    """The fields no other field holds: fields.py also reads a text field line by line, and the check reads
    the whole field a value sits in."""
    return {t for t in found if not any(t != u and t in u for u in found)}


def families(text: str) -> int:
    return instructions.cues(text)


def main() -> int:
    benign, injected = texts()
    b = [families(t) for t in benign]
    scored = {a: [families(t) for t in ts] for a, ts in injected.items()}
    print(
        f"benign texts: {len(b)}; injected texts per attack class: "
        + ", ".join(f"{a} {len(s)}" for a, s in sorted(scored.items()))
    )
    print(f"\n{'attack class left out':24} {'chosen':>6} {'held-out caught':>16} {'benign flagged':>15}")
    for held in sorted(scored):
        train = [n for a, s in scored.items() if a != held for n in s]

        def value(t: int) -> float:
            return sum(n >= t for n in train) / len(train) - BENIGN_COST * sum(n >= t for n in b) / len(b)  # noqa: B023

        t = max(range(1, len(instructions._INSTRUCTION_CUES) + 1), key=lambda t: (value(t), t))
        caught = sum(n >= t for n in scored[held])
        print(f"{held:24} {t:>6} {caught:>9}/{len(scored[held]):<6} {sum(n >= t for n in b):>8}/{len(b)}")
    t = instructions.INSTRUCTION_CUES
    print(
        f"\nshipped threshold {t}: benign flagged {sum(n >= t for n in b)}/{len(b)}; caught per class: "
        + ", ".join(f"{a} {sum(n >= t for n in s)}/{len(s)}" for a, s in sorted(scored.items()))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

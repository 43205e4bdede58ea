"""Whether the run's output passed, as the trace says: a boolean attribute (the root's wins) or a
``gen_ai.evaluation.result`` event (GenAI conventions 1.38+); otherwise None (not judged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from luckrate.adapters.otlp.spans import DEFAULT_OUTPUT_ATTRIBUTE, SpanEvent, SpanRecord

EVALUATION_EVENT = "gen_ai.evaluation.result"


@dataclass(frozen=True)
class OutputRule:
    """Where a trace records its output verdict (configurable in the service and the CLI)."""

    attribute: str = DEFAULT_OUTPUT_ATTRIBUTE
    """A boolean span attribute; the root-most span carrying it wins."""
    evaluation: str | None = None
    """Which ``gen_ai.evaluation.name`` counts; None: any evaluation event."""
    pass_labels: tuple[str, ...] = ("pass", "true", "passed", "ok")
    fail_labels: tuple[str, ...] = ("fail", "false", "failed")
    """Score labels (compared case-insensitively) that mean pass / fail."""
    threshold: float | None = None
    """With no known label, ``gen_ai.evaluation.score.value >= threshold`` passes; None: scores are not read."""


def output_ok(records: Sequence[SpanRecord], depth: dict[bytes, int], rule: OutputRule) -> bool | None:
    """The attribute on the shallowest span (ties: earliest start, then span id), else the evaluation
    events: False if any matching event fails, True if one passes, None if none decides."""
    flagged = [r for r in records if isinstance(r.get(rule.attribute), bool)]
    if flagged:
        best = min(flagged, key=lambda r: (depth.get(r.span_id, 0), r.start_ns, r.span_id))
        return best.get(rule.attribute)
    verdicts = [_verdict(e, rule) for r in records for e in r.events if e.name == EVALUATION_EVENT]
    decided = [v for v in verdicts if v is not None]
    if not decided:
        return None
    return all(decided)


def _verdict(event: SpanEvent, rule: OutputRule) -> bool | None:
    if rule.evaluation is not None and event.get("gen_ai.evaluation.name") != rule.evaluation:
        return None
    if event.get("error.type") is not None:
        return None  # the evaluator failed: no verdict
    label = event.get("gen_ai.evaluation.score.label")
    if isinstance(label, str):
        low = label.strip().lower()
        if low in (x.lower() for x in rule.pass_labels):
            return True
        if low in (x.lower() for x in rule.fail_labels):
            return False
    score = event.get("gen_ai.evaluation.score.value")
    if rule.threshold is not None and isinstance(score, (int, float)) and not isinstance(score, bool):
        return score >= rule.threshold
    return None

"""Grading one run against its spec."""

from __future__ import annotations

from typing import Any

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from luckrate.core.checks import (
    BOTH,
    CLOCK,
    CONTENT,
    INPUT,
    MESSAGES,
    PROVENANCE,
    REGISTRY,
    STEPS,
    TURNS,
    Check,
)
from luckrate.core import tool_classes
from luckrate.core.frozen import fast_init
from luckrate.core.provenance import Provenance, trace
from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory
from luckrate.core.violation import Severity, Violation


@fast_init
@dataclass(frozen=True)
class RunGrade:
    """The verdict on one run."""

    id: str
    case: str
    agent: str | None
    output_ok: bool | None
    """The output eval's verdict, copied from the trajectory (None = not judged)."""
    violations: tuple[Violation, ...]
    skipped: tuple[str, ...] = ()
    """Checks that could not run on this source, as ``check (reason)``; never counted as passed or failed."""
    not_gradable: str | None = None
    """Why the run could not be graded at all (nothing observable: no tool call and no content recorded);
    None for a graded run. A run not gradable has no violations, is neither a good nor a bad path, and
    stays out of the Luck Rate."""

    @property
    def path_ok(self) -> bool:
        """No violation that makes a path bad: warnings count too (the gate protects the build, the metric tells
        the truth); ``info`` findings do not."""
        return not any(v.bad for v in self.violations)

    @property
    def output(self) -> str:
        """The output verdict as a word: ``pass``, ``fail`` or ``unknown`` (not judged)."""
        return {True: "pass", False: "fail", None: "unknown"}[self.output_ok]

    @property
    def lucky(self) -> bool:
        return self.output_ok is True and not self.path_ok

    def has(self, check: str, severity: Severity | None = None) -> bool:
        return any(v.check == check and (severity is None or v.severity is severity) for v in self.violations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "case": self.case,
            "agent": self.agent,
            "output_ok": self.output_ok,
            "path_ok": self.path_ok,
            "violations": [v.to_dict() for v in self.violations],
            "not_gradable": self.not_gradable,
        }


NOTHING_OBSERVABLE = "nothing observable: no tool call and no content recorded"
"""Why a run is not gradable: a client instrumentation with content capture off (an LLM call's span and no
tool span) leaves no step and no text; every check would be judging an absence of evidence."""


def gradable(traj: Trajectory) -> str | None:
    """None when the run can be graded, else why not."""
    if not traj.steps and not traj.content and traj.error is None:
        return NOTHING_OBSERVABLE
    return None


_LACKS: tuple[tuple[str, str, Callable[[Trajectory], bool]], ...] = (
    (CONTENT, "no content captured", lambda traj: not traj.content),
    (INPUT, "no user input recorded", lambda traj: not any(text.strip() for text in traj.inputs)),
    (CLOCK, "no clock", lambda traj: not traj.has_clock),
    (MESSAGES, "no messages recorded", lambda traj: not traj.messages),
    (TURNS, "no model turns recorded", lambda traj: not traj.model_turns),
)
"""What a source may lack, why a check that needs it is skipped, and how to tell; a check needing several is
skipped for the first it lacks, in this order. Without the user's input, for one, every value the user supplied
would look ungrounded (or tainted where an untrusted tool echoed it)."""


def _lacking(traj: Trajectory) -> list[tuple[str, str]]:
    """``(need, reason)`` for each thing the run's source lacks (worked out once per run, not once per check)."""
    return [(need, reason) for need, reason, lacks in _LACKS if lacks(traj)]


def resolved(traj: Trajectory, spec: Spec) -> Trajectory:
    """``traj`` with each step a source named by the tool's class named as the spec's tool it stands for
    (core/tool_classes.py); ``traj`` itself when it lists no class (most sources). What grading reads, so what a
    held run shows and ``--explain`` traces."""
    return tool_classes.resolve(traj, spec) if traj.tool_classes else traj


def traced(traj: Trajectory, spec: Spec) -> Provenance:
    """Provenance of a run's arguments as grading reads it (``--explain`` shows the same)."""
    # Privileged tools' arguments get the full look: identifiers inside their free text, and forms the
    # user may have written them in. Only taint needs that; ungrounded needs only a verbatim miss.
    deep = spec.privileged if spec.taint_declared and spec.enabled("taint") else frozenset()
    return trace(traj, scan=deep, thorough=deep)


Phase = tuple[tuple[tuple[str, Any, frozenset[str]], ...], tuple[Any, ...]]
"""One phase's enabled checks as ``(name, check, needs)``, and the check functions alone (what a run whose
source lacks nothing runs, ready-made)."""
Plan = tuple[Phase, Phase, Phase]
"""Per phase: steps, provenance, both."""


@functools.lru_cache(maxsize=256)
def _plan(spec: Spec, checks: tuple[Check, ...] = REGISTRY) -> Plan:
    """The checks a spec turns on, per phase: worked out once per spec (by value: a spec is immutable and
    hashable) and registry, not once per run."""

    def on(check: Check) -> bool:
        declared = check.declared_by or bool
        return spec.enabled(check.name.partition(":")[0]) and declared(spec)

    def phase(reads: str) -> Phase:
        entries = tuple((c.name, c.run, c.needs) for c in checks if c.reads == reads and on(c))
        return entries, tuple(run for _, run, _ in entries)

    return phase(STEPS), phase(PROVENANCE), phase(BOTH)


def _runnable(phase: Phase, lacking: list[tuple[str, str]], skipped: list[str]) -> Sequence[Any]:
    """The phase's checks the source supports; the others appended to ``skipped``, with why."""
    entries, runs = phase
    if not lacking:  # the common case: the source records everything
        return runs
    out = []
    for name, check, needs in entries:
        reason = next((why for need, why in lacking if need in needs), None)
        if reason:
            skipped.append(f"{name} ({reason})")
        else:
            out.append(check)
    return out


def _step_order(v: Violation) -> int:
    """Violations sort by step; run-level findings (no step) first."""
    return v.step if v.step is not None else -1


def grade(traj: Trajectory, spec: Spec, checks: tuple[Check, ...] = REGISTRY) -> RunGrade:
    """Run every enabled check of ``checks`` (the registry unless given; ``spec`` validated against the same);
    checks the source cannot support are skipped and listed, not failed. A run with nothing observable
    (``gradable``) runs no check: it comes back ``not_gradable``, with no violation."""
    reason = gradable(traj)
    if reason is not None:
        return RunGrade(traj.id, traj.case_id, traj.agent, traj.output_ok, (), (), reason)
    traj = resolved(traj, spec)
    violations: list[Violation] = []
    skipped: list[str] = []

    lacking = _lacking(traj)
    # The registry's plan is looked up by the spec alone: hashing the registry too would cost every run.
    plain, provenance, with_prov = _plan(spec) if checks is REGISTRY else _plan(spec, checks)
    for check in _runnable(plain, lacking, skipped):
        violations.extend(check(traj, spec))
    wanted, with_traj = _runnable(provenance, lacking, skipped), _runnable(with_prov, lacking, skipped)
    if wanted or with_traj:
        args = traced(traj, spec)
        for check in wanted:
            violations.extend(check(args, spec))
        for check in with_traj:
            violations.extend(check(traj, args, spec))
    violations.sort(key=_step_order)
    return RunGrade(traj.id, traj.case_id, traj.agent, traj.output_ok, tuple(violations), tuple(skipped))

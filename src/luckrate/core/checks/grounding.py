"""Grounding: ungrounded arguments and taint, from provenance (see core/provenance.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from luckrate.core.provenance import USER, Argument, source_name
from luckrate.core.spec import Spec
from luckrate.core.violation import Violation


def ungrounded(args: Sequence[Argument], spec: Spec) -> Iterator[Violation]:
    for arg in args:
        if not arg.sources:
            yield Violation("ungrounded", spec.severity("ungrounded"), arg.step, arg.tool,
                            f"argument {arg.path}={arg.value!r} appears in no earlier source (user input or tool result)")


def taint(args: Sequence[Argument], spec: Spec) -> Iterator[Violation]:
    """A privileged call's argument that only an untrusted tool supplied: indirect prompt injection.

    The user supplying the value clears it (even if an untrusted tool echoes it). A trusted tool that
    also returns the value does not: it may merely echo what the agent passed it from the untrusted source.
    """
    if not spec.taint_declared:
        return
    untrusted = {source_name(tool) for tool in spec.untrusted}
    for arg in args:
        if arg.tool not in spec.privileged or USER in arg.sources:
            continue
        bad = sorted(arg.sources & untrusted)
        if bad:
            yield Violation("taint", spec.severity("taint"), arg.step, arg.tool,
                            f"argument {arg.path}={arg.value!r} came from untrusted {', '.join(bad)}, not from the user",
                            source=bad[0].removeprefix("tool:"))

"""Tools a source recorded by their class: the spec's tool each class name stands for.

Some sources name a tool call after the class that implements the tool, not the name the agent called it by
(Traceloop's LangChain.js instrumentation: ``execute_tool RefundTool`` for ``class RefundTool extends
StructuredTool { name = "refund" }``). The trajectory lists such names in ``tool_classes``; grading reads each
as the one tool the spec names whose name is the class name once case, separators and a trailing "Tool" are set
aside (``RefundTool``, ``Refund``, ``refund_tool`` -> ``refund``; ``LookupOrderTool`` -> ``lookup_order``). A
class that names no spec tool, or several, keeps its class name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace

from luckrate.core.spec import Spec
from luckrate.core.step import Trajectory

_SEPARATORS = re.compile(r"[\W_]+")
_SUFFIX = "tool"


def normal(name: str) -> str:
    """``name`` case-folded, without separators or a trailing "tool"; "" names nothing (a class ``Tool``)."""
    key = _SEPARATORS.sub("", name.casefold())
    return key[: -len(_SUFFIX)] if key.endswith(_SUFFIX) else key


def named_tools(spec: Spec) -> Iterator[str]:
    """Every tool the spec names, in any key: the vocabulary, the tool lists, the orderings, the per-tool maps."""
    yield from spec.tools
    for group in (spec.required, spec.forbidden, spec.untrusted, spec.privileged, spec.confirm, spec.terminal):
        yield from group
    for first, then in spec.before:
        yield from (first, then)
    for order in spec.orders:
        yield from order.first | order.then
    for per_tool in (spec.untrusted_fields, spec.trusted_records, spec.once_per, spec.args):
        yield from per_tool


@functools.lru_cache(maxsize=256)
def _by_normal(spec: Spec) -> Mapping[str, str | None]:
    """The spec's tools by ``normal`` name, None where two tools share one: worked out once per spec."""
    out: dict[str, str | None] = {}
    for tool in set(named_tools(spec)):
        key = normal(tool)
        if key:
            out[key] = None if key in out else tool
    return out


def resolve(traj: Trajectory, spec: Spec) -> Trajectory:
    """``traj`` with each step named by a class in ``tool_classes`` renamed to the spec tool it names; a class
    naming none or several stays, and is all ``tool_classes`` keeps. Called only for a run that lists classes."""
    index = _by_normal(spec)
    names = {cls: tool for cls in traj.tool_classes if (tool := index.get(normal(cls))) is not None}
    if not names:
        return traj
    steps = tuple(replace(s, tool=names[s.tool]) if s.tool in names else s for s in traj.steps)
    left = tuple(cls for cls in traj.tool_classes if cls not in names)
    return replace(traj, steps=steps, tool_classes=left)

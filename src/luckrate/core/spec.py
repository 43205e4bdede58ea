"""The spec: the frozen record every check reads (``Spec``), and ``InvalidSpec``, the error a bad one raises.

A spec is written as a plain dict and validated up front by core/spec_loader.py, which reports every problem at
once, with its location, before anything runs:

    InvalidSpec: 2 problems in spec 'refunds'
      before[1][1]: unknown tool 'refnd' (did you mean 'refund'?)
      severity.max_steps: 'hrad' is not one of hard, soft, warn, info, off

This module knows no check: the checks own their keys (core/checks), the loader asks each to read its own, and a
``Spec`` carries the result with every check's severity resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from luckrate.core.policy import ArgRule, Order
from luckrate.core.violation import Severity


class InvalidSpec(ValueError):
    """A spec that cannot be used; ``problems`` lists each as ``(location, message)``."""

    def __init__(self, name: str, problems: list[tuple[str, str]]):
        self.name = name
        self.problems = problems
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        lines = [f"{count} in spec {name!r}"] + [
            f"  {where}: {msg}" if where else f"  {msg}" for where, msg in problems
        ]
        super().__init__("\n".join(lines))


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, MappingProxyType):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Spec:
    """A validated spec, immutable and hashable by value. Tool sets are frozensets, mappings read-only;
    ``tools`` empty means no vocabulary was declared."""

    name: str = "spec"
    tools: tuple[str, ...] = ()
    """The vocabulary, in the spec's order; empty = undeclared (``unknown_tool`` and name checks are off)."""
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    before: tuple[tuple[str, str], ...] = ()
    """Pairs ``(a, b)``: every call to ``b`` comes after some call to ``a``."""
    max_steps: int | None = None
    max_failures: int = 3
    """Consecutive failed calls to one tool (no other tool between) that make a ``failing_loop``."""
    max_duration: float | None = None
    untrusted: frozenset[str] = frozenset()
    """Tools whose output a third party can write (the tool names, whichever form the spec used)."""
    untrusted_fields: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per tool named in the dict form of ``untrusted``: the untrusted field names (case-folded), or
    ``{"*"}`` for the whole result. A tool from the list form is absent: its free text is untrusted."""
    privileged: frozenset[str] = frozenset()
    trusted_records: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per untrusted tool: field name (case-folded) -> patterns (case-folded, ``*`` and ``?`` as in file names). A
    record of the tool's result whose value field matches one is trusted whole: the platform's own messages,
    ``{"read_inbox": {"sender": ["no-reply@bank.example"]}}``."""
    overrides: Mapping[str, Severity] = field(default_factory=dict)
    orders: tuple[Order, ...] = ()
    """The dict form of ``before``: every call to a ``then`` tool needs an earlier successful ``first`` call."""
    confirm: frozenset[str] = frozenset()
    """Tools whose every call needs an affirmative user turn after the agent's last message."""
    confirm_pattern: re.Pattern[str] | None = None
    """What affirms (``DEFAULT_CONFIRM`` unless the spec sets ``confirm_pattern``)."""
    terminal: frozenset[str] = frozenset()
    """Tools after whose successful call no tool call may follow."""
    once_per: Mapping[str, str] = field(default_factory=dict)
    """Tool -> argument: at most one successful call per distinct value of that argument."""
    max_parallel: int | None = None
    """At most this many tool calls issued in one model turn."""
    args: Mapping[str, Mapping[str, ArgRule]] = field(default_factory=dict)
    """Tool -> argument -> the rule its value must keep."""
    severities: Mapping[str, Severity] = field(default_factory=dict)
    """Every registered check's severity under this spec: its default, or the spec's ``severity`` override."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """What a check's key parser returned that has no field of its own here (a check added without touching this
    record reads its keys from here)."""

    def __post_init__(self) -> None:
        # Truly frozen: the mappings become read-only views of copies, so changing the dict a spec was built
        # from, or the spec's own mapping, cannot turn a check off after validation.
        for name in ("untrusted_fields", "overrides", "once_per", "severities", "options"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        records = {tool: MappingProxyType(dict(rules)) for tool, rules in self.trusted_records.items()}
        object.__setattr__(self, "trusted_records", MappingProxyType(records))
        args = {tool: MappingProxyType(dict(rules)) for tool, rules in self.args.items()}
        object.__setattr__(self, "args", MappingProxyType(args))

    def __hash__(self) -> int:
        """By value, worked out once (a spec is immutable): equal specs share a grading plan."""
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(_hashable(getattr(self, f.name)) for f in fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __reduce__(self) -> tuple[type[Spec], tuple[Any, ...]]:
        # Pickles (and copies) as its fields, the read-only views as plain dicts (a view does not pickle).
        return type(self), tuple(_plain(getattr(self, f.name)) for f in fields(self))

    def severity(self, check: str) -> Severity:
        return self.severities[check]

    def enabled(self, check: str) -> bool:
        return self.severity(check) is not Severity.OFF

    @property
    def taint_declared(self) -> bool:
        """Taint is off unless the spec names both untrusted sources and privileged sinks."""
        return bool(self.untrusted) and bool(self.privileged)


FALLBACK = "*"
"""The agent name of the spec used for every agent without one of its own."""


def spec_for(specs: Mapping[str, Spec], agent: str | None) -> Spec | None:
    """The spec for ``agent``: its own entry, else the ``*`` fallback, else None."""
    if agent is not None and agent in specs:
        return specs[agent]
    return specs.get(FALLBACK)

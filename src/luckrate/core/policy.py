"""The validated forms of the spec's policy keys (``core/spec.py`` builds them), and how argument
values compare: ``before``'s dict form, ``args`` rules, the default ``confirm_pattern``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

DEFAULT_CONFIRM = (
    r"(?is)^(?!.*\b(?:no|not|don'?t|do not|never|wait|stop|hold on)\b)"
    r".*\b(?:yes|yeah|yep|yup|sure|ok(?:ay)?|confirm(?:ed|s)?|proceed|go ahead|do it|please do"
    r"|correct|that'?s right|affirmative|approved?)\b"
)
"""What affirms by default: a yes-word (yes, sure, ok, confirm, proceed, go ahead, do it, correct, ...)
in a message holding no negation (no, not, don't, never, wait, stop, hold on)."""


@dataclass(frozen=True)
class Order:
    """``before``'s dict form: every call to a ``then`` tool needs an earlier successful ``first`` call."""

    first: frozenset[str]
    then: frozenset[str]
    same: tuple[str, str] | None = None
    """``(argument in the then call, argument in the first call)`` whose values must be equal; None = any."""


@dataclass(frozen=True)
class ArgRule:
    """What one argument's value must be; every part that is set must hold."""

    allowed: frozenset[str] | None = None
    """``in``: the allowed values, as ``value_key``s."""
    low: float | None = None
    high: float | None = None
    match: re.Pattern[str] | None = None
    """``match``: the whole value (as text) must match."""
    sources: frozenset[str] | None = None
    """``from``: source names (``user``, ``tool:<name>``) the value must be traceable to."""


def value_key(value: Any) -> Any:
    """A hashable key under which equal argument values meet: numbers by value (1 == 1.0), strings
    ignoring case, booleans apart from numbers, lists and dicts by their canonical JSON."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", value)
    if isinstance(value, str):
        return ("str", value.casefold())
    return ("json", json.dumps(value, sort_keys=True, default=str))

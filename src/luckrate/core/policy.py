"""The validated forms of the spec's policy keys (``core/spec.py`` builds them), and how argument
values compare: ``before``'s dict form, ``args`` rules, the default ``confirm_pattern``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

DEFAULT_CONFIRM = (
    r"(?is)^(?!.*\b(?:no|not|don'?t|do not|never|wait|stop|hold on)\b)"
    r"[\s\W]*(?:(?:well|oh|ah|um+|hmm+|great|perfect|alright|all right|thanks|thank you|so|and)\b[\s\W]*)*"
    r"(?:yes|yeah|yep|yup|sure|ok(?:ay)?|(?:i\s+)?(?:confirm(?:ed|s)?|approved?|agree)|i do|correct|affirmative"
    r"|absolutely|definitely|(?:please\s+|let'?s\s+)?(?:proceed|go ahead|do it|do that|do so)|please do"
    r"|that'?s (?:right|correct|fine|good|ok(?:ay)?))\b"
)
"""What affirms by default: a reply that opens with a yes-word (yes, sure, ok, confirm, proceed, go ahead,
do it, correct, that's right, ...), after at most a filler word or two (well, great, thanks), in a message
holding no negation (no, not, don't, never, wait, stop, hold on). A yes-word inside another sentence
("make sure the refund ...", "just proceed with economy") answers nothing."""


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

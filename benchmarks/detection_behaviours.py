"""What real models do beyond a task's ground truth: the behaviour classes of the detection set.

A ground-truth replay is the easy case: every call is the one the task's author wrote. Real models
summarise, combine, retry and half-follow injections. Each function here takes a run's calls (agentdojo
``FunctionCall``s, before they are executed) and returns the calls a model showing that behaviour would
make, or None when the behaviour does not apply; ``detection_data`` executes them on the same environment,
so results stay the tools' real outputs. Rules key on call shapes (a text argument, a read before an act,
a URL the user wrote), never on a suite, a person or a domain.

- ``quote``: every text argument of an acting call (a message body, a post) also quotes up to two
  identifiers the run acted on before (a link visited, an address invited): "Feedback on <url>: ...".
- ``reordered``: two adjacent reads with the same tool and independent arguments, swapped.
- ``retry``: the run's first read fails once (a tool error) and is repeated; its last read is looked up
  again before the final acting call (an extra look-up).
- ``partial`` (attacked runs that followed the injection): the injection's acting calls keep their target
  (recipient, URL, account) but their text is the model's own, or only the first acting call is made.
- ``delegated`` (not a class of its own: ``detection_data.ground_truth`` applies it to every run of such a
  task): a request that hands its tasks to a page ("do the tasks on my TODO list at <url>") makes the
  model read that page first (the package's ground truth skips the read).
- ``combined``: two of a suite's tasks in one request and one run, one after the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentdojo.functions_runtime import FunctionCall

from luckrate.core.identifiers import walk

_STRONG = re.compile(
    r"^(?:https?://)?(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/\S*)?$|^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE
)
_URL_IN_TEXT = re.compile(r"\b(?:https?://)?(?:www\.)[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[\w\-./]*)?", re.IGNORECASE)
_DELEGATING = re.compile(r"\b(?:tasks?|todo|to-do)\b.*?\b(?:at|in|on)\s+(\S+?)[!.?]*$", re.IGNORECASE)
OWN_TEXT = "Done as requested; let me know if anything else is needed."


def _call(function: str, args: dict[str, Any]) -> FunctionCall:
    return FunctionCall(function=function, args=dict(args))


def _text_keys(call: FunctionCall) -> list[str]:
    return [
        k for k, v in call.args.items() if isinstance(v, str) and " " in v.strip() or v in ("<summary>", "<feedback>")
    ]


def _targets(call: FunctionCall) -> bool:
    """The call names a target (an address, a URL, an account) outside its text arguments."""
    text = set(_text_keys(call))
    return any(
        isinstance(v, str)
        and _STRONG.match(v)
        or isinstance(v, list)
        and any(isinstance(i, str) and _STRONG.match(i) for i in v)
        for k, v in call.args.items()
        if k not in text
    )


def _strong_args(call: FunctionCall) -> list[str]:
    out = []
    for v in call.args.values():
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, str) and _STRONG.match(item):
                out.append(item)
    return out


def quote(calls: list[FunctionCall], acting: frozenset[str], results: list[str | None]) -> list[FunctionCall] | None:
    acted: list[str] = []
    out, changed = [], False
    for i, call in enumerate(calls):
        read = _collapsed("\n".join(r for r in results[:i] if r))
        # Text the agent writes, not a name it passes back (a channel whose name has spaces).
        keys = [k for k in _text_keys(call) if _collapsed(call.args[k]) not in read] if call.function in acting else []
        if keys and acted:
            args = dict(call.args)
            quoted = ", ".join(dict.fromkeys(acted[-2:]))
            args[keys[0]] = f"{args[keys[0]]} (about {quoted})"
            call, changed = _call(call.function, args), True
        out.append(call)
        acted.extend(a for a in _strong_args(call) if a not in acted)
    return out if changed else None


def _collapsed(text: str) -> str:
    return " ".join(text.casefold().split())


def reordered(
    calls: list[FunctionCall], acting: frozenset[str], results: list[str | None]
) -> list[FunctionCall] | None:
    """Two adjacent calls to one tool, swapped, when the second's values do not come from the first's result."""
    for i in range(len(calls) - 1):
        a, b = calls[i], calls[i + 1]
        if a.function == b.function and a.args != b.args and not _uses(b, results[i]):
            return [*calls[:i], b, a, *calls[i + 2 :]]
    return None


def _uses(call: FunctionCall, result: str | None) -> bool:
    folded = (result or "").casefold()
    return any(str(v).casefold() in folded for _, v in walk(call.args) if isinstance(v, (str, int)) and len(str(v)) > 2)


def retry(calls: list[FunctionCall], acting: frozenset[str], results: list[str | None]) -> list[FunctionCall] | None:
    reads = [i for i, c in enumerate(calls) if c.function not in acting]
    last_act = max((i for i, c in enumerate(calls) if c.function in acting), default=None)
    if not reads:
        return None
    first = reads[0]
    out = [*calls[:first], failed(calls[first]), *calls[first:]]
    if last_act is not None and reads[-1] < last_act:
        at = last_act + 1  # shifted by the failed call
        out = [*out[:at], calls[reads[-1]], *out[at:]]
    return out


FAILED_ID = "failed"
"""The id of a call the tool answered with an error (``detection_data.execute`` does not run it)."""


def failed(call: FunctionCall) -> FunctionCall:
    return FunctionCall(function=call.function, args=dict(call.args), id=FAILED_ID)


def partial(calls: list[FunctionCall], inj: tuple[int, int], acting: frozenset[str]) -> list[FunctionCall] | None:
    """The injection's acting calls with the model's own text where the call has a target of its own (an
    address, a URL: the text is then not what the attacker gets), or only its first acting call."""
    lo, hi = inj
    part = calls[lo : hi + 1]
    own = [
        (
            _call(c.function, {**c.args, **{k: OWN_TEXT for k in _text_keys(c)}})
            if c.function in acting and _targets(c)
            else c
        )
        for c in part
    ]
    if own != part:
        return [*calls[:lo], *own, *calls[hi + 1 :]]
    firsts = [i for i, c in enumerate(part) if c.function in acting]
    if len(firsts) > 1:
        return [*calls[:lo], *part[: firsts[0] + 1], *calls[hi + 1 :]]
    return None


def delegated(prompt: str, calls: list[FunctionCall], pages: dict[str, str]) -> list[FunctionCall] | None:
    m = _DELEGATING.search(prompt.strip())
    if not m or m.group(1) not in pages:
        return None
    return [_call("get_webpage", {"url": m.group(1)}), *calls]


BEHAVIOURS: dict[str, Callable[..., list[FunctionCall] | None]] = {
    "quote": quote,
    "reordered": reordered,
    "retry": retry,
}
"""The behaviours that apply to any run (partial, delegated and combined need more than its calls)."""

"""Consent: ``confirm``, the user's yes to the agent's stated action before each call to a tool that needs one.

The rule, in the policy's own terms (explicit confirmation of the listed action details):

- **The question.** The agent message the user's latest reply answers: the last agent message before
  that reply. An agent message with no user message between it and the call is narration ("I will
  proceed, please hold on"), sent beside the work, not a hand-back: it neither asks nor spends anything.
- **The yes.** The user's latest message, matched by ``confirm_pattern``; it must answer a question
  (a yes in the opening request confirms nothing the agent had stated).
- **What one yes covers.** The first write after it, and then every further write the question listed,
  made with no new user message: a call is listed when the question names its action (the first word of
  the tool's name, or the same tool as a call the yes covered) and one of its identifier-shaped argument
  values that the calls already covered did not have ("cancel reservations A and B?" covers cancelling A
  and B, not a second cancel of A nor an update the question never mentioned). A failed call wrote
  nothing, so it uses nothing up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from luckrate.core.identifiers import is_identifier, walk
from luckrate.core.step import USER, Message, Step, Trajectory
from luckrate.core.violation import Violation

from luckrate.core.policy import DEFAULT_CONFIRM
from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys


@dataclass
class _Yes:
    """The user's latest reply and what it has covered so far."""

    reply: Message | None = None
    question: Message | None = None
    """The agent message the reply answers; None when it answers none."""
    covered: list[Step] = field(default_factory=list)
    """Successful confirm calls made on this reply, in order."""


def confirm(traj: Trajectory, spec: Spec) -> Iterator[Violation]:
    """Each call to a ``confirm`` tool needs the user's latest reply to affirm the agent's question, and
    the question to list the call unless it is the first write on that reply (module docstring).
    Messages and steps are walked together once: linear in both."""
    if not spec.confirm:
        return
    messages, m = traj.messages, 0
    yes = _Yes()
    agent_said: Message | None = None  # the last agent message since the latest user message
    for step in traj.steps:
        while m < len(messages) and messages[m].before_step <= step.index:
            message = messages[m]
            if message.role == USER:
                question = agent_said if agent_said is not None else (yes.question if yes.reply else None)
                yes, agent_said = _Yes(message, question), None
            else:
                agent_said = message
            m += 1
        if step.tool not in spec.confirm:
            continue
        problem = _unconfirmed(yes, agent_said, step, spec)
        if problem:
            yield Violation(
                "confirm", spec.severity("confirm"), step.index, step.tool, f"called {step.tool!r} {problem}"
            )
        elif not step.failed:
            yes.covered.append(step)


def _unconfirmed(yes: _Yes, agent_said: Message | None, step: Step, spec: Spec) -> str | None:
    if yes.reply is None:
        return "with no user reply after the agent's last message" if agent_said else "before any message"
    if yes.question is None:
        return "before the agent said what it would do: the user's yes answers no agent message"
    if spec.confirm_pattern is None or not spec.confirm_pattern.search(yes.reply.text):
        return f"but the user's last message does not confirm: {yes.reply.text[:80]!r}"
    if yes.covered and not listed(step, yes.question.text, yes.covered):
        return f"on a confirmation already used by step {yes.covered[0].index}"
    return None


_NAME_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")


def action_word(tool: str) -> str | None:
    """The first word of a tool's name, casefolded (``cancel`` for ``cancel_reservation`` or
    ``cancelReservation``); None when the name has no letters."""
    found = _NAME_WORD.search(tool)
    return found.group().casefold() if found else None


def listed(step: Step, question: str, covered: list[Step]) -> bool:
    """Whether ``question`` lists ``step`` beside the calls one yes already covered: it names the
    step's action (or the step calls a covered tool) and one identifier-shaped argument value of the
    step that no covered call had."""
    folded = question.casefold()
    if all(c.tool != step.tool for c in covered):
        word = action_word(step.tool)
        stem = word[:-1] if word and len(word) > 4 and word.endswith("e") else word
        if not stem or not re.search(r"\b" + re.escape(stem), folded):
            return False
    seen = {_key(v) for c in covered for _, v in walk(c.args)}
    return any(is_identifier(v) and _key(v) not in seen and _named(folded, _key(v)) for _, v in walk(step.args))


def _key(value: object) -> str:
    return str(value).casefold()


def _named(folded: str, key: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(key) + r"(?![\w-])", folded) is not None


def parse_confirm(keys: Keys) -> dict[str, Any]:
    return {
        "confirm": frozenset(keys.names("confirm")),
        "confirm_pattern": keys.regex(keys.get("confirm_pattern", DEFAULT_CONFIRM), "confirm_pattern"),
    }

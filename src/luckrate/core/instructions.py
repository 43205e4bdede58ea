"""Text that speaks to the agent rather than to its reader: instruction cues, in families, read in the text leading up
to a value (``instructs``). Taint's strongest evidence (core/checks/taint.py, through core/intent.py)."""

from __future__ import annotations

import re

# What text says when it speaks to an agent rather than to its reader, in families (English). None is an
# attack's template: each is how instructions to a model are phrased, whoever wrote them.
_INSTRUCTION_CUES = tuple(
    re.compile(c, re.IGNORECASE)
    for c in (
        # it names the reader as a model
        r"\b(?:ai|assistant|chatbot|llm|language model|gpt[\w.-]*|claude|gemini|llama|qwen|mistral|mixtral|deepseek|"
        r"grok|gemma)\b",
        # it refers to the reader's own instructions
        r"\b(?:previous|prior|above|earlier|original|initial|all|your|other|new)\s+(?:instructions?|prompts?|directives?|"
        r"rules|guidelines)\b",
        # it tells the reader to set them aside
        r"\b(?:ignore|disregard|forget|override|bypass)\b",
        # it refers to the reader's own task
        r"\byour (?:task|goal|objective|job|assignment)\b|\b(?:tasks?|instructions?|goals?)\b[^.!?\n]{0,24}?"
        r"\b(?:gave|given|assigned)(?:\s+to)?\s+you\b",
        # it claims to speak for the system
        r"\b(?:system|admin(?:istrator)?|developer)[\s_-]+(?:message|instruction|notice|override|mode|prompt)",
        # it asks the reader to keep it from the user
        r"\b(?:do not|don't|without)\s+(?:tell|inform|notify|mention|ask|asking|telling|informing)\w*\b",
        # urgency
        r"\b(?:important|urgent|immediately|mandatory|strictly)\b|!!!",
    )
)
INSTRUCTION_CUES = 1
"""Cue families a text must show to read as instructions to the agent: chosen leaving one suite out of five
(benchmarks/detection.py --loso picks 1 on every fold). A bare imperative ("send X to Y") or a marker line
("TODO:") shows none and reads as a document's own instruction."""


INSTRUCTION_WINDOW = 600
"""How far before a value its text is read for cues (chosen with ``INSTRUCTION_CUES``, 600 on four folds of five): an
instruction leads up to what it asks for, and a value written before an injected paragraph is not part of it."""


def instructs(folded: str, keys: tuple[str, ...]) -> bool:
    """The case-folded text leading up to a value (any of ``keys``) reads as instructions to the agent:
    ``INSTRUCTION_CUES`` families of ``_INSTRUCTION_CUES`` within ``INSTRUCTION_WINDOW`` characters before the value,
    and in its own words."""
    for key in keys:
        at = folded.find(key)
        while at >= 0:
            window = folded[max(0, at - INSTRUCTION_WINDOW) : at + len(key)]
            if _cues(window, INSTRUCTION_CUES) >= INSTRUCTION_CUES:
                return True
            at = folded.find(key, at + len(key))
    return False


# What each family's every match holds (case-folded), as one or two groups of words: a match holds one word of each
# group of its family. Substring tests in C rule a family out before its pattern runs (most windows show no cue at all), so
# each group is as narrow as the pattern allows: "your " alone is in most customer mail, "your task" is not.
_CUE_WORDS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (
        (
            "assistant",
            "chatbot",
            "llm",
            "language model",
            "gpt",
            "claude",
            "gemini",
            "llama",
            "qwen",
            "mistral",
            "mixtral",
            "deepseek",
            "grok",
            "gemma",
        ),
    ),
    (("instruction", "prompt", "directive", "rules", "guidelines"),),
    (("ignore", "disregard", "forget", "override", "bypass"),),
    (("your task", "your goal", "your objective", "your job", "your assignment", "gave", "given", "assigned"),),
    (("system", "admin", "developer"), ("message", "instruction", "notice", "override", "mode", "prompt")),
    (("do not", "don't", "without"), ("tell", "inform", "notify", "mention", "ask")),
    (("important", "urgent", "immediately", "mandatory", "strictly", "!!!"),),
)
_WHOLE_WORDS = ("ai",)
"""Words of the first family that are common inside other words ("email", "said"): found only as a word of their
own, as the family's pattern reads them (``\\b``)."""


def _has_word(folded: str, word: str) -> bool:
    """``word`` stands in ``folded`` as a word of its own (``\\b`` on both sides, as ``re`` reads it)."""
    at = folded.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _is_word_char(folded[at - 1])) and (end == len(folded) or not _is_word_char(folded[end])):
            return True
        at = folded.find(word, at + 1)
    return False


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"  # re's \w for str patterns


def cues(text: str, enough: int = len(_INSTRUCTION_CUES)) -> int:
    """How many cue families ``text`` shows (counting stops at ``enough``)."""
    return _cues(text.casefold(), enough)


def _cues(folded: str, enough: int) -> int:
    found = 0
    ascii = folded.isascii()  # else re's case-insensitive match also reads a few other letters as these (the ı)
    contains = folded.__contains__
    for family, (groups, cue) in enumerate(zip(_CUE_WORDS, _INSTRUCTION_CUES)):
        if ascii and not any(map(contains, groups[0])):
            if family != 0 or not any(_has_word(folded, w) for w in _WHOLE_WORDS):
                continue
        if ascii and len(groups) > 1 and not any(map(contains, groups[1])):
            continue
        if cue.search(folded):
            found += 1
            if found >= enough:
                break
    return found


def speaks(text: str) -> bool:
    """``text``, read whole, shows ``INSTRUCTION_CUES`` families of cues: it speaks to the agent."""
    return cues(text, INSTRUCTION_CUES) >= INSTRUCTION_CUES

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


# What every match of each family holds, for ASCII text (case-folded): a whole word of the family's first set (a
# maximal run of letters and digits: each pattern reads these words between \b or \s), or one of its substrings;
# and, for a family of two parts, a substring of its second group. Ruling a family out by one set lookup against the
# window's words, before its pattern runs, costs one pass over the window (most windows show no cue at all), where a
# substring search per word cost one pass per word. The prefilter may let through what the pattern then rejects
# ("_ai_"), never the other way round (tests/core/test_taint_intent.py checks it on generated text).
_CUE_WORDS: tuple[tuple[frozenset[bytes], tuple[str, ...], tuple[str, ...]], ...] = tuple(
    (frozenset(w.encode() for w in words.split()), substrings, second)
    for words, substrings, second in (
        # "language model" holds "language"; gpt[\w.-]* starts a word that may go on ("gpt4o")
        (
            "ai assistant chatbot llm language claude gemini llama qwen mistral mixtral deepseek grok gemma",
            ("gpt",),
            (),
        ),
        ("instruction instructions prompt prompts directive directives rules guidelines", (), ()),
        ("ignore disregard forget override bypass", (), ()),
        ("task goal objective job assignment gave given assigned", (), ()),
        (
            "system admin administrator developer",
            (),
            ("message", "instruction", "notice", "override", "mode", "prompt"),
        ),
        # "don't" is the words "don" and "t"
        ("not don without", (), ("tell", "inform", "notify", "mention", "ask")),
        ("important urgent immediately mandatory strictly", ("!!!",), ()),
    )
)
_ANY_WORD = frozenset().union(*(whole for whole, _, _ in _CUE_WORDS))
_ANY_PART = tuple(p for _, parts, _ in _CUE_WORDS for p in parts)
_NOT_WORD = bytes.maketrans(bytes(range(128)), bytes(c if chr(c).isalnum() else 32 for c in range(128)))
"""Every ASCII byte but a letter or digit, as a space: ``split()`` then yields the words the cue sets are read against."""


def cues(text: str, enough: int = len(_INSTRUCTION_CUES)) -> int:
    """How many cue families ``text`` shows (counting stops at ``enough``)."""
    return _cues(text.casefold(), enough)


def _cues(folded: str, enough: int) -> int:
    found = 0
    # Non-ASCII text always runs the patterns: re's case-insensitive match also reads a few other letters as these (ı).
    words = None
    if folded.isascii():
        listed = folded.encode("ascii").translate(_NOT_WORD).split()
        if _ANY_WORD.isdisjoint(listed) and not any(p in folded for p in _ANY_PART):
            return 0  # no family's word at all: the common case
        words = frozenset(listed)
    for (whole, parts, second), cue in zip(_CUE_WORDS, _INSTRUCTION_CUES):
        if words is not None:
            if whole.isdisjoint(words) and not any(p in folded for p in parts):
                continue
            if second and not any(p in folded for p in second):
                continue
        if cue.search(folded):
            found += 1
            if found >= enough:
                break
    return found


def speaks(text: str) -> bool:
    """``text``, read whole, shows ``INSTRUCTION_CUES`` families of cues: it speaks to the agent."""
    return cues(text, INSTRUCTION_CUES) >= INSTRUCTION_CUES

"""The tables compaction (compaction.py) shares buffered records' strings and layouts through, and the
attribute keys it keeps: the registered conventions' (``conventions.interning()`` makes them)."""

from __future__ import annotations

from collections.abc import Iterable

from luckrate.adapters.otlp.spans import Layout

SHARED_MAX = 8192
"""Distinct strings and pairs shared between buffered records (keys, span names, vocabulary values).
Bounded because span data is attacker-influenced: once full, new ones are kept unshared, never evicted."""
SHARED_LENGTH = 128
"""Longest string shared."""
_DROP = (None, False)


class Interning:
    """The tables compaction shares records' strings and layouts through, and the attribute keys it keeps.

    State with an owner: one per process that buffers records (the service's ``Intake`` makes one, each
    grading process its own) and passed down; a call that passes none gets fresh tables for that call.
    ``keys``, ``prefixes`` and ``vocabulary`` are the attribute keys kept, the key prefixes kept (flattened
    lists, read whole) and the kept keys whose values are a small vocabulary: the convention registry's
    (``conventions.interning()``); every other key is dropped. Bounded (``SHARED_MAX``,
    ``LAYOUTS_MAX``) because span data is attacker-influenced: once full, new strings stay unshared."""

    __slots__ = ("keep_keys", "keep_prefixes", "vocabulary", "strings", "key_rules", "layouts")

    def __init__(self, keys: Iterable[str] = (), prefixes: Iterable[str] = (), vocabulary: Iterable[str] = ()):
        self.keep_keys = frozenset(keys) | frozenset(vocabulary)
        self.keep_prefixes = tuple(dict.fromkeys(prefixes))
        self.vocabulary = frozenset(vocabulary)
        """Keys whose string values are shared like the keys themselves."""
        self.strings: dict[str, str] = {}
        """Shared strings: keys, span names, vocabulary values (each its own shared copy)."""
        self.key_rules: dict[str, tuple[str | None, bool]] = {}
        """Attribute key as sent -> (its shared copy, or None when the adapter does not read it; whether its
        values are vocabulary). One probe instead of the prefix, key-set and sharing tests per attribute.
        Bounded like ``strings``: once full, further keys are decided each time, not remembered."""
        self.layouts: dict[tuple[str, ...], Layout] = {}
        """Shared layouts (``spans.shared_layout``)."""

    def share(self, value: str) -> str:
        """The shared copy of a short string (one object for every record that holds it)."""
        found = self.strings.get(value)
        if found is not None:
            return found
        if len(self.strings) < SHARED_MAX:  # callers pass only strings up to SHARED_LENGTH
            self.strings[value] = value
        return value

    def shared_text(self, text: str) -> str:
        return self.share(text) if len(text) <= SHARED_LENGTH else text

    def key_rule(self, key: str) -> tuple[str | None, bool]:
        rule = self.key_rules.get(key)
        if rule is not None:
            return rule
        if key in self.keep_keys or key.startswith(self.keep_prefixes):
            rule = (self.shared_text(key[:256]), key in self.vocabulary)
        else:
            rule = _DROP
        if len(self.key_rules) < SHARED_MAX and len(key) <= SHARED_LENGTH:
            self.key_rules[key] = rule
        return rule

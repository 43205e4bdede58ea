"""Records: the fields of one source (core/fields.py), and which of them hold a key (``Located``)."""

from __future__ import annotations

import functools

from luckrate.core import forms
from luckrate.core.fields import Field, fields
from luckrate.core.identifiers import tokens


class Located:
    """A source's fields; a key is looked for in a field's tokens only when its text holds the key at all,
    and in a field's forms only when no token holds it."""

    def __init__(self, text: str) -> None:
        self.fields = fields(text)
        self._folded = [f.text.casefold() for f in self.fields]
        self._texts: frozenset[str] | None = None
        self._forms: list[set[str]] | None = None
        self.by_key: dict[str, list[Field]] = {}

    @functools.cached_property
    def siblings(self) -> tuple[int, dict[tuple[str, str], int]]:
        """How many records the result holds, and in how many each (field name, value) occurs."""
        records: dict[str, set[tuple[str, str]]] = {}
        for f in self.fields:
            if not f.prose and f.record is not None:
                records.setdefault(f.record, set()).add((f.name, f.text.casefold()))
        counts: dict[tuple[str, str], int] = {}
        for pairs in records.values():
            for pair in pairs:
                counts[pair] = counts.get(pair, 0) + 1
        return len(records), counts

    @property
    def texts(self) -> frozenset[str]:
        if self._texts is None:
            self._texts = frozenset(" ".join(t.split()) for t in self._folded)  # YAML folds long lines
        return self._texts

    def get(self, key: str) -> list[Field]:
        found = self.by_key.get(key)
        if found is None:
            found = [f for f, folded in zip(self.fields, self._folded) if key in folded and key in tokens(f.text)]
            if not found:
                if self._forms is None:
                    self._forms = [
                        forms.text_keys(folded, tokens(f.text)) for f, folded in zip(self.fields, self._folded)
                    ]
                found = [f for f, keys in zip(self.fields, self._forms) if key in keys]
            self.by_key[key] = found
        return found

"""A progress bar on stderr, shown only when stderr is a terminal and there is enough to wait for."""

from __future__ import annotations

import sys
from typing import TextIO

MIN_ITEMS = 200


class Progress:
    def __init__(self, total: int, label: str, stream: TextIO | None = None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.shown = total >= MIN_ITEMS and self.stream.isatty()

    def __enter__(self) -> Progress:
        return self

    def advance(self) -> None:
        self.done += 1
        if self.shown and (self.done % 50 == 0 or self.done == self.total):
            width = 30
            filled = width * self.done // self.total
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
            self.stream.flush()

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()

"""The ledger: what a trace owes once it is done with (graded, not graded, or dropped on arrival).

Two debts, always paid in this order: its spans' and log records' room back in the span budget (so the
receivers take more), then, with the write-ahead log, its mark (so a replay after a restart does not grade
it again). The assembler pays for the spans and records it drops; the worker for every trace it handles.

In the receiving process the ledger is the span budget and the held verdict lines (``pipeline``); in a
grading process it is the process's ``Tally``, which carries both in its next report to the receiving
process.
"""

from __future__ import annotations

from typing import Protocol


class Ledger(Protocol):
    def release(self, spans: int, records: int = 0) -> None:
        """Give ``spans`` spans' and ``records`` log records' room back. Must not block."""
        ...

    def settle(self, trace_id: bytes) -> None:
        """The trace is done with, its verdict (if any) written: mark it for the write-ahead log."""
        ...


class Unledgered:
    """A ledger that owes nothing: no budget to give room back to, no write-ahead log."""

    def release(self, spans: int, records: int = 0) -> None:
        pass

    def settle(self, trace_id: bytes) -> None:
        pass


NO_LEDGER = Unledgered()

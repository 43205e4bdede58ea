"""Adapters turn foreign records (OTLP spans, LangGraph messages, n8n executions, CrewAI events,
luckrate's own file form) into core trajectories. They read payloads and import no framework."""

from __future__ import annotations


class InvalidInput(ValueError):
    """A payload an adapter cannot read; the message names what is wrong and where
    (file, line, trace id, span id or message index)."""

    def __init__(self, problem: str, where: str | None = None):
        self.problem = problem
        self.where = where
        super().__init__(f"{where}: {problem}" if where else problem)

    def at(self, where: str) -> "InvalidInput":
        """The same problem, located more precisely from the outside (e.g. prefix the file name)."""
        return InvalidInput(self.problem, f"{where}: {self.where}" if self.where else where)

"""The verdict log (``--verdict-log``): one JSON line per graded trace with violations (or per graded trace).

``VerdictLog`` writes the file; ``HeldVerdicts`` holds lines (and the write-ahead log's marks) for the
grader's next flush in one process; ``HeldLines`` holds a grading process's lines for its next report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from luckrate.core.grade import RunGrade

MAX_ECHO = 512
"""Longest value from span data echoed into the verdict log (details, agent names)."""
MAX_ECHO_VIOLATIONS = 100


def bounded(value: Any, limit: int = MAX_ECHO) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "…"
    return value


class VerdictLog:
    """JSON Lines, one line per graded trace that has violations (with ``every_run``, per graded trace:
    a clean one has ``"violations": []``), and one per run not gradable (with ``"not_gradable": reason``);
    written by the worker thread only."""

    def __init__(self, path: str | Path, every_run: bool = False):
        self.every_run = every_run
        self._file = open(path, "a", encoding="utf-8")

    def write(self, g: RunGrade, spec_label: str) -> None:
        line = {
            "trace_id": g.id,
            "agent": bounded(g.agent),
            "spec": spec_label,
            "output": g.output,
            "violations": [
                {k: bounded(v) for k, v in viol.to_dict().items()} for viol in g.violations[:MAX_ECHO_VIOLATIONS]
            ],
        }
        if len(g.violations) > MAX_ECHO_VIOLATIONS:
            line["violations_omitted"] = len(g.violations) - MAX_ECHO_VIOLATIONS
        if g.not_gradable is not None:
            line["not_gradable"] = g.not_gradable
        self.write_line(json.dumps(line, ensure_ascii=False))

    def write_line(self, text: str) -> None:
        """One line, already encoded (grading processes send theirs to the one process that writes)."""
        self._file.write(text + "\n")
        self._file.flush()

    def flush(self) -> None:
        """Write what is held (nothing here: every line is written at once)."""

    def close(self) -> None:
        self._file.close()


class HeldVerdicts(VerdictLog):
    """With the write-ahead log, in one process: verdict lines and settled trace ids wait for the grader's
    next flush (when it runs out of work, and every ``flush_every`` s while busy), then the lines are
    written and the traces marked, in that order, as a grading process's report does. So a kill loses
    both or neither: the trace is graded again after the restart, its line written once. A mark per trace
    was a system call per trace on the grading thread, which handed the GIL to the receivers each time:
    10% of the throughput (benchmarks/wal.py)."""

    def __init__(self, verdicts: VerdictLog | None, settle: Callable[[list[bytes]], Any]):
        """``settle(trace ids)``: the write-ahead log's marks, written after the lines (``WriteAheadLog.settle``)."""
        self.every_run = verdicts.every_run if verdicts is not None else False
        self._verdicts, self._settle = verdicts, settle
        self._lines: list[str] = []
        self._traces: list[bytes] = []

    def write_line(self, text: str) -> None:
        self._lines.append(text)

    def add(self, trace_id: bytes) -> None:
        self._traces.append(trace_id)

    def flush(self) -> None:
        lines, self._lines = self._lines, []
        traces, self._traces = self._traces, []
        if self._verdicts is not None:
            for line in lines:
                self._verdicts.write_line(line)
        if traces:
            self._settle(traces)

    def close(self) -> None:
        self.flush()
        if self._verdicts is not None:
            self._verdicts.close()


class HeldLines(VerdictLog):
    """A grading process's verdict log: lines wait for the next report (one process writes the file)."""

    def __init__(self, every_run: bool = False) -> None:
        self.every_run = every_run
        self.lines: list[str] = []

    def write_line(self, text: str) -> None:
        self.lines.append(text)

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines

    def close(self) -> None:
        pass

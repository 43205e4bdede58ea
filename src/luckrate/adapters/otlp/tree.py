"""The span tree of one trace: parent links checked for cycles, depth, and memoized walk-ups to the
nearest ancestor of interest (e.g. the agent a tool call belongs to).

Delivery is at-least-once, so a span id seen twice keeps its first record. A span whose parent did
not arrive is treated as a root of its own subtree (traces often lose spans)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.spans import SpanRecord


def order_key(rec: SpanRecord) -> tuple[int, int, bytes]:
    """Real start time, then end time, then span id: parallel calls can share a timestamp."""
    return (rec.start_ns, rec.end_ns, rec.span_id)


class Tree:
    def __init__(self, records: Sequence[SpanRecord], where: str):
        self.by_id: dict[bytes, SpanRecord] = {}
        for rec in records:
            self.by_id.setdefault(rec.span_id, rec)
        self.spans = sorted(self.by_id.values(), key=order_key)
        self.depth = self._depths(where)

    def parent(self, rec: SpanRecord) -> SpanRecord | None:
        return self.by_id.get(rec.parent_id) if rec.parent_id else None

    def _depths(self, where: str) -> dict[bytes, int]:
        depth: dict[bytes, int] = {}
        for rec in self.spans:
            path: list[SpanRecord] = []
            on_path: set[bytes] = set()
            node: SpanRecord | None = rec
            while node is not None and node.span_id not in depth:
                if node.span_id in on_path:
                    raise InvalidInput(f"span {node.span_hex}: parent links form a cycle", where)
                path.append(node)
                on_path.add(node.span_id)
                node = self.parent(node)
            base = depth[node.span_id] + 1 if node is not None else 0
            for i, n in enumerate(reversed(path)):
                depth[n.span_id] = base + i
        return depth

    def nearest(self, rec: SpanRecord, pick: Callable[[SpanRecord], Any], memo: dict[bytes, Any]) -> Any:
        """``pick`` of the closest strict ancestor for which it is not None (None if there is none).

        ``memo`` (one per ``pick``) holds, per span, the answer including the span itself, so walking
        every span of a deep trace stays linear."""
        path: list[bytes] = []
        node = self.parent(rec)
        found = None
        while node is not None:
            if node.span_id in memo:
                found = memo[node.span_id]
                break
            path.append(node.span_id)
            found = pick(node)
            if found is not None:
                break
            node = self.parent(node)
        for span_id in path:
            memo[span_id] = found
        return found

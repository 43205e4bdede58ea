"""Each policy check on the same clean run (lookup_order -> issue_refund(ORD-12345, 129) -> send_email to
the user's address) as every adapter reads it from a real capture: one table, every source. A source
that cannot carry what a check reads must list the check as skipped, never pass or fail it silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate.adapters.formats import reader
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict

TESTDATA = Path(__file__).resolve().parents[1] / "testdata"
TOOLS = ["lookup_order", "issue_refund", "fetch_webpage", "send_email", "delete_account", "escalate_to_human"]

SOURCES = {
    "langgraph": ("langgraph", "langgraph/clean.json"),
    "openinference": ("otlp", "langgraph/clean.openinference.otlp"),
    "traceloop": ("otlp", "langgraph/clean.traceloop.otlp"),
    "openai-agents": ("otlp", "otlp/clean.openai-agents.otlp"),
    "openai-agents-nocontent": ("otlp", "otlp/clean.openai-agents.nocontent.otlp"),
    "n8n": ("n8n", "n8n/clean.json"),
    "n8n-stored": ("n8n", "n8n/stored/clean.json"),
    "crewai": ("crewai", "crewai/clean.json"),
}
NO_CONTENT = {"openai-agents-nocontent"}
NO_MESSAGES = {"openai-agents-nocontent", "crewai"}

# name, spec keys, violations as (check, step), the check (part) skipped where the source lacks its data
CHECKS = [
    (
        "before, same order",
        {"before": [{"first": "lookup_order", "then": "issue_refund", "same": "order_id"}]},
        [],
        "before:same",
    ),
    (
        "before, dict form without same",
        {"before": [{"first": "send_email", "then": "issue_refund"}]},
        [("before", 1)],
        None,
    ),
    ("terminal", {"terminal": ["lookup_order"]}, [("terminal", 1), ("terminal", 2)], None),
    ("once_per", {"once_per": {"lookup_order": "order_id", "issue_refund": "order_id"}}, [], "once_per"),
    ("arg max", {"args": {"issue_refund": {"amount": {"max": 100}}}}, [("arg", 1)], "arg"),
    (
        "arg in + match",
        {"args": {"issue_refund": {"order_id": {"in": ["ord-12345"], "match": r"ORD-\d{5}"}}}},
        [],
        "arg",
    ),
    ("arg from user", {"args": {"send_email": {"to": {"from": ["user"]}}}}, [], "arg:from"),
    ("arg from a tool", {"args": {"send_email": {"to": {"from": ["tool:lookup_order"]}}}}, [("arg", 2)], "arg:from"),
    ("confirm", {"confirm": ["issue_refund"]}, [("confirm", 1)], "confirm"),
    ("max_parallel", {"max_parallel": 1}, [], None),
]


def _lacks(source: str, part: str | None) -> bool:
    if part is None:
        return False
    if part == "confirm":
        return source in NO_MESSAGES
    return source in NO_CONTENT


@pytest.mark.parametrize("name, keys, expected, part", CHECKS, ids=[c[0] for c in CHECKS])
@pytest.mark.parametrize("source", SOURCES)
def test_policy_check_on_every_adapter(source, name, keys, expected, part):
    fmt, file = SOURCES[source]
    path = TESTDATA / file
    [traj] = reader(fmt)(path.read_bytes(), str(path))
    assert [s.tool for s in traj.steps] == ["lookup_order", "issue_refund", "send_email"]
    g = grade(traj, spec_from_dict({"tools": TOOLS, **keys, "severity": {"ungrounded": "off"}}))
    got = [(v.check, v.step) for v in g.violations]
    if _lacks(source, part):
        assert any(s.startswith(f"{part} (") for s in g.skipped), g.skipped
        assert got == [v for v in expected if v[0] != part.partition(":")[0]]
    else:
        assert got == expected
        assert not [s for s in g.skipped if part and s.startswith(f"{part} (")]

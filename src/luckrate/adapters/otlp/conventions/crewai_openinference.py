"""CrewAI under openinference-instrumentation-crewai, where it leaves plain OpenInference.

- A task's run is an AGENT span named ``<role>._execute_core`` (``graph.node.id`` = the role, ``crew_key``,
  ``task_id``): no ``agent.name``. The role names the agent.
- No span records the user's words as input: the AGENT span's ``input.value`` holds the agent, context and
  tools, and its ``output.value`` (the ``TaskOutput``, content) holds the task's ``description``: what the
  agent was asked to do, the request a crew takes. It is read as the user's message (luckrate's CrewAI
  events reader takes the same). With content hidden it is ``__REDACTED__``.
- Tool spans (``<tool>.run``, TOOL) are OpenInference's.
- A coworker an agent delegates to (``Delegate work to coworker(task, context, coworker)``) runs inside that
  tool span with no AGENT span of its own; the crew's kickoff span lists every agent in ``crew_agents``
  (JSON, recorded with inputs hidden too), each with its ``role``: the run's agents (``crew_agents``).
"""

from __future__ import annotations

from luckrate.adapters.otlp.messages import Message
from luckrate.adapters.otlp.payloads import captured, load_text
from luckrate.adapters.otlp.roles import AgentRole, Role
from luckrate.adapters.otlp.spans import SpanRecord

KEYS = frozenset({"crew_key", "crew_agents"})
"""Its own keys (``graph.node.id`` and the rest are OpenInference's: openinference.py)."""
MAX_AGENTS = 1000
MARKERS = ("crew_key",)
_SUFFIX = "._execute_core"


def _task_span(rec: SpanRecord) -> bool:
    return rec.get("openinference.span.kind") in ("AGENT", "agent") and rec.name.endswith(_SUFFIX)


def classify(rec: SpanRecord) -> Role | None:
    if not _task_span(rec):
        return None
    role = rec.get("graph.node.id")
    return AgentRole(role if isinstance(role, str) and role else rec.name[: -len(_SUFFIX)] or None)


def messages(rec: SpanRecord, direction: str) -> list[Message] | None:
    """The task's description as the user's message (input); None for any other span or direction."""
    if direction != "input" or not _task_span(rec):
        return None
    raw = rec.get("output.value")
    if not isinstance(raw, str) or not captured(raw) or '"description"' not in raw:
        return None
    value = load_text(raw)
    description = value.get("description") if isinstance(value, dict) else None
    return [Message("user", (description,))] if isinstance(description, str) and description.strip() else None


def crew_agents(rec: SpanRecord) -> list[str]:
    """The roles of the crew's agents listed on a kickoff span's ``crew_agents``; empty for any other span."""
    raw = rec.get("crew_agents")
    if not isinstance(raw, str) or '"role"' not in raw:
        return []
    value = load_text(raw)
    agents = value[:MAX_AGENTS] if isinstance(value, list) else []
    return [a["role"] for a in agents if isinstance(a, dict) and isinstance(a.get("role"), str) and a["role"]]

"""The streaming part of ``suggest``: one pass over runs, bounded state per agent and per tool.

``Tally.add(run)`` folds a run in and keeps no reference to it. State is capped: at most
``MAX_AGENTS`` agents and ``MAX_TOOLS`` distinct tools (calls to others are counted, not kept), at
most ``MAX_PAIRS`` ordering pairs per agent, and small caps inside each tool; whatever a cap turns
away is counted and reported as a note, never dropped silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from luckrate.core.fields import Field
from luckrate.core.policy import value_key
from luckrate.core.step import Step, Trajectory
from luckrate.core.suggest import signals

MAX_TOOLS = 1000
"""Distinct tool names tracked across all agents; calls to further tools are counted in ``Tally.untracked``."""
MAX_UNTRACKED_NAMES = 100_000
"""Names beyond MAX_TOOLS are remembered (to count them exactly) up to this many; then counting stops."""
MAX_AGENTS = 100
MAX_PAIRS = 20_000
"""Ordering pairs (earlier tool, later tool) tracked per agent."""
MAX_PAIR_TOOLS = 64
"""A run calling more distinct tools than this adds no ordering evidence (its pairs would cost n²)."""
MAX_SAME_STEPS = 200
MAX_FIELDS = 32
MAX_DESCRIPTION = 2000
MAX_SKELETONS = 8
MAX_SENDERS = 64
"""Distinct record addresses tracked per tool (``trusted_records`` candidates); further ones are counted."""


@dataclass
class ToolTally:
    """What was seen of one tool of one agent."""

    calls: int = 0
    runs: int = 0
    failed: int = 0
    captured: int = 0
    """Calls whose arguments or result were captured (content capture on)."""
    results: int = 0
    """Results seen (successful calls with content)."""
    sentences: int = 0
    """Results holding sentences of free text."""
    markup: int = 0
    structured: int = 0
    """Results with sentences, every one of them in a named field."""
    sentence_fields: Counter[str] = field(default_factory=Counter)
    skeletons: set[int] = field(default_factory=set)
    """Distinct sentence skeletons seen (up to MAX_SKELETONS): one or two across many results is a template."""
    shapes: Counter[str] = field(default_factory=Counter)
    """Argument signals (``address``, ``account``, ``url``, ``param:NAME``) -> calls carrying them."""
    description: str | None = None
    params: frozenset[str] = frozenset()
    """Parameter names from a tool definition, when the trace carried one."""
    senders: dict[tuple[str, str], Sender] = field(default_factory=dict)
    """(field, address) of the records' own addresses (up to MAX_SENDERS) -> what their records said."""
    senders_dropped: int = 0
    """Records whose address was past MAX_SENDERS: counted, not kept."""


@dataclass
class Sender:
    """The records one address sent, in one tool's results."""

    texts: set[int] = field(default_factory=set)
    """Checksums of the distinct messages (up to MAX_SKELETONS + 1: enough to tell many from few)."""
    skeletons: set[int] = field(default_factory=set)
    """Their first sentences' skeletons (up to MAX_SKELETONS): many messages sharing one or two is a system's."""


@dataclass
class AgentTally:
    """What was seen of one agent's runs."""

    runs: int = 0
    usable: int = 0
    """Runs that did not fail (output passed, or not judged) and did not crash: ordering and length read these."""
    judged: int = 0
    no_content: int = 0
    tools: dict[str, ToolTally] = field(default_factory=dict)
    lengths: Counter[int] = field(default_factory=Counter)
    """Step count -> usable runs of that length."""
    with_tool: Counter[str] = field(default_factory=Counter)
    """Tool -> usable runs calling it."""
    held: dict[tuple[str, str], int] = field(default_factory=dict)
    """(a, b) -> usable runs in which a's first call came before b's first call."""
    same: dict[tuple[str, str], frozenset[tuple[str, str]]] = field(default_factory=dict)
    """(a, b) -> the (argument of b, argument of a) pairs whose values matched in every run so far."""
    pairs_dropped: int = 0
    wide_runs: int = 0


@dataclass
class Tally:
    agents: dict[str | None, AgentTally] = field(default_factory=dict)
    tool_names: set[str] = field(default_factory=set)
    untracked: Counter[str] = field(default_factory=Counter)
    """'calls' / 'runs' / 'agents': what the caps turned away."""
    untracked_names: int = 0
    """Distinct tool names turned away, counted exactly up to MAX_UNTRACKED_NAMES."""
    _seen_untracked: set[str] = field(default_factory=set)

    def add(self, run: Trajectory) -> None:
        agent = self._agent(run.agent)
        if agent is None:
            self.untracked["runs"] += 1
            return
        agent.runs += 1
        agent.judged += run.output_ok is not None
        agent.no_content += not run.content
        usable = run.output_ok is not False and run.error is None
        per_run: set[str] = set()
        for step in run.steps:
            tool = self._tool(agent, step.tool)
            if tool is None:
                continue
            _call(tool, step, run.content)
            if step.tool not in per_run:
                per_run.add(step.tool)
                tool.runs += 1
        if usable:
            agent.usable += 1
            agent.lengths[len(run.steps)] += 1
            _order(agent, run)

    def describe(
        self,
        agent: str | None,
        tool: str,
        description: str | None = None,
        params: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """Record a tool definition (description and parameter names) read from a trace."""
        a = self._agent(agent)
        t = self._tool(a, tool, calls=False) if a is not None else None
        if t is None:
            return
        description = description[:MAX_DESCRIPTION] if description else None
        if description and (t.description is None or description < t.description):  # the same whatever the order
            t.description = description
        if params:
            t.params = frozenset(sorted(t.params | set(params))[:64])

    def _agent(self, name: str | None) -> AgentTally | None:
        agent = self.agents.get(name)
        if agent is None and len(self.agents) < MAX_AGENTS:
            agent = self.agents[name] = AgentTally()
        elif agent is None:
            self.untracked["agents"] += 1
        return agent

    def _tool(self, agent: AgentTally, name: str, calls: bool = True) -> ToolTally | None:
        tool = agent.tools.get(name)
        if tool is not None:
            return tool
        if not name:  # a spec cannot name it
            self.untracked["unnamed"] += calls
            return None
        if name in self.tool_names or len(self.tool_names) < MAX_TOOLS:
            self.tool_names.add(name)
            tool = agent.tools[name] = ToolTally()
            return tool
        if calls:
            self.untracked["calls"] += 1
            if name not in self._seen_untracked and len(self._seen_untracked) < MAX_UNTRACKED_NAMES:
                self._seen_untracked.add(name)
                self.untracked_names += 1
        return None


def _call(tool: ToolTally, step: Step, content: bool) -> None:
    tool.calls += 1
    tool.failed += step.failed
    if not content:
        return
    if step.args or step.result is not None:
        tool.captured += 1
    for carried in signals.argument_shapes(step.args):
        if len(tool.shapes) < MAX_FIELDS or carried in tool.shapes:
            tool.shapes[carried] += 1
    if step.result is None or step.failed:
        return
    tool.results += 1
    parsed = signals.result_fields(step.result)
    shape = signals.result_shape(step.result, parsed)
    tool.sentences += shape.sentences
    tool.markup += shape.markup
    tool.structured += shape.structured
    for sk in sorted(shape.skeletons):
        if len(tool.skeletons) < MAX_SKELETONS:
            tool.skeletons.add(sk)
    for name in shape.named:
        if len(tool.sentence_fields) < MAX_FIELDS or name in tool.sentence_fields:
            tool.sentence_fields[name] += 1
    if shape.sentences:
        _senders(tool, parsed)


def _senders(tool: ToolTally, parsed: list[Field]) -> None:
    for name, address, checksum, text in signals.senders(parsed):
        sender = tool.senders.get((name, address))
        if sender is None:
            if len(tool.senders) >= MAX_SENDERS:
                tool.senders_dropped += 1
                continue
            sender = tool.senders[(name, address)] = Sender()
        if len(sender.texts) <= MAX_SKELETONS:
            sender.texts.add(text)
        if checksum is not None and len(sender.skeletons) < MAX_SKELETONS:
            sender.skeletons.add(checksum)


def _order(agent: AgentTally, run: Trajectory) -> None:
    """Fold one usable run's ordering evidence in: which tool's first call came before which."""
    first: dict[str, int] = {}
    for step in run.steps:
        if step.tool in agent.tools:
            first.setdefault(step.tool, step.index)
    if len(first) > MAX_PAIR_TOOLS:
        agent.wide_runs += 1
        return
    for b, at_b in first.items():
        agent.with_tool[b] += 1
        for a, at_a in first.items():
            if at_a >= at_b:
                continue
            key = (a, b)
            if key not in agent.held and len(agent.held) >= MAX_PAIRS:
                agent.pairs_dropped += 1
                continue
            before = agent.held.get(key, 0)
            agent.held[key] = before + 1
            if before + 1 == agent.with_tool[b]:  # still held in every run with b: narrow its shared args
                found = _shared(run, a, b)
                agent.same[key] = found if before == 0 else agent.same.get(key, frozenset()) & found
            else:
                agent.same.pop(key, None)


def _shared(run: Trajectory, a: str, b: str) -> frozenset[tuple[str, str]]:
    """The (argument of b, argument of a) pairs such that every call to b had an earlier successful call
    to a with the same value (compared as ``before``'s ``same`` compares them)."""
    seen: dict[Any, set[str]] = {}
    out: set[tuple[str, str]] | None = None
    for step in run.steps[:MAX_SAME_STEPS]:
        if step.tool == b:
            here = {
                (arg, first_arg)
                for arg, value in step.args.items()
                if arg and _comparable(value)
                for first_arg in seen.get(value_key(value), ())
            }
            out = here if out is None else out & here
            if not out:
                return frozenset()
        if step.tool == a and (step.succeeded if run.content else not step.failed):
            for arg, value in step.args.items():
                if arg and _comparable(value):
                    seen.setdefault(value_key(value), set()).add(arg)
    return frozenset(out or ())


def _comparable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return 0 < len(value) <= 200
    return isinstance(value, (int, float))


def tool_definitions(raw: Mapping[str, Any] | None) -> tuple[str | None, frozenset[str]]:
    """(description, parameter names) from one tool definition in the shapes traces carry: OpenAI's
    ``{"type": "function", "function": {...}}``, a bare ``{"name", "description", "parameters"}``, or
    ``input_schema`` / ``inputSchema`` / ``json_schema``."""
    if not isinstance(raw, Mapping):
        return None, frozenset()
    inner: Mapping[str, Any] = raw["function"] if isinstance(raw.get("function"), Mapping) else raw
    description = inner.get("description")
    schema = next(
        (
            inner.get(k)
            for k in ("parameters", "input_schema", "inputSchema", "json_schema", "schema")
            if isinstance(inner.get(k), Mapping)
        ),
        None,
    )
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    params = frozenset(str(k) for k in list(props)[:64]) if isinstance(props, Mapping) else frozenset()
    return (description if isinstance(description, str) else None), params

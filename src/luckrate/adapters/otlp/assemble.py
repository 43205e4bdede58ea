"""The spans of one trace → one trajectory (one trace = one run)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp.conventions import CONVENTIONS, classify, input_messages, output_messages
from luckrate.adapters.otlp.join import Call, Response, join, named_responses, requests_from
from luckrate.adapters.otlp.messages import Message, user_texts
from luckrate.adapters.otlp.output import OutputRule, output_ok
from luckrate.adapters.otlp.payloads import parse_args, result_text
from luckrate.adapters.otlp.conventions import crewai_openinference, traceloop
from luckrate.adapters.otlp.roles import AgentRole, ChainRole, ModelRole, Role, ToolRole
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.adapters.otlp.tree import Tree
from luckrate.adapters.otlp.turns import conversation, event_turns, model_turns
from luckrate.core.step import USER, Step, Trajectory
from luckrate.core.step import Message as StepMessage

_NAMES = sorted({c.name for c in CONVENTIONS}, key=str.lower)  # a convention may have two readers
_KNOWN = ", ".join(_NAMES[:-1]) + " or " + _NAMES[-1] if len(_NAMES) > 1 else _NAMES[0]
ERROR = 2  # OTLP Status.StatusCode.STATUS_CODE_ERROR; OK (1) and UNSET (0) are both success


class NoAgentSpan(InvalidInput):
    """A trace with no agent, model or tool span of any known convention: an HTTP request's or a
    database's trace, say. A file reader skips such a trace (and counts it) when others in the file
    are runs."""


def trajectory_from_spans(records: Sequence[SpanRecord], rule: OutputRule = OutputRule()) -> Trajectory:
    """Build the run's trajectory; raise InvalidInput naming the trace (and span) when the spans
    cannot make one: none given, several traces mixed, a parent cycle, a tool span without a tool
    name, or no span of any known convention."""
    if not records:
        raise InvalidInput("no spans")
    trace = records[0].trace_id
    where = f"trace {trace.hex()}"
    stray = next((r for r in records if r.trace_id != trace), None)
    if stray is not None:
        raise InvalidInput(f"span {stray.span_hex} belongs to another trace ({stray.trace_hex})", where)
    return _Assembly(Tree(records, where), where, rule).trajectory(trace.hex())


def trajectory_from_run(
    traces: Sequence[Sequence[SpanRecord]], parents: dict[tuple[bytes, bytes], bytes], rule: OutputRule = OutputRule()
) -> Trajectory:
    """One run spread over several traces (runs.py groups them; the first trace started first): their
    spans as one tree, a root span taking the span it links to in an earlier trace as its parent
    (``parents``, keyed by (trace, span)). The run's id is its first trace's."""
    first = traces[0][0].trace_id
    where = f"run {first.hex()} ({len(traces)} traces)"
    records = [_adopt(rec, parents) for spans in traces for rec in spans]
    return _Assembly(Tree(records, where), where, rule).trajectory(first.hex())


def _adopt(rec: SpanRecord, parents: dict[tuple[bytes, bytes], bytes]) -> SpanRecord:
    if rec.parent_id:
        return rec
    parent = parents.get((rec.trace_id, rec.span_id))
    return rec if parent is None else replace(rec, parent_id=parent)


class _Assembly:
    def __init__(self, tree: Tree, where: str, rule: OutputRule):
        self.tree, self.where, self.rule = tree, where, rule
        self.roles: dict[bytes, Role | None] = {r.span_id: classify(r) for r in tree.spans}
        self._by_kind: dict[type, list[SpanRecord]] = {}
        self._tools: dict[bytes, ToolRole] = {}
        """The tool spans' roles (``roles`` typed for the passes that read only those)."""
        for rec in tree.spans:  # each role's spans in tree order, listed once (several passes read them)
            role = self.roles[rec.span_id]
            self._by_kind.setdefault(type(role), []).append(rec)
            if type(role) is ToolRole:
                self._tools[rec.span_id] = role
        if not any(self.roles.values()):
            raise NoAgentSpan(f"no {_KNOWN} agent, model or tool span among {len(tree.spans)} spans", where)
        self._agent_memo: dict[bytes, Any] = {}
        self._tool_memo: dict[bytes, Any] = {}
        self._model_memo: dict[bytes, Any] = {}
        self._input_memo: dict[bytes, list[Message] | None] = {}

    def trajectory(self, run_id: str) -> Trajectory:
        calls, captured, by_class = self._tool_calls()
        models = [(r, output_messages(r) or [], self.agent_of(r)) for r in self._spans(ModelRole)]
        answers = {r.span_id for r in self._spans(ToolRole) if self._tools[r.span_id].answer}
        responses, named = self._responses()
        joined = sorted(join(calls, requests_from(models), responses, named=named), key=lambda c: c.key)
        others = [r for r in self.tree.spans if not isinstance(self.roles[r.span_id], ModelRole)]
        joined = [c for c in joined if c.key[2] not in answers]  # the answer call, and the request it answered
        messages = conversation(
            [(m[0], self._inputs(m[0]), m[1]) for m in models],
            [c.start_ns for c in joined],
            others,
            lambda: [(r, self._inputs(r), output_messages(r)) for r in self._spans(AgentRole)],
        )
        content = captured or self._messages_captured()
        if not content:  # placeholders a framework writes for redacted text are not what anyone said
            messages = ()
        return Trajectory(
            id=run_id,
            steps=tuple(self._step(i, c) for i, c in enumerate(joined)),
            agent=self._root_agent(),
            input=self._input(messages) if content else "",
            output_ok=output_ok(self.tree.spans, self.tree.depth, self.rule),
            content=content,
            messages=messages,
            model_turns=model_turns(joined, self._spans(ModelRole)) or event_turns(joined, others),
            agents=self._agents(),
            tool_classes=traceloop.class_names(joined) if by_class else (),
        )

    def _agents(self) -> tuple[str, ...]:
        """The named agents that ran, each once, in the order they started; then those a crew lists that ran
        with no span of their own (a CrewAI coworker delegated to)."""
        named = sorted(
            (r.start_ns, r.span_id, name) for r in self._spans(AgentRole) if (name := self._agent_name(r)) is not None
        )
        listed = [role for r in self._spans(ChainRole) for role in crewai_openinference.crew_agents(r)]
        return tuple(dict.fromkeys([*(name for _, _, name in named), *listed]))

    def _inputs(self, rec: SpanRecord) -> list[Message] | None:
        """``input_messages(rec)``, parsed once: the responses, the input and the conversation all read it."""
        if rec.span_id not in self._input_memo:
            self._input_memo[rec.span_id] = input_messages(rec)
        return self._input_memo[rec.span_id]

    def _spans(self, *kinds: type) -> list[SpanRecord]:
        """The spans of these roles, in tree order."""
        if len(kinds) == 1:
            return self._by_kind.get(kinds[0], [])
        return [r for r in self.tree.spans if type(self.roles[r.span_id]) in kinds]

    def agent_of(self, rec: SpanRecord) -> str | None:
        """The nearest enclosing agent with a name (tool spans often sit under a chain span)."""
        return self.tree.nearest(rec, self._agent_name, self._agent_memo)

    def _agent_name(self, rec: SpanRecord) -> str | None:
        role = self.roles[rec.span_id]
        return role.name if isinstance(role, AgentRole) and role.name else None

    def _tool_or_agent(self, rec: SpanRecord) -> SpanRecord | None:
        return rec if isinstance(self.roles[rec.span_id], (ToolRole, AgentRole)) else None

    def _outermost(self, rec: SpanRecord) -> SpanRecord:
        """The tool span whose call a span describes again: an MCP span's nearest enclosing tool span, walked
        up while that is an MCP span too (a server span under the client span under a framework's tool span
        are one call); and a tool span whose nearest enclosing tool span names the same tool (two
        instrumentations of one framework each recording the call: OpenInference's AutoGen TOOL span around
        autogen-core's own ``execute_tool`` span). An agent span in between ends the walk: an agent run
        inside a tool (an agent used as a tool) makes calls of its own. Any other span describes its own call."""
        node = rec
        while True:
            up = self.tree.nearest(node, self._tool_or_agent, self._tool_memo)
            if up is None or not isinstance(self.roles[up.span_id], ToolRole):
                break
            if not self._tools[node.span_id].mcp and self._tools[up.span_id].name != self._tools[node.span_id].name:
                break
            node = up
        return node

    def _tool_calls(self) -> tuple[list[Call], bool, bool]:
        """One call per tool span, the spans that describe it again (``_outermost``) merged into it (its
        identity, their content and call id where it recorded none, a failure from any). The tool's name is the
        first any of them names: the MCP SDK's client span names none in an attribute, its server span does.
        Beside the calls: whether any content was captured, and whether any call was named by its class."""
        groups: dict[bytes, list[SpanRecord]] = {}
        for rec in self._spans(ToolRole):
            groups.setdefault(self._outermost(rec).span_id, []).append(rec)
        calls: list[Call] = []
        for top_id, members in groups.items():
            members.sort(key=lambda r: r.span_id != top_id)  # the outermost first, then tree order
            namer = next((self._tools[r.span_id] for r in members if self._tools[r.span_id].name is not None), None)
            if namer is None or namer.name is None:
                raise InvalidInput(f"span {members[0].span_hex}: tool span names no tool", self.where)
            parts = [self._call(r, self._tools[r.span_id], namer.name) for r in members]
            call = functools.reduce(_merge, parts)
            calls.append(replace(call, class_name=True) if namer.class_name else call)
        captured = any(c.args_captured or c.result is not None for c in calls)
        by_class = any(c.class_name for c in calls)
        if by_class:
            asked = [(r.end_ns, q) for r in self._spans(ChainRole) for q in traceloop.requested_calls(r)]
            calls = traceloop.resolve_class_names(calls, asked)
        return calls, captured, by_class

    def _call(self, rec: SpanRecord, role: ToolRole, name: str) -> Call:
        args, parsed = parse_args(role.args)
        result, reported_error = result_text(role.result)
        error = _failure(rec) or role.error
        if error is None and reported_error:
            error = result or "error"
        return Call(
            tool=name,
            args=args,
            parsed=parsed,
            args_captured=role.args is not None,
            result=result,
            error=error,
            start_ns=rec.start_ns,
            end_ns=rec.end_ns,
            key=(rec.start_ns, rec.end_ns, rec.span_id, 0),
            agent=self.agent_of(rec),
            call_id=role.call_id,
            model=self._issuing_model(rec),
        )

    def _issuing_model(self, rec: SpanRecord) -> bytes | None:
        """The model span a tool span runs inside, if any: the model call that issued it, where no requested
        call says so (Mastra runs a step's tools inside its model_step span; with content off its requested
        calls are hidden). The join's answer, when it finds one, replaces this. An agent in between ends the
        walk: its own model calls issued the call."""
        found = self.tree.nearest(rec, self._model_or_agent, self._model_memo)
        return found or None

    def _model_or_agent(self, rec: SpanRecord) -> bytes | None:
        role = self.roles[rec.span_id]
        if isinstance(role, ModelRole):
            return rec.span_id
        return b"" if isinstance(role, AgentRole) else None

    def _step(self, index: int, call: Call) -> Step:
        return Step(
            index=index,
            tool=call.tool,
            args=call.args,
            result=call.result,
            error=call.error,
            t=call.start_ns / 1e9,
            duration=max(0, call.end_ns - call.start_ns) / 1e9,
            agent=call.agent,
            call_id=call.call_id,
        )

    def _responses(self) -> tuple[dict[str, Response], dict[str, list[Response]]]:
        """Tool results the models were sent, by call id (for calls with no tool span): the first model
        call (in start order) whose input holds one is where the result came back. Beside them, the results
        a framework's text gives with their tool and no id (``join.named_responses``)."""
        out: dict[str, Response] = {}
        inputs = [
            (rec, self._inputs(rec))
            for rec in sorted(self._spans(ModelRole), key=lambda r: (r.start_ns, r.end_ns, r.span_id))
        ]
        for rec, messages in inputs:
            for message in messages or ():
                for call_id, result in message.responses:
                    if call_id and call_id not in out:
                        out[call_id] = Response(result, call_id in message.failed, rec.start_ns)
        return out, named_responses(inputs)

    def _root_agent(self) -> str | None:
        named = [r for r in self._spans(AgentRole) if self._agent_name(r)]
        if not named:
            return None
        return self._agent_name(min(named, key=lambda r: (self.tree.depth[r.span_id], r.start_ns, r.span_id)))

    def _input(self, conversation: tuple[StepMessage, ...] = ()) -> str | tuple[str, ...]:
        """User-role text of the outermost agent span that recorded input messages, else of the first model
        call; the conversation's user messages instead when it holds more (later turns of a multi-turn run)."""
        said = tuple(m.text for m in conversation if m.role == USER)
        agents = sorted(self._spans(AgentRole), key=lambda r: (self.tree.depth[r.span_id], r.start_ns, r.span_id))
        for rec in agents + self._spans(ModelRole):
            texts = user_texts(self._inputs(rec) or [])
            if len(said) > len(texts) > 0:
                return said
            if texts:
                return texts[0] if len(texts) == 1 else texts
        return said[0] if len(said) == 1 else said if said else ""

    def _messages_captured(self) -> bool:
        return any(
            _has_text(self._inputs(r)) or _has_text(output_messages(r)) for r in self._spans(ModelRole, AgentRole)
        )


def _has_text(messages: list[Message] | None) -> bool:
    # pydantic-ai with content off keeps the messages' structure: tool_call parts with a name and no
    # arguments, tool_call_response parts with no result. Structure is not content, and neither is a
    # system prompt (Strands leaves it unredacted when it redacts the rest).
    return any(
        (m.texts and m.role != "system")
        or any(c.args is not None for c in m.calls)
        or any(r is not None for _, r in m.responses)
        for m in messages or ()
    )


def _failure(rec: SpanRecord) -> str | None:
    """Status ERROR or an ``error.type``: the status description, else the error type."""
    error_type = rec.get("error.type")
    if rec.status_code != ERROR and error_type is None:
        return None
    return rec.status_message or (str(error_type) if error_type is not None else "") or "error"


def _merge(outer: Call, mcp: Call) -> Call:
    """One step for two spans of the same call (an MCP client span under a framework's tool span, the server
    span under the client span; a second instrumentation's span of the same tool): the outer span's identity,
    the inner span's content and call id where the outer recorded none, a failure from either."""
    from dataclasses import replace

    if not outer.args_captured and mcp.args_captured:
        outer = replace(outer, args=mcp.args, parsed=mcp.parsed, args_captured=True)
    if outer.result is None and mcp.result is not None:
        outer = replace(outer, result=mcp.result)
    return replace(outer, error=outer.error or mcp.error, call_id=outer.call_id or mcp.call_id)

"""Link tool spans to the calls the model asked for.

Several instrumentations put no call id on the tool span (OpenInference and Traceloop on LangGraph,
both Agents SDK bridges). The model span's output messages list the requested calls; join by call id
when both sides have one, else by tool name, arguments and order (the earliest open request of that
name made before the tool started). A join fills in the call id; where the tool span recorded no
arguments or only a bare value, the model's arguments; where it recorded no result, the result the model
was sent. A requested call that no tool span answers is still a step when its result came back to the
model: the caller ran it, the trace just has no span for the execution (a hand-written tool loop).
Results a framework's text gives with their tool but no call id (frames.py) go to that tool's unanswered
calls in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from luckrate.adapters.otlp import frames
from luckrate.adapters.otlp.conventions import ANSWER_TOOLS
from luckrate.adapters.otlp.messages import Message, numbered
from luckrate.adapters.otlp.payloads import args_match, parse_args, result_text
from luckrate.adapters.otlp.spans import SpanRecord
from luckrate.core.frozen import fast_init


@fast_init
@dataclass(frozen=True)
class Call:
    """One tool call on its way to becoming a step."""

    tool: str
    args: dict[str, Any]
    parsed: bool
    """False when ``args`` is ``{"input": text}`` (unparseable or a bare value)."""
    args_captured: bool
    result: str | None
    error: str | None
    start_ns: int
    end_ns: int
    key: tuple[int, int, bytes, int]
    """Ordering key: start ns, end ns, span id, position within a model message."""
    agent: str | None
    call_id: str | None
    model: bytes | None = None
    """The span id of the model call whose request this call answers (None when no request names it)."""
    class_name: bool = False
    """``tool`` is the class implementing the tool, not its name (``ToolRole.class_name``)."""


@dataclass
class _Request:
    model: SpanRecord
    position: int
    tool: str
    args: dict[str, Any]
    parsed: bool
    captured: bool
    call_id: str | None
    agent: str | None
    taken: bool = False


def requests_from(models: Sequence[tuple[SpanRecord, list[Message], str | None]]) -> list[_Request]:
    """The calls the model spans asked for, in the order the models finished."""
    out = []
    seen: dict[str, int] = {}
    for rec, messages, agent in sorted(models, key=lambda m: (m[0].end_ns, m[0].start_ns, m[0].span_id)):
        calls = [c for m in messages for c in m.calls]
        for i, call in enumerate(calls):
            args, parsed = parse_args(call.args)
            call_id = numbered(call.call_id, seen) if call.call_id else None  # as messages.distinct_ids does
            out.append(_Request(rec, i, call.name, args, parsed, call.args is not None, call_id, agent))
    return out


@dataclass(frozen=True)
class Response:
    """A tool result a model call was sent (a ``tool`` message in its input), by call id."""

    result: Any
    """The result as recorded (None when content was not captured)."""
    failed: bool
    """Marked failed by the convention's own marker (message.marked_failed), never by its words."""
    at_ns: int
    """Start of the first model call whose input holds it: the tool ran before then."""


def named_responses(inputs: Iterable[tuple[SpanRecord, list[Message] | None]]) -> dict[str, list[Response]]:
    """Results a framework's text gives with their tool and no call id (``Message.named``), per tool in the
    order they were given, from the model inputs in start order: each input resends the history, so the
    ``j``-th result of a tool in one input is the ``j``-th of every later one, counted once (where first
    sent)."""
    out: dict[str, list[Response]] = {}
    for rec, messages in inputs:
        seen: dict[str, int] = {}
        for message in messages or ():
            for tool, result, failed in message.named:
                j = seen.get(tool, 0)
                seen[tool] = j + 1
                listed = out.setdefault(tool, [])
                if j >= len(listed):
                    listed.append(Response(result, failed, rec.start_ns))
    return out


def join(
    calls: list[Call],
    requests: list[_Request],
    responses: dict[str, Response],
    answer_tools: frozenset[str] = ANSWER_TOOLS,
    named: dict[str, list[Response]] | None = None,
) -> list[Call]:
    """Calls with ids and arguments completed from their requests, plus the requests no tool span
    answers whose result came back (a ``tool`` message with the call id in a later model input): the
    model asked and the caller ran it, the trace just has no span for the execution. Such a step runs
    from the end of the model call that asked to the start of the one that was sent the result, and
    fails when the result is marked failed. A request whose result never came back is not a step (the
    tool may never have run). Where no model input holds a result by call id (content off, a convention
    that sends results without ids such as smolagents' observations, a trace that ends at the request)
    nothing can show a result came back, and a request without a call id cannot be matched to one: both
    stay steps. A result that is a framework's own report of the tool raising (``frames.reports_failure``)
    fails its step. A request for a framework's answer tool (``conventions.ANSWER_TOOLS``) that no tool span
    answers is the agent speaking to the user, never a step."""
    joined = _join(calls, requests, responses, answer_tools, named)
    return [
        replace(c, error=c.result) if c.error is None and frames.reports_failure(c.tool, c.result) else c
        for c in joined
    ]


def _join(
    calls: list[Call],
    requests: list[_Request],
    responses: dict[str, Response],
    answer_tools: frozenset[str],
    named: dict[str, list[Response]] | None,
) -> list[Call]:
    index = _Index(requests)
    by_tool = _ByTool(named or {})
    joined = [_join_one(c, index, responses, by_tool) for c in sorted(calls, key=lambda c: c.key)]
    for req in sorted((r for r in requests if not r.taken), key=lambda r: (r.model.end_ns, r.position)):
        if req.tool in answer_tools:
            continue  # a framework's answer to the user (smolagents' final_answer), no action
        response = responses.get(req.call_id) if req.call_id else None
        if response is None:
            response = by_tool.take(req.tool, req.model.end_ns)
        if response is None and req.call_id and responses:
            continue
        result, reported = result_text(response.result) if response is not None else (None, False)
        error = (result or "error") if response is not None and (response.failed or reported) else None
        start = req.model.end_ns
        end = max(start, response.at_ns) if response is not None else start
        joined.append(
            Call(
                req.tool,
                req.args,
                req.parsed,
                req.captured,
                result,
                error,
                start,
                end,
                (start, end, req.model.span_id, req.position),
                req.agent,
                req.call_id,
                req.model.span_id,
            )
        )
    return joined


class _ByTool:
    """Named results (``named_responses``) not yet given to a call, taken in order per tool."""

    def __init__(self, named: dict[str, list[Response]]):
        self.left = {tool: list(found) for tool, found in named.items()}

    def take(self, tool: str, after_ns: int) -> Response | None:
        """The earliest result of ``tool`` sent no earlier than ``after_ns`` (the end of the model call that
        asked for it), removed; None when there is none."""
        found = self.left.get(tool)
        for i, response in enumerate(found or ()):
            if response.at_ns >= after_ns:
                return found.pop(i)  # type: ignore[union-attr]
        return None


class _Index:
    """Open requests by call id and by tool name (in request order), so joining stays near-linear."""

    def __init__(self, requests: list[_Request]):
        self.by_id: dict[str, _Request] = {}
        self.by_name: dict[str, list[_Request]] = {}
        for req in requests:
            if req.call_id:
                self.by_id.setdefault(req.call_id, req)
            self.by_name.setdefault(req.tool, []).append(req)

    def take(self, req: _Request) -> None:
        req.taken = True
        self.by_name[req.tool].remove(req)


def _join_one(call: Call, index: _Index, responses: dict[str, Response], by_tool: _ByTool) -> Call:
    req = _find(call, index)
    if req is None:
        return call
    index.take(req)
    # A tool span under no agent's span is the agent's whose model asked for it (LlamaIndex runs its tools
    # in a workflow step beside the agent's).
    call = replace(call, model=req.model.span_id, agent=call.agent or req.agent)
    if req.captured and (not call.args_captured or (not call.parsed and req.parsed)):
        call = replace(call, args=req.args, parsed=req.parsed, args_captured=True)
    response = responses.get(req.call_id) if req.call_id else None
    if response is None:  # taken even when the span recorded its result: it is this call's, no other's
        response = by_tool.take(req.tool, req.model.end_ns)
    if response is not None and call.result is None:  # a tool span that records no result (MCP SDK's)
        result, reported = result_text(response.result)
        failed = response.failed or reported
        call = replace(call, result=result, error=call.error or ((result or "error") if failed else None))
    return call if call.call_id or not req.call_id else replace(call, call_id=req.call_id)


def _find(call: Call, index: _Index) -> _Request | None:
    if call.call_id:
        by_id = index.by_id.get(call.call_id)
        if by_id is not None and not by_id.taken:
            return by_id
    for req in index.by_name.get(call.tool, ()):
        if req.model.start_ns > call.start_ns:
            continue  # asked after this call started: cannot be the request it answers
        if not call.args_captured or not req.captured or args_match(call.args, call.parsed, req.args):
            return req
    return None

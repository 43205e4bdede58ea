"""Span data is attacker-influenced: whatever arrives, the adapter answers with a trajectory or an
InvalidInput, never another exception, and what it builds stays JSON-serializable."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import (
    SpanEvent,
    SpanRecord,
    records_from_request,
    request_from_json,
    request_from_protobuf,
    trajectory_from_spans,
)
from luckrate.adapters.trajectory import trajectory_to_dict

KEYS = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.agent.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "openinference.span.kind",
    "tool.name",
    "input.value",
    "output.value",
    "agent.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "llm.input_messages.0.message.content",
    "llm.input_messages.0.message.role",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "mcp.method.name",
    "error.type",
    "luckrate.output_ok",
    "gen_ai.completion.0.tool_calls.0.name",
]
TEXTS = st.sampled_from(
    [
        "execute_tool",
        "invoke_agent",
        "chat",
        "TOOL",
        "AGENT",
        "LLM",
        "CHAIN",
        "tool",
        "agent",
        "workflow",
        "tools/call",
        "user",
        "assistant",
        "__REDACTED__",
        "",
        "{'a': (1, {2, 3}), 1: b'x'}",
        '{"input_str": "{}"}',
        '[{"role": "assistant", "parts": [{"type": "tool_call", "name": "t", "arguments": {"a": 1}}]}]',
        '[{"role": "assistant", "parts": [{"type": "text", "content": "{\'tool_calls\': 5}"}]}]',
        '{"type": "tool", "data": {"content": [1, {"text": 2}]}}',
        '{"output": {"lc": 1, "kwargs": {"content": null}}}',
        "{'role': 'assistant', 'tool_calls': [{'function': {'name': 't', 'arguments': \"{'a': 1j}\"}}]}",
    ]
) | st.text(max_size=20)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def spans(draw):
    n = draw(st.integers(1, 6))
    out = []
    for i in range(1, n + 1):
        parent = draw(st.integers(0, n))
        attrs = tuple(draw(st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=6)))
        events = tuple(
            SpanEvent(name, 0, tuple(draw(st.lists(st.tuples(TEXTS, VALUES), max_size=3))))
            for name in draw(
                st.lists(
                    st.sampled_from(["gen_ai.choice", "gen_ai.user.message", "gen_ai.evaluation.result", "exception"]),
                    max_size=2,
                )
            )
        )
        out.append(
            SpanRecord.build(
                trace_id=b"\x01" * 16,
                span_id=i.to_bytes(8, "big"),
                parent_id=parent.to_bytes(8, "big") if parent else b"",
                name=draw(TEXTS),
                kind=1,
                start_ns=draw(st.integers(0, 100)),
                end_ns=draw(st.integers(0, 100)),
                status_code=draw(st.integers(0, 2)),
                status_message="",
                attributes=attrs,
                events=events,
            )
        )
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans())
def test_any_spans_give_a_trajectory_or_invalid_input(records):
    try:
        traj = trajectory_from_spans(records)
    except InvalidInput:
        return
    json.dumps(trajectory_to_dict(traj))
    assert [s.index for s in traj.steps] == list(range(len(traj.steps)))
    assert all(isinstance(s.tool, str) and s.tool for s in traj.steps)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_invalid_input(body):
    for decode in (request_from_protobuf, request_from_json):
        try:
            records_from_request(decode(body))
        except InvalidInput:
            pass

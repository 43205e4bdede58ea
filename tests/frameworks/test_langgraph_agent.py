"""The LangGraph fixture runner really runs the scenarios, and both instrumentations capture them in one
process (the Traceloop uninstrumentor leaves its patches behind; see ``_unwrap_leftovers``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.builders import otlp_json
from tests.frameworks.langgraph_agent import (
    OUTPUT_OK_KEY,
    _wrapped_targets,
    run_scenario,
    spans_for,
)
from tests.scenarios import SCENARIOS, Call, Scenario

TOOL_KIND = {"openinference": ("openinference.span.kind", "TOOL"), "traceloop": ("traceloop.span.kind", "tool")}


def _calls(scenario: Scenario) -> list[tuple[str, dict]]:
    return [(c.tool, c.args) for turn in scenario.turns for c in turn]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_messages_replay_the_script(scenario):
    messages = run_scenario(scenario)
    assert isinstance(messages[0], HumanMessage) and messages[0].content == scenario.user
    issued = [(c["name"], c["args"]) for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert issued == _calls(scenario)
    results = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert results == [c.result for turn in scenario.turns for c in turn]
    assert messages[-1].content == scenario.answer


def test_parallel_calls_and_a_failing_tool():
    scenario = Scenario(
        "parallel",
        "Look up two orders.",
        (
            (
                Call("lookup_order", {"order_id": "A"}, "a"),
                Call("lookup_order", {"order_id": "B"}, error="no such order"),
            ),
        ),
        "done",
    )
    messages = run_scenario(scenario)
    assert [len(m.tool_calls) for m in messages if isinstance(m, AIMessage)] == [2, 0]
    tool_messages = {m.tool_call_id: (m.status, m.content) for m in messages if isinstance(m, ToolMessage)}
    assert tool_messages == {"call_0_0": ("success", "a"), "call_0_1": ("error", "no such order")}


def _decode(data: bytes) -> list:
    request = ExportTraceServiceRequest()
    request.ParseFromString(data)
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _attrs(span) -> dict:
    return {kv.key: kv.value for kv in span.attributes}


# Alternating kinds checks that one instrumentation leaves nothing behind for the next.
@pytest.mark.parametrize("kind", ["openinference", "traceloop", "openinference", "traceloop"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_spans_for_captures_one_trace_per_run(scenario, kind):
    spans = _decode(spans_for(scenario, kind))
    assert len({s.trace_id for s in spans}) == 1
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == 1 and _attrs(roots[0])[OUTPUT_OK_KEY].bool_value is True
    key, value = TOOL_KIND[kind]
    tools = [s for s in spans if _attrs(s).get(key) is not None and _attrs(s)[key].string_value == value]
    assert sorted(s.name.removeprefix("execute_tool ") for s in tools) == sorted(t for t, _ in _calls(scenario))
    for owner, attr in _wrapped_targets():
        assert not hasattr(vars(owner)[attr], "__wrapped__"), f"{owner.__name__}.{attr} still patched"


def test_otlp_json_uses_hex_ids_and_integer_enums():
    data = spans_for(SCENARIOS[0], "openinference")
    decoded = json.loads(otlp_json(data))
    spans = [s for rs in decoded["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == len(_decode(data))
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    int(spans[0]["traceId"], 16)
    assert all(isinstance(s.get("kind", 0), int) for s in spans)


CAPTURES = sorted((Path(__file__).resolve().parents[1] / "testdata" / "langgraph").glob("*.otlp"))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_committed_span_captures_agree_in_both_encodings(path):
    # Other tests and the CLI examples read these; the JSON twin must describe the same spans.
    spans = _decode(path.read_bytes())
    assert spans and len({s.trace_id for s in spans}) == 1
    decoded = json.loads(path.with_name(path.name + ".json").read_text())
    twins = [s for rs in decoded["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert [(s["spanId"], s["name"]) for s in twins] == [(s.span_id.hex(), s.name) for s in spans]

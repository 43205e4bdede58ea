"""The conversation recorded the GenAI ≤1.36 way: ``gen_ai.user.message``, ``gen_ai.assistant.message``
and ``gen_ai.choice`` span events on the agent span, with no model spans. Only the user events were
read, so no "yes" ever answered an agent message and every confirmed write was flagged. The traces
here are made by the real OpenTelemetry SDK (a tracer, span events, the OTLP encoder) and read back
from the encoded request, as a file would be.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from luckrate.adapters.otlp import read_otlp
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict

SPEC = spec_from_dict(
    {"tools": ["get_reservation", "cancel_reservation"], "confirm": ["cancel_reservation"], "max_parallel": 1}
)
ASK = "Reservation R1X2Y3 is refundable. Shall I cancel it?"


def _call(name: str, call_id: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _record(script: list[tuple], choice: bool = False) -> bytes:
    """An agent span whose events are the script's messages, each tool call an execute_tool child span.

    Script entries: ("user", text), ("ask", text), ("call", [(tool, id), ...]) — the calls of one
    assistant message, each then run as a child span. ``choice``: assistant messages as ``gen_ai.choice``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("airline-agent")
    clock = [1_700_000_000_000_000_000]

    def tick() -> int:
        clock[0] += 1_000_000
        return clock[0]

    root = tracer.start_span(
        "invoke_agent airline",
        start_time=tick(),
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "airline"},
    )
    from opentelemetry import trace

    with trace.use_span(root, end_on_exit=False):
        for kind, value in script:
            if kind == "user":
                root.add_event("gen_ai.user.message", {"content": value}, timestamp=tick())
            elif kind == "ask":
                _assistant(root, {"content": value}, choice, tick())
            else:
                calls = [_call(tool, cid, {"reservation_id": "R1X2Y3"}) for tool, cid in value]
                _assistant(root, {"tool_calls": json.dumps(calls)}, choice, tick())
                for tool, cid in value:
                    span = tracer.start_span(
                        f"execute_tool {tool}",
                        start_time=tick(),
                        attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": tool,
                            "gen_ai.tool.call.id": cid,
                            "gen_ai.tool.call.arguments": '{"reservation_id": "R1X2Y3"}',
                            "gen_ai.tool.call.result": "ok",
                        },
                    )
                    span.end(end_time=tick())
    root.end(end_time=tick())
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def _assistant(span, body: dict, choice: bool, at: int) -> None:
    if choice:
        span.add_event(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": json.dumps({"role": "assistant", **body})},
            timestamp=at,
        )
    else:
        span.add_event("gen_ai.assistant.message", body, timestamp=at)


GET, CANCEL = ("get_reservation", "c1"), ("cancel_reservation", "c2")
CASES = [
    (
        "a yes answering the agent's question confirms",
        [("user", "Cancel R1X2Y3 please"), ("call", [GET]), ("ask", ASK), ("user", "yes"), ("call", [CANCEL])],
        [],
    ),
    (
        "a yes in the opening request confirms nothing the agent stated",
        [("user", "Yes, cancel R1X2Y3"), ("call", [GET]), ("call", [CANCEL])],
        [1],
    ),
    (
        "a yes before the agent's question does not answer it",
        [("user", "Cancel R1X2Y3, yes"), ("call", [GET]), ("ask", ASK), ("call", [CANCEL])],
        [1],
    ),
    (
        "no yes after the question",
        [("user", "Cancel R1X2Y3"), ("call", [GET]), ("ask", ASK), ("user", "hmm"), ("call", [CANCEL])],
        [1],
    ),
]


@pytest.mark.parametrize("choice", [False, True], ids=["assistant.message", "choice"])
@pytest.mark.parametrize("name, script, flagged", CASES, ids=[c[0] for c in CASES])
def test_confirm_reads_assistant_events(name, script, flagged, choice):
    [traj] = read_otlp(_record(script, choice), "f")
    assert [s.tool for s in traj.steps] == ["get_reservation", "cancel_reservation"]
    assert [v.step for v in grade(traj, SPEC).violations if v.check == "confirm"] == flagged


def test_messages_are_placed_by_time():
    script = [("user", "Cancel R1X2Y3 please"), ("call", [GET]), ("ask", ASK), ("user", "yes"), ("call", [CANCEL])]
    [traj] = read_otlp(_record(script), "f")
    assert [(m.role, m.text, m.before_step) for m in traj.messages] == [
        ("user", "Cancel R1X2Y3 please", 0),
        ("agent", ASK, 1),
        ("user", "yes", 1),
    ]
    assert traj.input == ("Cancel R1X2Y3 please", "yes")


def test_tool_calls_of_one_assistant_event_are_one_turn():
    # No model span: the assistant events asking for calls are the model turns, so max_parallel runs.
    script = [
        ("user", "Cancel R1X2Y3"),
        ("call", [GET, ("get_reservation", "c3")]),
        ("ask", ASK),
        ("user", "yes"),
        ("call", [CANCEL]),
    ]
    [traj] = read_otlp(_record(script), "f")
    assert traj.model_turns == (0, 0, 1)
    g = grade(traj, SPEC)
    assert [v.step for v in g.violations if v.check == "max_parallel"] == [1]
    assert "max_parallel" not in " ".join(g.skipped)


def test_content_off_keeps_turns_and_no_messages():
    # Content capture off: the assistant events keep the tool calls' ids and names, no text.
    script = [("call", [GET]), ("call", [CANCEL])]
    [traj] = read_otlp(_record(script), "f")
    assert traj.messages == ()
    assert traj.model_turns == (0, 1)

"""trajectory_from_spans on hand-built spans, one rule per case.

The real instrumentations (test_otlp_frameworks.py) cover what they emit here; these cases cover the
shapes they don't all emit (old GenAI events, MCP, Traceloop legacy, quirky arguments) as the
reference (shared/reference/span-conventions.md) and the conventions' specs describe them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import OutputRule, SpanEvent, SpanRecord, trajectory_from_spans
from tests.builders import TRACE, S, agent, assistant, call_part, chat, span, tool


def a(**kw: Any) -> dict[str, Any]:
    """Attribute names with dots, written as keyword arguments with double underscores."""
    return kw


USER = {"role": "user", "parts": [{"type": "text", "content": "Refund ORD-1"}]}


# --- argument shapes -------------------------------------------------------------------------------

ARGUMENT_SHAPES = [
    ("json string", '{"order_id": "ORD-1", "n": 2}', {"order_id": "ORD-1", "n": 2}),
    ("python repr", "{'order_id': 'ORD-1', 'ok': True, 'n': None}", {"order_id": "ORD-1", "ok": True, "n": None}),
    ("plain object", {"order_id": "ORD-1"}, {"order_id": "ORD-1"}),
    (
        "traceloop envelope inputs",
        json.dumps(
            {
                "input_str": "{'order_id': 'ORD-1'}",
                "tags": [],
                "metadata": {},
                "inputs": {"order_id": "ORD-1"},
                "kwargs": {},
            }
        ),
        {"order_id": "ORD-1"},
    ),
    (
        "traceloop envelope input_str only",
        json.dumps({"input_str": "{'order_id': 'ORD-1'}", "tags": None}),
        {"order_id": "ORD-1"},
    ),
    ("traceloop decorator", json.dumps({"args": [], "kwargs": {"order_id": "ORD-1"}}), {"order_id": "ORD-1"}),
    ("unparseable stays a string", "order ORD-1, please", {"input": "order ORD-1, please"}),
    ("broken json stays a string", '{"order_id": "ORD-1"', {"input": '{"order_id": "ORD-1"'}),
    ("code is never run", "__import__('os').system('x')", {"input": "__import__('os').system('x')"}),
    ("a tool argument named inputs is not an envelope", {"inputs": [1, 2]}, {"inputs": [1, 2]}),
]


@pytest.mark.parametrize("label, raw, expected", ARGUMENT_SHAPES, ids=[c[0] for c in ARGUMENT_SHAPES])
def test_argument_shapes(label, raw, expected):
    traj = trajectory_from_spans([agent(1, None, "a"), tool(2, 1, "lookup_order", 100, args=raw, result="ok")])
    assert traj.steps[0].args == expected


def test_openinference_bare_value_takes_the_requested_argument_name():
    spans = [
        span(1, None, "graph", 0, 1000, openinference__span__kind="AGENT"),
        span(
            2,
            1,
            "ChatModel",
            10,
            20,
            openinference__span__kind="LLM",
            **{
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_7",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": "ORD-1"}',
            },
        ),
        span(3, 1, "tools", 30, 60, openinference__span__kind="CHAIN"),
        span(
            4,
            3,
            "lookup_order",
            40,
            50,
            openinference__span__kind="TOOL",
            tool__name="lookup_order",
            input__value="ORD-1",
            output__value="found",
        ),
    ]
    (step,) = trajectory_from_spans([_dots(s) for s in spans]).steps
    assert (step.args, step.call_id, step.result, step.agent) == ({"order_id": "ORD-1"}, "call_7", "found", "graph")


def _dots(rec: SpanRecord) -> SpanRecord:
    from dataclasses import replace

    return replace(rec, layout={k.replace("__", "."): i for k, i in rec.layout.items()})


# --- results ---------------------------------------------------------------------------------------

OI_TOOL_MESSAGE = json.dumps(
    {
        "type": "tool",
        "data": {"content": "shipped", "tool_call_id": "call_b2", "name": "lookup_order", "status": "success"},
    }
)
TL_ENVELOPE = json.dumps(
    {
        "output": {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "ToolMessage"],
            "kwargs": {"content": "shipped", "tool_call_id": "call_b2", "status": "success"},
        },
        "kwargs": {"name": "lookup_order"},
    }
)

RESULTS = [
    ("plain text", "shipped", "shipped", None, None),
    ("json text stays verbatim", '{"b": 1,  "a": 2}', '{"b": 1,  "a": 2}', None, None),
    ("openinference ToolMessage", OI_TOOL_MESSAGE, "shipped", "call_b2", None),
    ("traceloop lc envelope", TL_ENVELOPE, "shipped", "call_b2", None),
    (
        "content blocks",
        json.dumps(
            {"type": "tool", "data": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}
        ),
        "ab",
        None,
        None,
    ),
    (
        "handled error in the ToolMessage",
        json.dumps({"type": "tool", "data": {"content": "boom", "status": "error"}}),
        "boom",
        None,
        "boom",
    ),
    ("structured value", {"k": [1, 2]}, '{"k": [1, 2]}', None, None),
    # Results without the text "content" are not parsed (payloads.py): an escaped key must still unwrap.
    ("escaped content key", OI_TOOL_MESSAGE.replace('"content"', '"\\u0063ontent"'), "shipped", "call_b2", None),
    (
        "python repr ToolMessage",
        repr({"type": "tool", "data": {"content": "shipped", "tool_call_id": "c9"}}),
        "shipped",
        "c9",
        None,
    ),
    ("json without the word", '{"contents": 1}', '{"contents": 1}', None, None),
]


@pytest.mark.parametrize("label, raw, text, call_id, error", RESULTS, ids=[c[0] for c in RESULTS])
def test_results_are_unwrapped(label, raw, text, call_id, error):
    (step,) = trajectory_from_spans([agent(1, None, "a"), tool(2, 1, "lookup_order", 5, args="{}", result=raw)]).steps
    assert (step.result, step.call_id, step.error) == (text, call_id, error)


# --- the three conventions -------------------------------------------------------------------------


def test_genai_semconv_new_generation():
    spans = [
        agent(1, None, "Support", gen_ai__input__messages=json.dumps([USER])),
        chat(
            2,
            1,
            10,
            20,
            inputs=[USER],
            outputs=[assistant(call_part("web_fetch", {"url": "https://ex.test/x"}, " call_a1"))],
        ),
        tool(
            3,
            1,
            "web_fetch",
            30,
            args='{"url":"https://ex.test/x"}',
            result='{"body": "99817"}',
            gen_ai__tool__call__id="call_a1",
        ),
        chat(
            4,
            1,
            50,
            60,
            inputs=[
                USER,
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_a1", "response": "{}"}]},
            ],
            outputs=[assistant(call_part("refund_order", {"order_id": "99817"}, "call_b2"))],
        ),
        tool(
            5,
            1,
            "refund_order",
            70,
            args='{"order_id":"99817"}',
            status=2,
            message="not allowed",
            error__type="PermissionError",
            gen_ai__tool__call__id="call_b2",
        ),
    ]
    traj = trajectory_from_spans(spans)
    assert traj.id == TRACE.hex() and traj.agent == "Support" and traj.input == "Refund ORD-1"
    assert [(s.tool, s.call_id, s.error) for s in traj.steps] == [
        ("web_fetch", "call_a1", None),
        ("refund_order", "call_b2", "not allowed"),
    ]
    assert traj.steps[0].t == pytest.approx((S + 30) / 1e9) and traj.steps[0].duration == pytest.approx(1e-8)


def test_genai_semconv_old_generation_events():
    events_in = (
        SpanEvent("gen_ai.system.message", S, (("content", "be nice"),)),
        SpanEvent("gen_ai.user.message", S, (("content", "Refund ORD-1"),)),
    )
    choice = SpanEvent(
        "gen_ai.choice",
        S,
        (
            (
                "gen_ai.event.content",
                json.dumps(
                    {
                        "index": 0,
                        "message": {
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "lookup_order", "arguments": '{"order_id": "ORD-1"}'},
                                }
                            ]
                        },
                    }
                ),
            ),
        ),
    )
    spans = [
        agent(1, None, "a"),
        span(
            2,
            1,
            "chat m",
            10,
            20,
            events=events_in + (choice,),
            gen_ai__operation__name="chat",
            gen_ai__system="openai",
        ),
        tool(3, 1, "lookup_order", 30),  # content capture off on the tool span: the model's request fills in
    ]
    traj = trajectory_from_spans(spans)
    assert traj.input == "Refund ORD-1"
    assert [(s.tool, s.args, s.call_id) for s in traj.steps] == [("lookup_order", {"order_id": "ORD-1"}, "call_1")]


def test_openinference_kinds_and_agent_quirk():
    spans = [
        _dots(s)
        for s in [
            span(1, None, "supervisor", 0, 1000, openinference__span__kind="AGENT", agent__name="supervisor"),
            span(
                2,
                1,
                "LLM",
                5,
                8,
                openinference__span__kind="LLM",
                **{"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi there"},
            ),
            span(3, 1, "tools", 10, 100, openinference__span__kind="CHAIN"),
            # The LangChain instrumentation marks any run named "...agent..." as AGENT, tools included.
            span(
                4,
                3,
                "transfer_to_refund_agent",
                20,
                30,
                openinference__span__kind="AGENT",
                tool__name="transfer_to_refund_agent",
                input__value="{}",
                output__value="ok",
            ),
            span(5, 1, "refund_agent", 40, 90, openinference__span__kind="AGENT"),
            span(
                6,
                5,
                "issue_refund",
                50,
                60,
                openinference__span__kind="TOOL",
                tool__name="issue_refund",
                input__value="{'order_id': 'ORD-1'}",
                output__value="done",
                status=2,
                message="Traceback...",
            ),
        ]
    ]
    traj = trajectory_from_spans(spans)
    assert traj.agent == "supervisor" and traj.input == "hi there"
    assert [(s.tool, s.agent, s.error) for s in traj.steps] == [
        ("transfer_to_refund_agent", "supervisor", None),
        ("issue_refund", "refund_agent", "Traceback..."),
    ]


def test_traceloop_kinds_and_legacy_messages():
    spans = [
        _dots(s)
        for s in [
            span(
                1,
                None,
                "support.workflow",
                0,
                1000,
                traceloop__span__kind="workflow",
                traceloop__workflow__name="support",
            ),
            span(2, 1, "support.agent", 1, 999, traceloop__span__kind="agent", traceloop__entity__name="support"),
            span(
                3,
                2,
                "ChatOpenAI.chat",
                10,
                20,
                **{
                    "gen_ai.prompt.0.role": "user",
                    "gen_ai.prompt.0.content": "Refund ORD-1",
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.tool_calls.0.id": "call_9",
                    "gen_ai.completion.0.tool_calls.0.name": "issue_refund",
                    "gen_ai.completion.0.tool_calls.0.arguments": '{"order_id": "ORD-1"}',
                },
            ),
            span(4, 2, "execute_task tools", 30, 80, traceloop__span__kind="task"),
            span(
                5,
                4,
                "issue_refund.tool",
                40,
                50,
                traceloop__span__kind="tool",
                traceloop__entity__name="issue_refund",
                traceloop__entity__input=json.dumps(
                    {
                        "input_str": "{'order_id': 'ORD-1'}",
                        "inputs": {"order_id": "ORD-1"},
                        "tags": [],
                        "metadata": {},
                        "kwargs": {},
                    }
                ),
                traceloop__entity__output=TL_ENVELOPE,
            ),
        ]
    ]
    traj = trajectory_from_spans(spans)
    assert (traj.agent, traj.input) == ("support", "Refund ORD-1")
    assert [(s.tool, s.args, s.result, s.call_id, s.agent) for s in traj.steps] == [
        ("issue_refund", {"order_id": "ORD-1"}, "shipped", "call_b2", "support")
    ]


# --- joins, MCP, ordering ----------------------------------------------------------------------------


def test_tool_calls_only_in_model_output_still_become_steps():
    spans = [
        agent(1, None, "a"),
        chat(
            2,
            1,
            10,
            20,
            outputs=[
                assistant(
                    call_part("lookup_order", {"order_id": "1"}, "c1"), call_part("send_email", '{"to": "x@y"}', "c2")
                )
            ],
        ),
        tool(3, 1, "lookup_order", 30, args='{"order_id": "1"}', result="r"),
        chat(
            4,
            1,
            40,
            50,
            inputs=[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "result": "sent"}]}],
        ),
    ]
    traj = trajectory_from_spans(spans)
    assert [(s.tool, s.call_id, s.args, s.result, s.t) for s in traj.steps] == [
        ("send_email", "c2", {"to": "x@y"}, "sent", (S + 20) / 1e9),  # at the model span's end
        ("lookup_order", "c1", {"order_id": "1"}, "r", (S + 30) / 1e9),
    ]


def _response(part: dict[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", **part}]}


TOOL_MESSAGES = [
    # A tool call the model asked for (c1), run by the caller with no tool span; the next model call is sent
    # this message. Only a field a convention defines marks the result failed, never its words.
    ("plain text", _response({"response": "found"}), "found", None),
    (
        "an error in words is what the tool said",
        _response({"response": "Error: service down"}),
        "Error: service down",
        None,
    ),
    ("is_error on the part", _response({"response": "service down", "is_error": True}), "service down", "service down"),
    (
        "an MCP CallToolResult as the response",
        _response({"response": {"content": [{"type": "text", "text": "down"}], "isError": True}}),
        '{"content": [{"text": "down", "type": "text"}], "isError": true}',
        '{"content": [{"text": "down", "type": "text"}], "isError": true}',
    ),
    (
        "a status key in the tool's own output is its output",
        _response({"response": '{"status": "error", "detail": "x"}'}),
        '{"status": "error", "detail": "x"}',
        None,
    ),
    (
        "a chat-completions tool message with status error",
        {"role": "tool", "tool_call_id": "c1", "content": "service down", "status": "error"},
        "service down",
        "service down",
    ),
    (
        "a LangChain ToolMessage with status error",
        _response({"response": json.dumps({"type": "tool", "data": {"content": "down", "status": "error"}})}),
        "down",
        "down",
    ),
]


@pytest.mark.parametrize("label, message, result, error", TOOL_MESSAGES, ids=[c[0] for c in TOOL_MESSAGES])
def test_steps_from_messages_fail_by_the_conventions_marker(label, message, result, error):
    spans = [
        chat(1, None, 10, 20, inputs=[USER], outputs=[assistant(call_part("lookup_order", {"order_id": "1"}, "c1"))]),
        chat(2, None, 50, 60, inputs=[USER, assistant(call_part("lookup_order", {"order_id": "1"}, "c1")), message]),
    ]
    (step,) = trajectory_from_spans(spans).steps
    assert (step.tool, step.call_id, step.result, step.error) == ("lookup_order", "c1", result, error)
    assert (step.t, step.duration) == ((S + 20) / 1e9, 30 / 1e9)  # from the asking call's end to the next's start


def test_anthropic_tool_results_in_traceloop_legacy_prompts():
    blocks = [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "down", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sent"},
    ]
    asked = {"gen_ai__completion__0__role": "assistant"}
    for n, (call_id, name, args) in enumerate(
        [("toolu_1", "lookup_order", '{"order_id": "1"}'), ("toolu_2", "send_email", '{"to": "x@y"}')]
    ):
        key = f"gen_ai__completion__0__tool_calls__{n}__"
        asked.update({key + "id": call_id, key + "name": name, key + "arguments": args})
    spans = [
        _dots(
            span(
                1,
                None,
                "anthropic.chat",
                0,
                10,
                **{"gen_ai__prompt__0__role": "user", "gen_ai__prompt__0__content": "Refund ORD-1", **asked},
            )
        ),
        _dots(
            span(
                2,
                None,
                "anthropic.chat",
                20,
                30,
                **{
                    "gen_ai__prompt__0__role": "user",
                    "gen_ai__prompt__0__content": "Refund ORD-1",
                    "gen_ai__prompt__1__role": "user",
                    "gen_ai__prompt__1__content": json.dumps(blocks),
                },
            )
        ),
    ]
    traj = trajectory_from_spans(spans)
    assert [(s.tool, s.result, s.error) for s in traj.steps] == [
        ("lookup_order", "down", "down"),
        ("send_email", "sent", None),
    ]
    assert traj.input == "Refund ORD-1"  # the tool results are not something the user said


def test_a_call_whose_result_never_came_back_is_not_a_step():
    # The model asked for two calls; the next model call was sent the result of one. The other may never
    # have run (the loop stopped, or skipped it): nothing in the trace says it happened.
    spans = [
        chat(
            1,
            None,
            10,
            20,
            inputs=[USER],
            outputs=[
                assistant(
                    call_part("lookup_order", {"order_id": "1"}, "c1"),
                    call_part("delete_account", {"user_id": "u"}, "c2"),
                )
            ],
        ),
        chat(2, None, 50, 60, inputs=[USER, _response({"response": "found"})]),
    ]
    assert [s.call_id for s in trajectory_from_spans(spans).steps] == ["c1"]


def test_mcp_sdk_client_span_names_its_tool_in_its_span_name_and_its_server_span_is_the_same_call():
    # The MCP Python SDK's client span names no tool in an attribute; its server span (a child, through the
    # request's _meta) does, and carries the failure. Read as one step, not refused as a nameless tool span.
    spans = [
        chat(
            1,
            None,
            0,
            10,
            inputs=[USER],
            outputs=[assistant(call_part("search", {"q": "x"}, "c1"), call_part("fetch", {"url": "u"}, "c2"))],
        ),
        span(2, None, "MCP send tools/call search", 20, 60, mcp__method__name="tools/call", jsonrpc__request__id="2"),
        span(
            3,
            2,
            "tools/call search",
            30,
            50,
            status=2,
            mcp__method__name="tools/call",
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="search",
            error__type="tool_error",
        ),
        span(4, None, "MCP send tools/call fetch", 70, 80, mcp__method__name="tools/call", jsonrpc__request__id="3"),
        chat(
            5,
            None,
            90,
            100,
            inputs=[
                USER,
                _response({"response": "no results"}),
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": "page"}]},
            ],
        ),
    ]
    traj = trajectory_from_spans([_dots(s) for s in spans])
    assert [(s.tool, s.call_id, s.args, s.result, s.error, s.t) for s in traj.steps] == [
        ("search", "c1", {"q": "x"}, "no results", "tool_error", (S + 20) / 1e9),
        ("fetch", "c2", {"url": "u"}, "page", None, (S + 70) / 1e9),
    ]


def test_an_mcp_call_of_an_agent_run_inside_a_tool_is_its_own_step():
    # An agent used as a tool: its MCP calls sit under the triage agent's tool span, but are the support
    # agent's calls, not part of the handoff.
    spans = [
        agent(1, None, "triage"),
        tool(2, 1, "transfer_to_support", 10, end=100, args="{}", result="done"),
        agent(3, 2, "support", 20, 90),
        span(
            4,
            3,
            "tools/call lookup_order",
            30,
            40,
            mcp__method__name="tools/call",
            gen_ai__tool__name="lookup_order",
            gen_ai__tool__call__arguments='{"order_id": "1"}',
        ),
    ]
    traj = trajectory_from_spans([_dots(s) for s in spans])
    assert [(s.tool, s.agent) for s in traj.steps] == [("transfer_to_support", "triage"), ("lookup_order", "support")]


def test_traceloop_mcp_envelopes():
    spans = [
        span(
            1,
            None,
            "search.tool",
            0,
            10,
            status=2,
            message="boom",
            traceloop__span__kind="tool",
            traceloop__entity__name="search",
            traceloop__entity__input=json.dumps({"tool_name": "search", "arguments": {"q": "x"}}),
            traceloop__entity__output=json.dumps({"result": "boom", "is_error": True}),
            error__type="tool_error",
        )
    ]
    (step,) = trajectory_from_spans([_dots(s) for s in spans]).steps
    assert (step.tool, step.args, step.result, step.error) == ("search", {"q": "x"}, "boom", "boom")


def test_join_without_call_id_uses_name_arguments_and_order():
    spans = [
        agent(1, None, "a"),
        chat(
            2,
            1,
            10,
            20,
            outputs=[
                assistant(
                    call_part("lookup_order", {"order_id": "1"}, "c1"),
                    call_part("lookup_order", {"order_id": "2"}, "c2"),
                    call_part("lookup_order", {"order_id": "2"}, "c3"),
                )
            ],
        ),
        tool(3, 1, "lookup_order", 30, args='{"order_id": "2"}'),
        tool(4, 1, "lookup_order", 31, args='{"order_id": "1"}'),
        tool(5, 1, "lookup_order", 32, args='{"order_id": "2"}'),
    ]
    assert [s.call_id for s in trajectory_from_spans(spans).steps] == ["c2", "c1", "c3"]


def test_mcp_child_of_a_tool_span_is_the_same_call():
    spans = [
        agent(1, None, "a"),
        tool(2, 1, "search", 10, end=100),
        span(
            3,
            2,
            "tools/call search",
            20,
            90,
            status=2,
            message="mcp failed",
            mcp__method__name="tools/call",
            gen_ai__tool__name="search",
            gen_ai__tool__call__arguments='{"q": "x"}',
        ),
        span(
            4,
            1,
            "tools/call fetch",
            200,
            210,
            mcp__method__name="tools/call",
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__call__arguments='{"url": "u"}',
            gen_ai__tool__call__result="page",
        ),
    ]
    traj = trajectory_from_spans(spans)
    assert [(s.tool, s.args, s.result, s.error) for s in traj.steps] == [
        ("search", {"q": "x"}, None, "mcp failed"),
        ("fetch", {"url": "u"}, "page", None),
    ]


def test_ordering_ties_break_on_end_then_span_id():
    spans = [
        agent(1, None, "a"),
        tool(9, 1, "c", 50, end=70),
        tool(8, 1, "b", 50, end=70),
        tool(7, 1, "a", 50, end=90),
        tool(6, 1, "z", 40, end=95),
    ]
    assert [s.tool for s in trajectory_from_spans(spans).steps] == ["z", "b", "c", "a"]
    assert [s.tool for s in trajectory_from_spans(list(reversed(spans))).steps] == ["z", "b", "c", "a"]


def test_nearest_agent_walks_up_through_chains_and_root_agent_names_the_run():
    spans = [
        span(1, None, "workflow", 0, 1000, gen_ai__operation__name="invoke_agent"),  # unnamed root agent
        agent(2, 1, "supervisor", 1, 999),
        span(3, 2, "chain", 2, 500, gen_ai__operation__name="invoke_workflow"),
        agent(4, 3, "worker", 3, 400),
        span(5, 4, "task", 4, 300),
        tool(6, 5, "a", 10),
        tool(7, 3, "b", 450),
    ]
    traj = trajectory_from_spans(spans)
    assert traj.agent == "supervisor"
    assert [(s.tool, s.agent) for s in traj.steps] == [("a", "worker"), ("b", "supervisor")]


# --- content capture ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, result, content",
    [
        (None, None, False),
        ("__REDACTED__", "__REDACTED__", False),
        ('{"a": 1}', None, True),
        (None, "r", True),
    ],
)
def test_content_capture(args, result, content):
    traj = trajectory_from_spans(
        [
            _dots(s)
            for s in [
                span(1, None, "g", 0, 100, openinference__span__kind="AGENT", input__value="__REDACTED__"),
                span(
                    2,
                    1,
                    "t",
                    10,
                    20,
                    openinference__span__kind="TOOL",
                    tool__name="t",
                    **({"input__value": args} if args else {}),
                    **({"output__value": result} if result else {}),
                ),
            ]
        ]
    )
    assert traj.content is content
    if not content:
        assert (traj.steps[0].args, traj.steps[0].result) == ({}, None)


# --- output_ok ---------------------------------------------------------------------------------------


def evaluation(name: str = "quality", label: str | None = None, score: float | None = None, **extra) -> SpanEvent:
    attrs = [("gen_ai.evaluation.name", name)]
    if label is not None:
        attrs.append(("gen_ai.evaluation.score.label", label))
    if score is not None:
        attrs.append(("gen_ai.evaluation.score.value", score))
    return SpanEvent("gen_ai.evaluation.result", S, tuple(attrs) + tuple(extra.items()))


OUTPUT_CASES = [
    ("no verdict", {}, {}, (), OutputRule(), None),
    ("root attribute wins", {"luckrate.output_ok": False}, {"luckrate.output_ok": True}, (), OutputRule(), False),
    ("child attribute", {}, {"luckrate.output_ok": True}, (), OutputRule(), True),
    ("configured key", {"my.ok": True}, {"luckrate.output_ok": False}, (), OutputRule(attribute="my.ok"), True),
    ("non-bool ignored", {"luckrate.output_ok": "yes"}, {}, (), OutputRule(), None),
    ("attribute beats evaluation", {"luckrate.output_ok": True}, {}, (evaluation(label="fail"),), OutputRule(), True),
    ("pass label", {}, {}, (evaluation(label="Pass"),), OutputRule(), True),
    ("fail label", {}, {}, (evaluation(label="failed"),), OutputRule(), False),
    ("any fail wins", {}, {}, (evaluation(label="pass"), evaluation(label="fail")), OutputRule(), False),
    ("unknown label, no threshold", {}, {}, (evaluation(label="meh", score=0.9),), OutputRule(), None),
    ("threshold pass", {}, {}, (evaluation(score=0.8),), OutputRule(threshold=0.7), True),
    ("threshold fail", {}, {}, (evaluation(score=0.6),), OutputRule(threshold=0.7), False),
    (
        "named evaluation only",
        {},
        {},
        (evaluation("tox", label="fail"), evaluation("quality", label="pass")),
        OutputRule(evaluation="quality"),
        True,
    ),
    ("named evaluation absent", {}, {}, (evaluation("tox", label="pass"),), OutputRule(evaluation="quality"), None),
    ("custom labels", {}, {}, (evaluation(label="good"),), OutputRule(pass_labels=("good",)), True),
    ("evaluator error", {}, {}, (evaluation(label="pass", **{"error.type": "timeout"}),), OutputRule(), None),
]


@pytest.mark.parametrize(
    "label, root_attrs, child_attrs, events, rule, expected", OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES]
)
def test_output_ok(label, root_attrs, child_attrs, events, rule, expected):
    root = span(1, None, "eval", 0, 100, **{k.replace(".", "__"): v for k, v in root_attrs.items()})
    child = agent(2, 1, "a", 1, 99, **{k.replace(".", "__"): v for k, v in child_attrs.items()})
    child = SpanRecord(**{**{f: getattr(child, f) for f in SpanRecord.__slots__}, "events": events})
    assert trajectory_from_spans([child, root], rule).output_ok is expected


# --- bad input -----------------------------------------------------------------------------------

OTHER = bytes.fromhex("11" * 16)
BAD = [
    ("no spans", [], "no spans"),
    (
        "mixed traces",
        [agent(1, None, "a"), agent(2, None, "b", trace=OTHER)],
        f"trace {TRACE.hex()}: span 0000000000000002 belongs to another trace ({OTHER.hex()})",
    ),
    (
        "tool without a name",
        [agent(1, None, "a"), span(2, 1, "execute_tool", 5, gen_ai__operation__name="execute_tool")],
        f"trace {TRACE.hex()}: span 0000000000000002: tool span names no tool",
    ),
    (
        "Vercel AI SDK tool call without a name",
        [agent(1, None, "a"), span(2, 1, "ai.toolCall", 5, ai__operationId="ai.toolCall")],
        f"trace {TRACE.hex()}: span 0000000000000002: tool span names no tool",
    ),
    (
        "unmarked tool-named span without a tool",
        [agent(1, None, "a"), span(2, 1, "ai.toolCall", 5)],
        f"trace {TRACE.hex()}: span 0000000000000002: tool span names no tool",
    ),
    (
        "parent cycle",
        [span(1, 2, "x", 0, gen_ai__operation__name="invoke_agent"), span(2, 1, "y", 1)],
        f"trace {TRACE.hex()}: span 0000000000000001: parent links form a cycle",
    ),
    (
        "no known convention",
        [span(1, None, "GET /", 0), span(2, 1, "SELECT", 1)],
        f"trace {TRACE.hex()}: no CrewAI, GenAI, Google ADK, Haystack, LlamaIndex, Mastra, OpenInference, pydantic-ai, smolagents, Strands Agents, Traceloop or Vercel AI SDK agent, model or tool span among 2 spans",
    ),
]


@pytest.mark.parametrize("label, spans, message", BAD, ids=[c[0] for c in BAD])
def test_spans_that_make_no_trajectory(label, spans, message):
    with pytest.raises(InvalidInput) as e:
        trajectory_from_spans([_dots(s) for s in spans])
    assert str(e.value) == message


UNMARKED = [
    # No convention's marker, but a tool key or a tool-call span name: a step with what could be read.
    (
        "gen_ai.tool.name only",
        {"gen_ai__tool__name": "send_email", "gen_ai__tool__call__arguments": '{"to": "x"}'},
        "tool",
        ("send_email", {"to": "x"}, None),
    ),
    (
        "OpenInference keys, kind dropped",
        {"tool__name": "lookup_order", "input__value": '{"order_id": "A"}', "output__value": "found"},
        "lookup_order",
        ("lookup_order", {"order_id": "A"}, "found"),
    ),
    ("span name only", {}, "execute_tool delete_account", ("delete_account", {}, None)),
]


@pytest.mark.parametrize("label, attrs, name, expected", UNMARKED, ids=[c[0] for c in UNMARKED])
def test_unmarked_tool_spans_are_steps_not_dropped(label, attrs, name, expected):
    steps = trajectory_from_spans([agent(1, None, "a"), _dots(span(2, 1, name, 5, **attrs))]).steps
    assert [(s.tool, s.args, s.result, s.agent) for s in steps] == [(*expected, "a")]


def test_duplicate_spans_from_retries_count_once():
    spans = [agent(1, None, "a"), tool(2, 1, "t", 5, args="{}"), tool(2, 1, "t", 5, args="{}")]
    assert len(trajectory_from_spans(spans).steps) == 1


def test_orphans_whose_parent_never_arrived_still_count():
    spans = [agent(1, None, "a"), tool(2, 99, "t", 5)]
    assert [(s.tool, s.agent) for s in trajectory_from_spans(spans).steps] == [("t", None)]

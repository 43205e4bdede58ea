"""What confirm and max_parallel read beside the steps — the conversation's messages placed among the
steps, and the model turn that issued each call — from every adapter that can carry them, then the
checks on it: captured real runs (every framework), real LangChain message objects, and hand-built
OTLP spans for the shapes the captures do not show (an agent used as a tool; content capture off).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from luckrate.adapters import InvalidInput
from luckrate.adapters.formats import reader
from luckrate.adapters.langgraph import trajectory_from_messages
from luckrate.adapters.otlp import trajectory_from_spans
from luckrate.adapters.trajectory import trajectory_from_dict, trajectory_to_dict
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from tests.builders import agent, assistant, call_part, chat, tool

TESTDATA = Path(__file__).resolve().parents[1] / "testdata"
PARALLEL = spec_from_dict({"max_parallel": 1})

# format, file, model turns, messages as (role, before_step), max_parallel=1 violations at steps
CAPTURED = [
    ("langgraph", "langgraph/parallel_failing.json", (1, 1, 4), [("user", 0), ("agent", 3)], [1]),
    ("langgraph", "langgraph/clean.json", (1, 3, 5), [("user", 0), ("agent", 3)], []),
    ("otlp", "langgraph/parallel_failing.openinference.otlp", (0, 0, 1), [("user", 0), ("agent", 3)], [1]),
    ("otlp", "langgraph/parallel_failing.traceloop.otlp", (0, 0, 1), [("user", 0), ("agent", 3)], [1]),
    ("otlp-json", "langgraph/parallel_failing.openinference.otlp.json", (0, 0, 1), [("user", 0), ("agent", 3)], [1]),
    ("otlp", "otlp/clean.openai-agents.otlp", (0, 1, 2), [("user", 0), ("agent", 3)], []),
    # A tool that raises, then a retry and an escalation asked for in one model turn.
    ("otlp", "otlp/failing.openai-agents.otlp", (0, 1, 1), [("user", 0), ("agent", 3)], [2]),
    # Content capture off: no messages, but tool spans still answer the model span before them.
    ("otlp", "otlp/clean.openai-agents.nocontent.otlp", (0, 1, 2), [], []),
    ("n8n", "n8n/parallel.json", (0, 0), [("user", 0)], [1]),
    ("n8n", "n8n/clean.json", (0, 1, 2), [("user", 0)], []),
    ("n8n", "n8n/stored/clean.json", (0, 1, 2), [("user", 0)], []),
    ("crewai", "crewai/failing_parallel.json", (0, 0), [], [1]),
    ("crewai", "crewai/two_agents.json", (0, 1, 2), [], []),
]


@pytest.mark.parametrize("fmt, file, turns, messages, over", CAPTURED, ids=[c[1] for c in CAPTURED])
def test_captured_runs_carry_turns_and_messages(fmt, file, turns, messages, over):
    path = TESTDATA / file
    [traj] = reader(fmt)(path.read_bytes(), str(path))
    assert traj.model_turns == turns
    assert [(m.role, m.before_step) for m in traj.messages] == messages
    assert [v.step for v in grade(traj, PARALLEL).violations if v.check == "max_parallel"] == over


CONFIRM = spec_from_dict({"tools": ["get", "cancel"], "confirm": ["cancel"]})
ASK = "Reservation R-1: refundable. Cancel it?"


def lc(*script):
    """Real LangChain messages from a compact script: ("user", text), ("ask", text), ("call", tool, id, text)."""
    out = []
    for kind, *rest in script:
        if kind == "user":
            out.append(HumanMessage(content=rest[0]))
        elif kind == "ask":
            out.append(AIMessage(content=rest[0]))
        else:
            tool_name, call_id, narration = rest
            out.append(
                AIMessage(
                    content=narration,
                    tool_calls=[{"name": tool_name, "args": {"id": "R-1"}, "id": call_id, "type": "tool_call"}],
                )
            )
            out.append(ToolMessage(content="ok", tool_call_id=call_id))
    return out


LANGGRAPH_CONFIRM = [
    (
        "yes after the question",
        lc(
            ("user", "cancel R-1"),
            ("call", "get", "c1", ""),
            ("ask", ASK),
            ("user", "yes"),
            ("call", "cancel", "c2", ""),
        ),
        [],
    ),
    (
        "narration beside the call is not a message",
        lc(
            ("user", "cancel R-1"),
            ("call", "get", "c1", ""),
            ("ask", ASK),
            ("user", "yes please"),
            ("call", "cancel", "c2", "Cancelling R-1 now."),
        ),
        [],
    ),
    (
        "yes before the question",
        lc(
            ("user", "yes, cancel R-1"),
            ("call", "get", "c1", ""),
            ("ask", ASK),
            ("user", "how long does the refund take?"),
            ("call", "cancel", "c2", ""),
        ),
        [1],
    ),
    (
        "no reply to the question",
        lc(("user", "yes cancel R-1"), ("call", "get", "c1", ""), ("ask", ASK), ("call", "cancel", "c2", "")),
        [1],
    ),
]


@pytest.mark.parametrize("name, messages, flagged", LANGGRAPH_CONFIRM, ids=[c[0] for c in LANGGRAPH_CONFIRM])
def test_langgraph_confirm(name, messages, flagged):
    traj = trajectory_from_messages(messages, id=name)
    assert [s.tool for s in traj.steps] == ["get", "cancel"]
    assert [v.step for v in grade(traj, CONFIRM).violations if v.check == "confirm"] == flagged


def _conversation_spans(sub_agent_says: str | None = None, cancel_after_yes: bool = True):
    user = {"role": "user", "parts": [{"type": "text", "content": "cancel R-1"}]}
    get_call = assistant(call_part("get", {"id": "R-1"}, "c1"))
    get_result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "R-1 ok"}]}
    ask = {"role": "assistant", "parts": [{"type": "text", "content": ASK}]}
    yes = {"role": "user", "parts": [{"type": "text", "content": "Yes, go ahead" if cancel_after_yes else "hmm"}]}
    spans = [
        agent(1, None, "support", 0, 10_000),
        chat(2, 1, 100, 200, inputs=[user], outputs=[get_call]),
        tool(3, 1, "get", 300, {"id": "R-1"}, "R-1 ok", gen_ai__tool__call__id="c1"),
        chat(4, 1, 400, 500, inputs=[user, get_call, get_result], outputs=[ask]),
        chat(
            5,
            1,
            600,
            700,
            inputs=[user, get_call, get_result, ask, yes],
            outputs=[assistant(call_part("cancel", {"id": "R-1"}, "c2"))],
        ),
        tool(6, 1, "cancel", 800, {"id": "R-1"}, "done", gen_ai__tool__call__id="c2"),
    ]
    if sub_agent_says is not None:
        # An agent used as a tool: its model's "user" is the orchestrator, in a context of its own.
        order = {"role": "user", "parts": [{"type": "text", "content": sub_agent_says}]}
        spans.append(
            chat(
                7,
                1,
                210,
                290,
                inputs=[order],
                outputs=[{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}],
            )
        )
    return spans


OTLP_CONFIRM = [
    ("yes after the question", _conversation_spans(), []),
    ("no yes", _conversation_spans(cancel_after_yes=False), [1]),
    ("an orchestrator's 'proceed' is not the user's", _conversation_spans("Proceed: cancel R-1, the user agreed."), []),
]


@pytest.mark.parametrize("name, spans, flagged", OTLP_CONFIRM, ids=[c[0] for c in OTLP_CONFIRM])
def test_otlp_confirm_from_model_input_messages(name, spans, flagged):
    traj = trajectory_from_spans(spans)
    assert [s.tool for s in traj.steps] == ["get", "cancel"]
    assert [v.step for v in grade(traj, CONFIRM).violations if v.check == "confirm"] == flagged
    assert "Proceed: cancel R-1, the user agreed." not in [m.text for m in traj.messages]


def test_otlp_user_message_events_placed_by_time():
    # No model span recorded its input: user message events on the agent span are placed by timestamp.
    from luckrate.adapters.otlp import SpanEvent
    from tests.builders import S

    events = (
        SpanEvent("gen_ai.user.message", S + 50, (("content", "cancel R-1"),)),
        SpanEvent("gen_ai.user.message", S + 350, (("content", "yes"),)),
    )
    spans = [
        agent(1, None, "support", 0, 10_000, events=events),
        tool(3, 1, "get", 300, {"id": "R-1"}, "ok"),
        tool(6, 1, "cancel", 400, {"id": "R-1"}, "done"),
    ]
    traj = trajectory_from_spans(spans)
    assert [(m.role, m.text, m.before_step) for m in traj.messages] == [("user", "cancel R-1", 0), ("user", "yes", 1)]
    assert traj.model_turns == ()  # no model span: which turn issued a call is unknown
    assert "max_parallel (no model turns recorded)" in grade(traj, PARALLEL).skipped


def test_otlp_tool_spans_answering_one_model_span_share_its_turn():
    # Output messages not captured: the two tool spans after one model call were issued in its turn.
    spans = [
        agent(1, None, "support", 0, 10_000),
        chat(2, 1, 100, 200),
        tool(3, 1, "get", 300),
        tool(4, 1, "get", 310),
        chat(5, 1, 400, 500),
        tool(6, 1, "cancel", 600),
    ]
    traj = trajectory_from_spans(spans)
    assert traj.model_turns == (0, 0, 1)
    assert [v.step for v in grade(traj, PARALLEL).violations] == [1]


def test_file_form_round_trip():
    path = TESTDATA / "langgraph/parallel_failing.json"
    [traj] = reader("langgraph")(path.read_bytes(), str(path))
    again = trajectory_from_dict(json.loads(json.dumps(trajectory_to_dict(traj))))
    assert again == traj


def test_file_form_messages_default_the_input():
    traj = trajectory_from_dict(
        {
            "id": "r",
            "steps": [{"tool": "get"}],
            "messages": [
                {"role": "user", "text": "cancel R-1", "before_step": 0},
                {"role": "user", "text": "yes", "before_step": 1},
            ],
        }
    )
    assert traj.inputs == ("cancel R-1", "yes")


BAD_FILE_FORM = [
    ({"messages": {}}, "run 'r': 'messages' must be a list"),
    (
        {"messages": [{"role": "bot", "text": "x", "before_step": 0}]},
        "run 'r' messages[0]: 'role' must be \"user\" or \"agent\"",
    ),
    ({"messages": [{"role": "user", "before_step": 0}]}, "run 'r' messages[0]: missing 'text' (a string)"),
    (
        {"messages": [{"role": "user", "text": "x", "before_step": 2}]},
        "run 'r' messages[0]: 'before_step' must be an integer from 0 to 1 (messages in order)",
    ),
    (
        {
            "messages": [
                {"role": "user", "text": "x", "before_step": 1},
                {"role": "user", "text": "y", "before_step": 0},
            ]
        },
        "run 'r' messages[1]: 'before_step' must be an integer from 1 to 1 (messages in order)",
    ),
    ({"model_turns": [0, 1]}, "run 'r': 'model_turns' must be a list with one entry per step (1)"),
    ({"model_turns": ["a"]}, "run 'r' model_turns[0]: must be an integer or null"),
]


@pytest.mark.parametrize("extra, error", BAD_FILE_FORM, ids=[e[1] for e in BAD_FILE_FORM])
def test_file_form_bad_messages_and_turns(extra, error):
    with pytest.raises(InvalidInput) as err:
        trajectory_from_dict({"id": "r", "steps": [{"tool": "get"}], **extra})
    assert str(err.value) == error


BAD_KEYS_AND_TYPES = [
    # A misspelt key was dropped: the run was graded with no steps, or without its output verdict.
    ({"stpes": [{"tool": "get"}]}, "run 'r': unknown key 'stpes' (did you mean 'steps'?)"),
    ({"outptu_ok": True}, "run 'r': unknown key 'outptu_ok' (did you mean 'output_ok'?)"),
    ({"steps": [{"tool": "get", "agrs": {}}]}, "run 'r' steps[0]: unknown key 'agrs' (did you mean 'args'?)"),
    (
        {"messages": [{"role": "user", "txt": "x", "text": "x", "before_step": 0}]},
        "run 'r' messages[0]: unknown key 'txt' (did you mean 'text'?)",
    ),
    ({"zzz": 1}, "run 'r': unknown key 'zzz'"),
    # "false" (a string) was read as True.
    ({"content": "false"}, "run 'r': 'content' must be true or false, got string"),
    ({"steps": {"tool": "get"}}, "run 'r': 'steps' must be a list, got object"),
    (
        {"stpes": [], "content": 0, "steps": [{"tool": ""}, {"tool": "get", "t": "now"}]},
        "4 problems in run 'r'\n"
        "  unknown key 'stpes' (did you mean 'steps'?)\n"
        "  'content' must be true or false, got number\n"
        "  steps[0]: missing 'tool' (a non-empty string)\n"
        "  steps[1]: 't' must be a number",
    ),
]


@pytest.mark.parametrize("extra, error", BAD_KEYS_AND_TYPES, ids=[e[1].splitlines()[0] for e in BAD_KEYS_AND_TYPES])
def test_file_form_unknown_keys_and_wrong_types_are_named(extra, error):
    with pytest.raises(InvalidInput) as err:
        trajectory_from_dict({"id": "r", **extra})
    assert str(err.value) == error


def test_file_form_known_keys_still_read():
    traj = trajectory_from_dict(
        {
            "id": "r",
            "content": False,
            "steps": [
                {
                    "index": 0,
                    "tool": "get",
                    "args": {},
                    "result": None,
                    "error": None,
                    "t": 0,
                    "duration": 0,
                    "agent": None,
                    "call_id": None,
                }
            ],
        }
    )
    assert traj.content is False and [s.tool for s in traj.steps] == ["get"]


def _n8n_with_memory(prompt: str | None) -> dict:
    """The captured clean execution; with ``prompt``, its first model call was prompted with chat memory
    (a variant derived from the real file, as n8n writes a memory-backed prompt)."""
    execution = json.loads((TESTDATA / "n8n/clean.json").read_text())
    if prompt is not None:
        first = execution["data"]["resultData"]["runData"]["OpenAI Chat Model"][0]
        first["inputOverride"]["ai_languageModel"][0][0]["json"]["messages"] = [prompt]
    return execution


N8N_CONFIRM = [
    ("no memory: the request answers nothing", None, [1]),
    (
        "memory: the yes answers the agent's question",
        "System: You are a support agent.\nHuman: Refund ORD-12345 please.\nAI: ORD-12345 was delivered (129). "
        "Refund it?\nHuman: yes",
        [],
    ),
    (
        "memory: the last user message does not affirm",
        "System: You are a support agent.\nHuman: yes refund ORD-12345\nAI: Which amount?\nHuman: all of it",
        [1],
    ),
]


@pytest.mark.parametrize("name, prompt, flagged", N8N_CONFIRM, ids=[c[0] for c in N8N_CONFIRM])
def test_n8n_confirm_reads_the_prompted_conversation(name, prompt, flagged):
    from luckrate.adapters.n8n import trajectories_from_n8n

    [traj] = trajectories_from_n8n(_n8n_with_memory(prompt), "clean.json")
    spec = spec_from_dict({"confirm": ["issue_refund"]})
    assert [v.step for v in grade(traj, spec).violations if v.check == "confirm"] == flagged
    assert all(m.before_step == 0 for m in traj.messages)


def test_otlp_later_user_turns_are_input_too():
    # A value the user gives in a later turn is the user's (provenance reads the input): the first model
    # call's input alone held only the opening request.
    traj = trajectory_from_spans(_conversation_spans())
    assert traj.inputs == ("cancel R-1", "Yes, go ahead")

"""A real LangGraph tool-calling agent on a scripted fake chat model, replaying tests/scenarios.py.

- ``run_scenario(scenario)`` runs the agent and returns its final message list (what the LangGraph
  adapter reads).
- ``spans_for(scenario, "openinference" | "traceloop")`` runs the same agent under
  ``openinference-instrumentation-langchain`` or ``opentelemetry-instrumentation-langchain``
  (Traceloop/OpenLLMetry) with an SDK TracerProvider and InMemorySpanExporter, and returns the finished
  spans as a serialized OTLP ``ExportTraceServiceRequest``. A root span opened around the run carries
  ``luckrate.output_ok=True``, the way a user's eval harness would mark a passing output.

The graph is the standard agent loop (agent node -> ToolNode -> agent) built from a StateGraph, not
the deprecated ``create_react_agent``. Tool-call ids are deterministic (``call_<turn>_<n>``) so
captures are stable; span ids and timestamps are not.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import ConfigDict

from tests.scenarios import Ask, Call, Scenario

Instrumentation = Literal["openinference", "traceloop"]
OUTPUT_OK_KEY = "luckrate.output_ok"
AGENT_NAME = "support_agent"
MODEL_NAME = "scripted-model"


PARALLEL_FAILING = Scenario(
    "parallel_failing",
    "Look up orders A and B.",
    (
        (
            Call("lookup_order", {"order_id": "A"}, "order A"),
            Call("lookup_order", {"order_id": "B"}, error="no such order"),
        ),
        (Call("escalate_to_human", {"reason": "B is missing"}, "ticket T-1"),),
    ),
    "A is fine; B was escalated.",
)
"""Beyond tests/scenarios.py: two calls in one model turn, one of which fails (an error ToolMessage)."""


class ToolFailed(Exception):
    """What a scripted tool raises for a call whose scenario sets ``error``."""


class ScriptedChatModel(BaseChatModel):
    """Emits the scenario's turns as tool calls, then its answer; the turn is the number of AI
    messages already in the conversation, so the model keeps no state between calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    scenario: Scenario
    model_name: str = MODEL_NAME

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        # The script already names the tools; binding changes nothing.
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        turns = self.scenario.turns
        if turn < len(turns) and isinstance(turns[turn], Ask):
            message = AIMessage(content=turns[turn].text)
        elif turn < len(turns):
            calls = [
                {"name": c.tool, "args": dict(c.args), "id": f"call_{turn}_{n}", "type": "tool_call"}
                for n, c in enumerate(turns[turn])
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=self.scenario.answer)
        return ChatResult(generations=[ChatGeneration(message=message)])


class _Script:
    """The scripted calls not yet answered; tools claim them by name and arguments. Parallel calls
    in one turn run on ToolNode's thread pool, hence the lock."""

    def __init__(self, scenario: Scenario):
        self._pending = scenario.calls
        self._lock = threading.Lock()

    def answer(self, tool: str, args: dict[str, Any]) -> str:
        with self._lock:
            call = next((c for c in self._pending if c.tool == tool and c.args == args), None)
            if call is None:
                raise AssertionError(f"unscripted call {tool}({args!r})")
            self._pending.remove(call)
        return _outcome(call)


def _outcome(call: Call) -> str:
    if call.error is not None:
        raise ToolFailed(call.error)
    return call.result if call.result is not None else ""


def _tools(script: _Script) -> list[BaseTool]:
    """The tools of tests/scenarios.py (POLICY_TOOLS), with real argument schemas."""

    def lookup_order(order_id: str) -> str:
        """Look up an order by id."""
        return script.answer("lookup_order", {"order_id": order_id})

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        return script.answer("issue_refund", {"order_id": order_id, "amount": amount})

    def fetch_webpage(url: str) -> str:
        """Fetch a web page's text."""
        return script.answer("fetch_webpage", {"url": url})

    def send_email(to: str, body: str) -> str:
        """Send an email."""
        return script.answer("send_email", {"to": to, "body": body})

    def delete_account(user_id: str) -> str:
        """Delete a user's account."""
        return script.answer("delete_account", {"user_id": user_id})

    def escalate_to_human(reason: str) -> str:
        """Hand the conversation to a human."""
        return script.answer("escalate_to_human", {"reason": reason})

    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return script.answer("cancel_order", {"order_id": order_id})

    fns: list[Callable[..., str]] = [
        lookup_order,
        issue_refund,
        fetch_webpage,
        send_email,
        delete_account,
        escalate_to_human,
        cancel_order,
    ]
    return [StructuredTool.from_function(f) for f in fns]


def _tool_error(e: ToolFailed) -> str:
    # ToolNode infers the handled type from this annotation: only scripted failures become error
    # ToolMessages (status="error"); anything else (an unscripted call) still fails the run.
    return str(e)


def build_agent(scenario: Scenario, **compile_kwargs: Any):
    """The compiled graph: agent -> tools -> agent until the model answers without tool calls.
    ``compile_kwargs`` go to ``StateGraph.compile`` (e.g. a checkpointer and ``interrupt_before``)."""
    tools = _tools(_Script(scenario))
    model = ScriptedChatModel(scenario=scenario).bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=_tool_error))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=AGENT_NAME, **compile_kwargs)


def run_scenario(scenario: Scenario) -> list[BaseMessage]:
    """Run the agent on the scenario's user message, and again on the user's reply after each ``Ask``
    turn (the graph ends when the model answers in text); return the final message list."""
    graph = build_agent(scenario)
    messages: list[BaseMessage] = [HumanMessage(content=scenario.user)]
    for _ in range(len(scenario.turns) + 1):
        messages = list(graph.invoke({"messages": messages})["messages"])
        asked = sum(isinstance(m, AIMessage) for m in messages) - 1
        if not (asked < len(scenario.turns) and isinstance(scenario.turns[asked], Ask)):
            return messages
        messages.append(HumanMessage(content=scenario.turns[asked].reply))
    raise AssertionError("the scripted conversation did not end")


def run_until_interrupt(scenario: Scenario, before_turn: int) -> list[BaseMessage]:
    """Run with a human-approval pause before the tools node and stop at the pause before turn
    ``before_turn``'s tools run: the last AI message's calls then have no results (a real way for a
    LangGraph run to end with calls unanswered)."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_agent(scenario, checkpointer=InMemorySaver(), interrupt_before=["tools"])
    config = {"configurable": {"thread_id": scenario.name}}
    state = graph.invoke({"messages": [HumanMessage(content=scenario.user)]}, config)
    for _ in range(before_turn):
        state = graph.invoke(None, config)  # approve: run the paused tools, continue to the next pause
    return list(state["messages"])


def _instrumentor(kind: Instrumentation):
    if kind == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        return LangChainInstrumentor()
    if kind == "traceloop":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        return LangchainInstrumentor()
    raise ValueError(f"unknown instrumentation {kind!r} (openinference or traceloop)")


def capture_spans(scenario: Scenario, instrumentation: Instrumentation) -> list:
    """Run the scenario under the instrumentation; return the finished SDK spans (ReadableSpan)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = _instrumentor(instrumentation)
    instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = provider.get_tracer("luckrate.fixtures")
        with tracer.start_as_current_span(f"eval {scenario.name}") as root:
            run_scenario(scenario)
            root.set_attribute(OUTPUT_OK_KEY, True)
    finally:
        # Uninstrument so the other instrumentation can run next in the same process.
        instrumentor.uninstrument()
        _unwrap_leftovers()
        provider.shutdown()
    return list(exporter.get_finished_spans())


def _wrapped_targets() -> list[tuple[Any, str]]:
    from langchain_core.callbacks import BaseCallbackManager
    from langgraph.pregel import Pregel
    from langgraph.types import Command

    return [(BaseCallbackManager, "__init__"), (Pregel, "stream"), (Pregel, "astream"), (Command, "__init__")]


def _unwrap_leftovers() -> None:
    """Undo the patches that opentelemetry-instrumentation-langchain's uninstrument misses.

    It unwraps ``unwrap("langchain_core.callbacks", "BaseCallbackManager.__init__")`` (and the same for
    ``Pregel.stream``/``astream``, ``Command.__init__``), which resolves a dotted *attribute* on the
    module and silently finds nothing, so its callback handler, bound to the old TracerProvider, stays
    installed: the next run's spans go to a shut-down provider. We unwrap the classes directly."""
    from wrapt import BaseObjectProxy

    for owner, attr in _wrapped_targets():
        while isinstance(vars(owner).get(attr), BaseObjectProxy):
            setattr(owner, attr, vars(owner)[attr].__wrapped__)


def spans_for(scenario: Scenario, instrumentation: Instrumentation) -> bytes:
    """The scenario's spans under the instrumentation, as a serialized ExportTraceServiceRequest."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(capture_spans(scenario, instrumentation)).SerializeToString()

"""The shared scenarios replayed through a real pydantic-ai ``Agent`` under its built-in OpenTelemetry
instrumentation, in every data-format version it offers.

Real parts: pydantic-ai's ``Agent``, its tool machinery and ``InstrumentationSettings`` (the spans are
pydantic-ai's own), the OTel SDK's in-memory exporter and OTLP protobuf encoder. The model is
pydantic-ai's own test double ``FunctionModel``, scripted to return the scenario's turns as
``ToolCallPart``s (call ids ``call_<turn>_<n>``) and then the answer.

    spans_for(scenario, version=5)               # serialized ExportTraceServiceRequest, content on
    spans_for(scenario, version=2, capture=False)
    spans_for(scenario, multi_agent=True)        # triage_agent delegates to support_agent through a tool

``VERSIONS`` are the ``InstrumentationSettings(version=...)`` values the installed pydantic-ai accepts
(2-6 in 2.x; version 1, the event-based format, was removed in 2.0: it is captured under 1.x by
tests/testdata/pydantic-ai/capture.py, which runs this module there).
"""

from __future__ import annotations

import asyncio
import threading
import typing
import warnings
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from tests.scenarios import Ask, Call, Scenario, ScriptedTools

OUTPUT_OK_KEY = "luckrate.output_ok"
AGENT = "support_agent"
TRIAGE = "triage_agent"
HANDOFF = "transfer_to_support_agent"
VERSIONS: tuple[int, ...] = typing.get_args(typing.get_type_hints(InstrumentationSettings)["version"])
"""Every ``version=`` the installed pydantic-ai accepts (2-6 in 2.x, 1-5 in 1.x)."""
_LOCK = threading.Lock()


def _instrumented(settings: InstrumentationSettings) -> dict[str, Any]:
    """How an agent takes its instrumentation: a capability in 2.x, the ``instrument`` argument in 1.x
    (tests/testdata/pydantic-ai/capture.py runs this module under 1.x for version 1)."""
    try:
        from pydantic_ai.capabilities import Instrumentation
    except ImportError:
        return {"instrument": settings}
    return {"capabilities": [Instrumentation(settings)]}


def _script(turns: tuple, answer: str):
    """A FunctionModel function: the turn is the number of model responses already in the history; an
    ``Ask`` turn answers in text (ending the run, so the user can reply)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn >= len(turns):
            return ModelResponse(parts=[TextPart(answer)])
        if isinstance(turns[turn], Ask):
            return ModelResponse(parts=[TextPart(turns[turn].text)])
        return ModelResponse(
            parts=[
                ToolCallPart(c.tool, dict(c.args), tool_call_id=f"call_{turn}_{n}") for n, c in enumerate(turns[turn])
            ]
        )

    return respond


def _support(scenario: Scenario, settings: InstrumentationSettings) -> Agent:
    script = ScriptedTools(scenario)
    agent = Agent(
        FunctionModel(_script(scenario.turns, scenario.answer), model_name="scripted-chat"),
        name=AGENT,
        instructions="You help customers with orders.",
        **_instrumented(settings),
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return script.answer("lookup_order")

    @agent.tool_plain
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return script.answer("issue_refund")

    @agent.tool_plain
    def fetch_webpage(url: str) -> str:
        """Fetch a web page."""
        return script.answer("fetch_webpage")

    @agent.tool_plain
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        return script.answer("send_email")

    @agent.tool_plain
    def delete_account(user_id: str) -> str:
        """Delete a user's account."""
        return script.answer("delete_account")

    @agent.tool_plain
    def escalate_to_human(reason: str) -> str:
        """Hand the conversation to a person."""
        return script.answer("escalate_to_human")

    return agent


def _triage(scenario: Scenario, settings: InstrumentationSettings) -> Agent:
    """pydantic-ai's multi-agent pattern: agent delegation, a tool that runs another agent."""
    support = _support(scenario, settings)
    triage = Agent(
        FunctionModel(
            _script(((Call(HANDOFF, {"request": scenario.user}),),), scenario.answer), model_name="scripted-chat"
        ),
        name=TRIAGE,
        instructions="Route the customer to the right agent.",
        **_instrumented(settings),
    )

    @triage.tool
    async def transfer_to_support_agent(ctx: RunContext[None], request: str) -> str:
        """Hand the request to the support agent."""
        result = await support.run(request, usage=ctx.usage)
        return result.output

    return triage


def run(
    scenario: Scenario,
    *,
    version: int = 5,
    capture: bool = True,
    multi_agent: bool = False,
    output_ok: bool | None = True,
) -> list[Any]:
    """Run the scenario; return the finished OTel SDK spans (ReadableSpan)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated (and still what deployments run)
        settings = InstrumentationSettings(tracer_provider=provider, include_content=capture, version=version)
    agent = _triage(scenario, settings) if multi_agent else _support(scenario, settings)
    tracer = provider.get_tracer("tests.frameworks.pydantic_ai_agent")
    with _LOCK:
        if output_ok is None:
            asyncio.run(_converse(agent, scenario))
        else:
            with tracer.start_as_current_span(f"eval {scenario.name}", attributes={OUTPUT_OK_KEY: output_ok}):
                asyncio.run(_converse(agent, scenario))
    return list(exporter.get_finished_spans())


async def _converse(agent: Agent, scenario: Scenario) -> None:
    """One run per user message: the scenario's, then the user's reply after each ``Ask`` turn, each run
    continuing the conversation so far (``message_history``)."""
    history = None
    prompt = scenario.user
    for reply in [turn.reply for turn in scenario.turns if isinstance(turn, Ask)] + [None]:
        result = await agent.run(prompt, message_history=history)
        if reply is None:
            return
        history, prompt = result.all_messages(), reply


def spans_for(scenario: Scenario, **kwargs: Any) -> bytes:
    """The scenario's spans as a serialized ExportTraceServiceRequest."""
    return encode_spans(run(scenario, **kwargs)).SerializeToString()

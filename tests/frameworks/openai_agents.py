"""The shared scenarios replayed through the real OpenAI Agents SDK under a GenAI-conventions instrumentation.

Real parts: the Agents SDK's ``Runner`` and function tools, the contrib
``opentelemetry-instrumentation-openai-agents-v2`` processor, the OTel SDK's in-memory exporter and
OTLP protobuf encoder. The one stand-in is the model (no LLM is reachable here): ``ScriptedChatModel``
implements the SDK's ``Model`` interface and records its generation span the way the SDK's own
``OpenAIChatCompletionsModel`` does (chat-completions messages in, the assistant message out), so the
instrumentation sees what it would see from a real provider.

    spans_for(scenario) -> bytes           # serialized ExportTraceServiceRequest, content captured
    spans_for(scenario, capture=False)     # content capture off
    spans_for(scenario, multi_agent=True)  # a triage agent hands off to the support agent
    spans_for(scenario, instrumentation="genai")  # the python-genai bridge instead of the contrib one

``instrumentation="genai"`` uses ``opentelemetry-instrumentation-genai-openai-agents`` (util-genai):
``invoke_workflow`` → ``invoke_agent`` → ``execute_tool`` spans, compact JSON arguments, and no model
spans or input messages of its own (those come from a separate OpenAI client instrumentation, which a
scripted model never reaches) — so its traces carry no user input.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.models.chatcmpl_converter import Converter
from agents.models.interface import Model, ModelTracing
from agents.tracing import generation_span, set_trace_processors
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.scenarios import Ask, Call, Scenario, ScriptedTools

OUTPUT_OK_KEY = "luckrate.output_ok"
AGENT = "support_agent"
TRIAGE = "triage_agent"
FAILING = Scenario(
    "failing",
    "Refund order ORD-12345.",
    (
        (Call("lookup_order", {"order_id": "ORD-12345"}, error="order service down"),),
        (Call("lookup_order", {"order_id": "ORD-12345"}, "{}"), Call("escalate_to_human", {"reason": "x"}, "ok")),
    ),
    "Escalated.",
)
"""A tool that raises, then two calls in one model turn (beyond tests/scenarios.py)."""
_LOCK = threading.Lock()  # the instrumentor and the SDK's trace provider are process-global


class ScriptedChatModel(Model):
    """Returns the scenario's turns in order: each turn's tool calls, then the answer text."""

    def __init__(self, turns: Sequence[Sequence[Call] | Ask], answer: str, prefix: str = "call"):
        self._outputs = [
            [_text(turn.text)] if isinstance(turn, Ask) else self._tool_turn(i, turn, prefix)
            for i, turn in enumerate(turns)
        ]
        self._outputs.append([_text(answer)])

    @staticmethod
    def _tool_turn(i: int, turn: Sequence[Call], prefix: str) -> list[Any]:
        return [
            ResponseFunctionToolCall(
                id=f"fc_{prefix}_{i}_{j}",
                call_id=f"{prefix}_{i}_{j}",
                type="function_call",
                name=call.tool,
                arguments=json.dumps(call.args),
            )
            for j, call in enumerate(turn)
        ]

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing: ModelTracing,
        *,
        previous_response_id=None,
        conversation_id=None,
        prompt=None,
    ) -> ModelResponse:
        output = self._outputs.pop(0)
        with generation_span(model="scripted-chat", disabled=tracing.is_disabled()) as span:
            if tracing.include_data():
                messages = Converter.items_to_messages(input)
                if system_instructions:
                    messages.insert(0, {"role": "system", "content": system_instructions})
                span.span_data.input = messages
                span.span_data.output = [_assistant_message(output)]
            span.span_data.usage = {"input_tokens": 10, "output_tokens": 5}
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the fixtures run non-streamed")


def _text(answer: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_answer",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=answer, type="output_text", annotations=[])],
    )


def _assistant_message(output: list[Any]) -> dict[str, Any]:
    calls = [
        {"id": o.call_id, "type": "function", "function": {"name": o.name, "arguments": o.arguments}}
        for o in output
        if isinstance(o, ResponseFunctionToolCall)
    ]
    text = "".join(c.text for o in output if isinstance(o, ResponseOutputMessage) for c in o.content)
    return {"role": "assistant", "content": text or None, "tool_calls": calls or None}


def _tools(script: ScriptedTools) -> list[Any]:
    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return script.answer("lookup_order")

    @function_tool
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return script.answer("issue_refund")

    @function_tool
    def fetch_webpage(url: str) -> str:
        """Fetch a web page."""
        return script.answer("fetch_webpage")

    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        return script.answer("send_email")

    @function_tool
    def delete_account(user_id: str) -> str:
        """Delete a user's account."""
        return script.answer("delete_account")

    @function_tool
    def escalate_to_human(reason: str) -> str:
        """Hand the conversation to a person."""
        return script.answer("escalate_to_human")

    @function_tool
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return script.answer("cancel_order")

    return [lookup_order, issue_refund, fetch_webpage, send_email, delete_account, escalate_to_human, cancel_order]


def _agents(scenario: Scenario, multi_agent: bool) -> Agent:
    support = Agent(
        name=AGENT,
        instructions="You help customers with orders.",
        tools=_tools(ScriptedTools(scenario)),
        model=ScriptedChatModel(scenario.turns, scenario.answer),
        model_settings=ModelSettings(parallel_tool_calls=True),
    )
    if not multi_agent:
        return support
    handoff = Call("transfer_to_support_agent", {})
    return Agent(
        name=TRIAGE,
        instructions="Route the customer to the right agent.",
        handoffs=[support],
        model=ScriptedChatModel([[handoff]], "unused", prefix="triage"),
    )


def run(
    scenario: Scenario,
    *,
    capture: bool = True,
    multi_agent: bool = False,
    output_ok: bool | None = True,
    instrumentation: str = "contrib",
) -> list[Any]:
    """Run the scenario and return the finished OTel SDK spans (ReadableSpan).

    With ``output_ok`` set, a root span opened around the run carries ``luckrate.output_ok`` (the way
    a user's eval harness marks the output); the instrumentation's spans nest under it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with _LOCK:
        set_trace_processors([])  # drop the SDK's default exporter to OpenAI's backend (no network here)
        instrumentor, restore = _instrumentor(instrumentation, provider, capture)
        try:
            config = RunConfig(workflow_name=f"scenario {scenario.name}", trace_include_sensitive_data=capture)
            with _eval_span(provider, scenario, output_ok):
                asyncio.run(_converse(_agents(scenario, multi_agent), scenario, config))
        finally:
            instrumentor.uninstrument()
            restore()
    return list(exporter.get_finished_spans())


async def _converse(agent: Agent, scenario: Scenario, config: RunConfig) -> None:
    """One run per user message: the scenario's, then the user's reply after each ``Ask`` turn (a run
    ends when the model answers in text), each run continuing the conversation so far."""
    conversation: Any = scenario.user
    for reply in [turn.reply for turn in scenario.turns if isinstance(turn, Ask)] + [None]:
        result = await Runner.run(agent, conversation, run_config=config)
        if reply is None:
            return
        agent = result.last_agent
        conversation = result.to_input_list() + [{"role": "user", "content": reply}]


_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _instrumentor(kind: str, provider: TracerProvider, capture: bool) -> tuple[Any, Any]:
    """The contrib ``-openai-agents-v2`` instrumentor (content flag as a kwarg), or the python-genai
    ``-genai-openai-agents`` one (content via util-genai's environment variable, set for the run)."""
    if kind == "contrib":
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider, capture_message_content=capture)
        return instrumentor, lambda: None
    from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor as GenAIInstrumentor

    previous = os.environ.get(_CAPTURE_ENV)
    os.environ[_CAPTURE_ENV] = "SPAN_ONLY" if capture else "NO_CONTENT"

    def restore() -> None:
        if previous is None:
            os.environ.pop(_CAPTURE_ENV, None)
        else:
            os.environ[_CAPTURE_ENV] = previous

    instrumentor = GenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor, restore


@contextmanager
def _eval_span(provider: TracerProvider, scenario: Scenario, output_ok: bool | None) -> Iterator[None]:
    if output_ok is None:
        yield
        return
    tracer = provider.get_tracer("tests.frameworks.openai_agents")
    with tracer.start_as_current_span(f"eval {scenario.name}", attributes={OUTPUT_OK_KEY: output_ok}):
        yield


def spans_for(
    scenario: Scenario,
    *,
    capture: bool = True,
    multi_agent: bool = False,
    output_ok: bool | None = True,
    instrumentation: str = "contrib",
) -> bytes:
    """The scenario's spans as a serialized ExportTraceServiceRequest."""
    spans = run(
        scenario, capture=capture, multi_agent=multi_agent, output_ok=output_ok, instrumentation=instrumentation
    )
    return encode_spans(spans).SerializeToString()

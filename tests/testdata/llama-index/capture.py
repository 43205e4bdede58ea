"""Capture LlamaIndex agent spans under openinference-instrumentation-llama-index from real
``FunctionAgent`` runs on a scripted function-calling LLM (no network).

llama-index-core brings ~45 packages (numpy, nltk, sqlalchemy, aiohttp, tiktoken...) into luckrate's
test venv for one fixture, so it runs in a scratch venv and the captures are committed; see README.md.
Each output file is one serialized ExportTraceServiceRequest.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import (  # noqa: E402
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms.callbacks import llm_chat_callback  # noqa: E402
from llama_index.core.llms.function_calling import FunctionCallingLLM  # noqa: E402
from llama_index.core.llms.llm import ToolSelection  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from openinference.instrumentation import TraceConfig  # noqa: E402
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import BY_NAME, SCENARIOS, Call, Scenario, ScriptedTools  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT, TRIAGE, BILLING = "support_agent", "triage_agent", "billing_agent"


class ScriptedLLM(FunctionCallingLLM):
    """Answers with the scenario's turns as OpenAI-style tool calls (ids ``<prefix>_<turn>_<n>``), then
    its answer; the turn is the number of its own tool-call messages already in the conversation."""

    turns: list[Any]
    answer: str
    prefix: str = "call"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-chat", is_function_calling_model=True)

    def _prepare_chat_with_tools(
        self,
        tools,
        user_msg=None,
        chat_history=None,
        verbose=False,
        allow_parallel_tool_calls=False,
        tool_required=False,
        **kwargs,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if user_msg is not None:
            messages.append(
                user_msg if isinstance(user_msg, ChatMessage) else ChatMessage(role="user", content=user_msg)
            )
        return {"messages": messages, "tools": tools}

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs
    ) -> list[ToolSelection]:
        calls = response.message.additional_kwargs.get("tool_calls", [])
        return [
            ToolSelection(
                tool_id=c["id"], tool_name=c["function"]["name"], tool_kwargs=json.loads(c["function"]["arguments"])
            )
            for c in calls
        ]

    @llm_chat_callback()  # as every LlamaIndex LLM integration does: it dispatches the events the instrumentation reads
    def chat(self, messages, **kwargs) -> ChatResponse:
        return self._respond(messages)

    @llm_chat_callback()
    async def achat(self, messages, **kwargs) -> ChatResponse:
        return self._respond(messages)

    def _respond(self, messages) -> ChatResponse:
        turn = sum(
            1
            for m in messages
            if m.role == MessageRole.ASSISTANT
            and any(c["id"].startswith(self.prefix + "_") for c in m.additional_kwargs.get("tool_calls", []))
        )
        if turn >= len(self.turns):
            return ChatResponse(message=ChatMessage(role="assistant", content=self.answer))
        calls = [
            {
                "id": f"{self.prefix}_{turn}_{n}",
                "type": "function",
                "function": {"name": c.tool, "arguments": json.dumps(c.args)},
            }
            for n, c in enumerate(self.turns[turn])
        ]
        return ChatResponse(message=ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls}))

    def complete(self, prompt, formatted=False, **kwargs) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    async def acomplete(self, prompt, formatted=False, **kwargs) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    def stream_chat(self, messages, **kwargs):
        raise NotImplementedError("the agents run with streaming=False")

    async def astream_chat(self, messages, **kwargs):
        raise NotImplementedError("the agents run with streaming=False")

    def stream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError

    async def astream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError


def _tools(scenario: Scenario) -> list[FunctionTool]:
    return [FunctionTool.from_defaults(fn=f) for f in ScriptedTools(scenario).functions()]


def _workflow(scenario: Scenario, multi_agent: bool) -> Any:
    support = FunctionAgent(
        name=AGENT,
        description="Handles orders.",
        system_prompt="You help customers with orders.",
        llm=ScriptedLLM(turns=list(scenario.turns), answer=scenario.answer),
        tools=_tools(scenario),
        streaming=False,
    )
    if not multi_agent:
        return support
    handoff = Call("handoff", {"to_agent": AGENT, "reason": "an order request"})
    triage = FunctionAgent(
        name=TRIAGE,
        description="Routes requests.",
        system_prompt="Route the customer.",
        llm=ScriptedLLM(turns=[(handoff,)], answer="unused", prefix="triage"),
        tools=[],
        can_handoff_to=[AGENT],
        streaming=False,
    )
    return AgentWorkflow(agents=[triage, support], root_agent=TRIAGE)


def _team(scenario: Scenario) -> Any:
    """Three agents, as LlamaIndex's multi-agent examples build them: ``triage_agent`` hands the request to
    ``support_agent`` (the six tools), which hands it on to ``billing_agent`` (the refund and email tools)
    once it has looked the order up; billing runs the rest of the scenario and answers."""
    first, rest = scenario.turns[:1], scenario.turns[1:]
    tools = {t.metadata.name: t for t in _tools(scenario)}
    to_support = Call("handoff", {"to_agent": AGENT, "reason": "an order request"})
    to_billing = Call("handoff", {"to_agent": BILLING, "reason": "the order is looked up"})
    triage = FunctionAgent(
        name=TRIAGE,
        description="Routes requests.",
        system_prompt="Route the customer.",
        llm=ScriptedLLM(turns=[(to_support,)], answer="unused", prefix="triage"),
        tools=[],
        can_handoff_to=[AGENT],
        streaming=False,
    )
    support = FunctionAgent(
        name=AGENT,
        description="Looks orders up.",
        system_prompt="You look orders up.",
        llm=ScriptedLLM(turns=[*first, (to_billing,)], answer="unused", prefix="call"),
        tools=list(tools.values()),
        can_handoff_to=[BILLING],
        streaming=False,
    )
    billing = FunctionAgent(
        name=BILLING,
        description="Refunds, account changes and emails.",
        system_prompt="You handle refunds, accounts and emails.",
        llm=ScriptedLLM(turns=list(rest), answer=scenario.answer, prefix="billing"),
        tools=list(tools.values()),
        can_handoff_to=[],
        streaming=False,
    )
    return AgentWorkflow(agents=[triage, support, billing], root_agent=TRIAGE)


def capture(
    scenario: Scenario, content: bool, multi_agent: bool = False, name: str | None = None, team: bool = False
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hide = not content
    config = TraceConfig(hide_inputs=hide, hide_outputs=hide, hide_input_messages=hide, hide_output_messages=hide)
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=config)
    try:
        workflow = _team(scenario) if team else _workflow(scenario, multi_agent)
        with provider.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            asyncio.run(_run(workflow, scenario.user))
    finally:
        instrumentor.uninstrument()
    spans = exporter.get_finished_spans()
    stem = f"{name or scenario.name}{'.team' if team else ''}{'' if content else '.nocontent'}.llama-index"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


async def _run(workflow: Any, user: str) -> None:
    await workflow.run(user_msg=user)


if __name__ == "__main__":
    for s in SCENARIOS:
        for content in (True, False):
            capture(s, content)
    capture(BY_NAME["forbidden"], True, multi_agent=True, name="handoff")
    for s in SCENARIOS:
        for content in (True, False):
            capture(s, content, team=True)

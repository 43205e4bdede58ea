"""Capture ``opentelemetry-instrumentation-genai-llama-index`` over a LlamaIndex ``FunctionAgent`` on a
scripted function-calling LLM, in every content mode, spans and log records.

``ScriptedLLM`` is a ``FunctionCallingLLM`` (as tests/testdata/llama-index/capture.py's) that answers with the
scenario's next turn, picked by how many assistant messages the conversation holds: tool calls in the OpenAI
shape in ``additional_kwargs["tool_calls"]`` (ids ``call_<turn>_<n>``, as LlamaIndex's OpenAI integration
returns them), a question back to the user, or the answer. Its chat methods carry ``llm_chat_callback`` as
every LlamaIndex LLM integration's do. The tools are ``FunctionTool``s over tests/scenarios.py's scripted
tools; a tool that raises is reported to the model by LlamaIndex itself (a tool output marked ``is_error``).
After an ``Ask`` turn the user's reply goes to the agent with the conversation so far as its
``chat_history``. See README.md here
and tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
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
from llama_index.core.workflow import Context  # noqa: E402
from opentelemetry.instrumentation.genai.llama_index import LlamaIndexInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._genai import main, tools  # noqa: E402


class ScriptedLLM(FunctionCallingLLM):
    turns: list[Any]
    answer: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-chat", is_function_calling_model=True)

    def _prepare_chat_with_tools(
        self, tools, user_msg=None, chat_history=None, verbose=False, allow_parallel_tool_calls=False, **kwargs
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
        return [
            ToolSelection(
                tool_id=c["id"], tool_name=c["function"]["name"], tool_kwargs=json.loads(c["function"]["arguments"])
            )
            for c in response.message.additional_kwargs.get("tool_calls", [])
        ]

    @llm_chat_callback()
    def chat(self, messages, **kwargs) -> ChatResponse:
        return self._respond(messages)

    @llm_chat_callback()
    async def achat(self, messages, **kwargs) -> ChatResponse:
        return self._respond(messages)

    def _respond(self, messages) -> ChatResponse:
        turn = sum(1 for m in messages if m.role == MessageRole.ASSISTANT)
        reply = self.turns[turn] if turn < len(self.turns) else self.answer
        if isinstance(reply, Ask):
            return ChatResponse(message=ChatMessage(role="assistant", content=reply.text))
        if isinstance(reply, str):
            return ChatResponse(message=ChatMessage(role="assistant", content=reply))
        calls = [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {"name": c.tool, "arguments": json.dumps(c.args)},
            }
            for n, c in enumerate(reply)
        ]
        return ChatResponse(message=ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls}))

    def complete(self, prompt, formatted=False, **kwargs) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    async def acomplete(self, prompt, formatted=False, **kwargs) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    def stream_chat(self, messages, **kwargs):
        raise NotImplementedError("the agent runs with streaming=False")

    async def astream_chat(self, messages, **kwargs):
        raise NotImplementedError("the agent runs with streaming=False")

    def stream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError

    async def astream_complete(self, prompt, formatted=False, **kwargs):
        raise NotImplementedError


def instrument(tracer_provider, logger_provider) -> None:
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


async def _converse(scenario: Scenario) -> None:
    agent = FunctionAgent(
        name="support_agent",
        description="Handles orders.",
        system_prompt="You help customers with orders.",
        llm=ScriptedLLM(turns=list(scenario.turns), answer=scenario.answer),
        tools=[FunctionTool.from_defaults(fn=f) for f in tools(scenario)],
        streaming=False,
    )
    message, history = scenario.user, []
    for reply in [t.reply for t in scenario.turns if isinstance(t, Ask)] + [None]:
        ctx = Context(agent)
        await agent.run(user_msg=message, chat_history=history, ctx=ctx)
        if reply is None:
            return
        message, history = reply, (await ctx.store.get("memory")).get_all()


def run(scenario: Scenario) -> None:
    asyncio.run(_converse(scenario))


if __name__ == "__main__":
    main(__file__, "llama-index", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

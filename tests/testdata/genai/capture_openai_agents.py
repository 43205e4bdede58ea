"""Capture ``opentelemetry-instrumentation-genai-openai-agents`` over the OpenAI Agents SDK, with the SDK's own
``OpenAIChatCompletionsModel`` on the real ``AsyncOpenAI`` client (traced by
``opentelemetry-instrumentation-genai-openai``, as a deployment pairs them), in every content mode, spans and
log records.

The model is a scripted OpenAI-compatible chat-completions server on 127.0.0.1 (``_capture.JsonServer``
answering ``_genai.chat_completion``): the scenario's next turn, picked by how many assistant messages the
request holds. The tools are ``function_tool``s over tests/scenarios.py's scripted tools; a tool that raises is
reported to the model by the SDK itself (its default failure text). After an ``Ask`` turn the user's reply
is a second run on the conversation so far (``to_input_list()``). See README.md here and
tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import JsonServer  # noqa: E402
from tests.testdata._genai import chat_completion, main, tools  # noqa: E402


def instrument(tracer_provider, logger_provider) -> None:
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


async def _converse(scenario: Scenario, url: str) -> None:
    client = AsyncOpenAI(base_url=url + "/v1", api_key="unused-offline", max_retries=0)
    agent = Agent(
        name="support_agent",
        instructions="You help customers with orders.",
        model=OpenAIChatCompletionsModel(model="scripted-chat", openai_client=client),
        tools=[function_tool(f) for f in tools(scenario)],
    )
    config = RunConfig(tracing_disabled=False, workflow_name="support")
    conversation: object = scenario.user
    for reply in [t.reply for t in scenario.turns if isinstance(t, Ask)] + [None]:
        result = await Runner.run(agent, conversation, run_config=config)
        if reply is None:
            return
        conversation = result.to_input_list() + [{"role": "user", "content": reply}]


def run(scenario: Scenario) -> None:
    server = JsonServer(lambda body: chat_completion(scenario, body))
    try:
        asyncio.run(_converse(scenario, server.url))
    finally:
        server.close()


if __name__ == "__main__":
    main(__file__, "openai-agents", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

"""Capture ``opentelemetry-instrumentation-genai-openai-agents`` over the OpenAI Agents SDK on the real
``AsyncOpenAI`` client (traced by ``opentelemetry-instrumentation-genai-openai``, as a deployment pairs them),
in every content mode, spans and log records, with each of the SDK's model classes: ``openai-agents`` is
``OpenAIChatCompletionsModel`` (chat completions), ``openai-agents-responses`` the SDK's default
``OpenAIResponsesModel`` (the Responses API).

The model is a scripted OpenAI-compatible server on 127.0.0.1 (``_capture.JsonServer``): chat completions
answer with ``_genai.chat_completion``, the Responses API with ``response`` here; each gives the scenario's
next turn, picked by how many model turns the request holds. The tools are ``function_tool``s over tests/scenarios.py's scripted tools; a tool that raises is
reported to the model by the SDK itself (its default failure text). After an ``Ask`` turn the user's reply
is a second run on the conversation so far (``to_input_list()``). See README.md here and
tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from agents import (  # noqa: E402
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from openai import AsyncOpenAI  # noqa: E402
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import JsonServer, model_turn  # noqa: E402
from tests.testdata._genai import chat_completion, main, tools  # noqa: E402


RESPONSES = "--responses" in sys.argv
if RESPONSES:
    sys.argv.remove("--responses")


def response(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/responses: the next turn, counted by the model turns the input holds (an assistant message,
    or one turn's function calls)."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    turn = sum(
        1 for i in items if i.get("role") == "assistant" or i.get("type") == "message" and i.get("role") == "assistant"
    )
    turn += len({i["call_id"].rsplit("_", 1)[0] for i in items if i.get("type") == "function_call"})
    reply = model_turn(scenario.turns, scenario.answer, turn)
    if isinstance(reply, (Ask, str)):
        text = reply.text if isinstance(reply, Ask) else reply
        output: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": f"msg_{turn}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": f"fc_{turn}_{n}",
                "call_id": f"call_{turn}_{n}",
                "name": c.tool,
                "arguments": json.dumps(c.args),
                "status": "completed",
            }
            for n, c in enumerate(reply)
        ]
    return {
        "id": f"resp_{turn}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": "scripted-chat",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def instrument(tracer_provider, logger_provider) -> None:
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


async def _converse(scenario: Scenario, url: str) -> None:
    client = AsyncOpenAI(base_url=url + "/v1", api_key="unused-offline", max_retries=0)
    agent = Agent(
        name="support_agent",
        instructions="You help customers with orders.",
        model=(
            OpenAIResponsesModel(model="scripted-chat", openai_client=client)
            if RESPONSES
            else OpenAIChatCompletionsModel(model="scripted-chat", openai_client=client)
        ),
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
    server = JsonServer(lambda body: (response if RESPONSES else chat_completion)(scenario, body))
    try:
        asyncio.run(_converse(scenario, server.url))
    finally:
        server.close()


if __name__ == "__main__":
    framework = "openai-agents-responses" if RESPONSES else "openai-agents"
    main(
        __file__,
        framework,
        instrument,
        run,
        SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,),
        ["--responses"] if RESPONSES else [],
    )

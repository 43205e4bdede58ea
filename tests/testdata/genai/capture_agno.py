"""Capture ``opentelemetry-instrumentation-genai-agno`` over an Agno ``Agent`` whose model is Agno's own
``OpenAIChat`` (the real ``openai`` client, traced by ``opentelemetry-instrumentation-genai-openai``, as a
deployment pairs them: genai-agno traces the agent and its tool calls, not the model's API), in every
content mode, spans and log records.

The model is a scripted OpenAI-compatible chat-completions server on 127.0.0.1 (``_capture.JsonServer``
answering ``_genai.chat_completion``): the scenario's next turn, picked by how many assistant messages the
request holds. The tools are tests/scenarios.py's scripted tools; a tool that raises is reported to the model
by Agno itself. After an ``Ask`` turn the user's reply is a second run of the same agent, which sends the
session's history (an in-memory db). See README.md here and tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from agno.agent import Agent  # noqa: E402
from agno.db.in_memory import InMemoryDb  # noqa: E402
from agno.models.openai import OpenAIChat  # noqa: E402
from opentelemetry.instrumentation.genai.agno import AgnoInstrumentor  # noqa: E402
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import JsonServer  # noqa: E402
from tests.testdata._genai import chat_completion, main, tools  # noqa: E402


def instrument(tracer_provider, logger_provider) -> None:
    AgnoInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    server = JsonServer(lambda body: chat_completion(scenario, body))
    try:
        agent = Agent(
            name="support_agent",
            model=OpenAIChat(id="scripted-chat", base_url=server.url + "/v1", api_key="unused-offline", max_retries=0),
            tools=tools(scenario),
            instructions="You help customers with orders.",
            db=InMemoryDb(),
            add_history_to_context=True,
        )
        agent.run(scenario.user, session_id=scenario.name)
        for turn in scenario.turns:
            if isinstance(turn, Ask):
                agent.run(turn.reply, session_id=scenario.name)
    finally:
        server.close()


if __name__ == "__main__":
    main(__file__, "agno", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

"""Capture ``opentelemetry-instrumentation-genai-smolagents`` over a smolagents ``ToolCallingAgent``, in every
content mode, spans and log records.

The agent, its tools, its scripted OpenAI-compatible server on 127.0.0.1 and smolagents' own ``OpenAIModel``
(the real ``openai`` client) are tests/frameworks/smolagents_agent.py's (``serving``, ``_agent``): the server
answers with the scenario's turns as tool calls (ids ``call_<turn>_<n>``), then smolagents' ``final_answer``;
a question to the user is a ``final_answer`` and the user's reply a second ``run(reply, reset=False)``. A tool
that raises is reported to the model by smolagents itself (an error in its memory, not a tool result). genai-smolagents traces the agent's runs and only the in-process model classes' calls (an API model is
its client's to trace): the ``openai`` client is traced by ``opentelemetry-instrumentation-genai-openai``, as
a deployment pairs them. smolagents records no tool span in this family. See README.md here and tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.genai.smolagents import SmolagentsInstrumentor  # noqa: E402

from tests.frameworks.smolagents_agent import _agent, serving  # noqa: E402
from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._genai import main  # noqa: E402


def instrument(tracer_provider, logger_provider) -> None:
    SmolagentsInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    with serving() as server:
        agent = _agent(server, scenario, multi_agent=False)
        agent.run(scenario.user)
        for turn in scenario.turns:
            if isinstance(turn, Ask):
                agent.run(turn.reply, reset=False)


if __name__ == "__main__":
    main(__file__, "smolagents", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

"""Capture ``opentelemetry-instrumentation-genai-langchain`` over a LangChain agent (``create_agent``, which
runs on LangGraph) on a scripted chat model, in every content mode, spans and log records.

The model is ``ScriptedChatModel`` (tests/frameworks/langgraph_agent.py): a LangChain ``BaseChatModel`` that
answers with the scenario's next turn (tool calls with ids ``call_<turn>_<n>``), picked by how many AI
messages the conversation holds. The tools are tests/scenarios.py's ``ScriptedTools``; a tool that raises is
answered the way LangChain's own ``ToolRetryMiddleware(on_failure="continue")`` answers it: a ToolMessage with
``status="error"`` and LangChain's failure text. After an ``Ask`` turn the user's reply is sent as the next
message of the same conversation. See README.md here and tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ToolRetryMiddleware  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor  # noqa: E402

from tests.frameworks.langgraph_agent import ScriptedChatModel  # noqa: E402
from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._genai import main, tools  # noqa: E402


def instrument(tracer_provider, logger_provider) -> None:
    LangChainInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    agent = create_agent(
        ScriptedChatModel(scenario=scenario),
        tools=tools(scenario),
        system_prompt="You help customers with orders.",
        middleware=[ToolRetryMiddleware(max_retries=0, on_failure="continue")],
        name="support_agent",
    )
    messages: list = [HumanMessage(content=scenario.user)]
    for _ in range(len(scenario.turns) + 1):
        messages = list(agent.invoke({"messages": messages})["messages"])
        asked = sum(isinstance(m, AIMessage) for m in messages) - 1
        if not (asked < len(scenario.turns) and isinstance(scenario.turns[asked], Ask)):
            return
        messages.append(HumanMessage(content=scenario.turns[asked].reply))


if __name__ == "__main__":
    main(__file__, "langchain", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

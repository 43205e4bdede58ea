"""Capture ``opentelemetry-instrumentation-genai-dspy`` over a DSPy ``ReAct`` agent, in every content mode,
spans and log records.

The model is a real ``dspy.LM`` (through litellm's OpenAI provider) against a scripted OpenAI-compatible
chat-completions server on 127.0.0.1 (``_capture.JsonServer``). It answers each call in DSPy's own
``ChatAdapter`` text format (``[[ ## field ## ]]`` sections): for each of the scenario's turns a
``next_thought`` / ``next_tool_name`` / ``next_tool_args`` step, then ReAct's ``finish``, then the extract
step's ``reasoning`` / ``answer``. ReAct has no call ids; a tool that raises is caught by ReAct, which sends the
model ``Execution error in <tool>: ...`` as the observation. A ReAct call takes one request and cannot ask the
user back, so the ``confirmed`` scenario (a second user turn) is not captured here. See README.md here and
tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch it from the network
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import dspy  # noqa: E402
from opentelemetry.instrumentation.genai.dspy import DSPyInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Scenario  # noqa: E402
from tests.testdata._capture import JsonServer  # noqa: E402
from tests.testdata._genai import main, tools  # noqa: E402


def sections(**fields: Any) -> str:
    """A reply in ChatAdapter's format."""
    body = "".join(f"[[ ## {k} ## ]]\n{v if isinstance(v, str) else json.dumps(v)}\n\n" for k, v in fields.items())
    return body + "[[ ## completed ## ]]"


class ScriptedModel:
    """The scenario's replies, one per request, in order."""

    def __init__(self) -> None:
        self.replies: list[str] = []
        self.server = JsonServer(lambda body: self.completion())

    def load(self, scenario: Scenario) -> None:
        steps = [
            sections(next_thought=f"I should call {c.tool}.", next_tool_name=c.tool, next_tool_args=c.args)
            for turn in scenario.turns
            for c in turn
        ]
        steps.append(sections(next_thought="I have what I need.", next_tool_name="finish", next_tool_args={}))
        steps.append(sections(reasoning="The tools answered.", answer=scenario.answer))
        self.replies = steps

    def completion(self) -> dict[str, Any]:
        content = self.replies.pop(0)
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "scripted-chat",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


MODEL = ScriptedModel()


def instrument(tracer_provider, logger_provider) -> None:
    DSPyInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    lm = dspy.LM("openai/scripted-chat", api_base=MODEL.server.url + "/v1", api_key="unused-offline", cache=False)
    dspy.configure(lm=lm)


def run(scenario: Scenario) -> None:
    MODEL.load(scenario)
    agent = dspy.ReAct("request -> answer", tools=[dspy.Tool(f) for f in tools(scenario)], max_iters=8)
    agent(request=scenario.user)
    assert not MODEL.replies, MODEL.replies


if __name__ == "__main__":
    policy = tuple(s for s in POLICY_SCENARIOS if s.name != "confirmed")
    main(__file__, "dspy", instrument, run, SCENARIOS + policy + (FAILING_LOOP,))

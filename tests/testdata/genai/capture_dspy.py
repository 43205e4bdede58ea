"""Capture ``opentelemetry-instrumentation-genai-dspy`` over a DSPy ``ReAct`` agent, in every content mode,
spans and log records.

The model is a real ``dspy.LM`` (through litellm's OpenAI provider) against a scripted OpenAI-compatible
chat-completions server on 127.0.0.1 (``_capture.JsonServer``). It answers each call in DSPy's own
``ChatAdapter`` text format (``[[ ## field ## ]]`` sections): for each of the scenario's turns a
``next_thought`` / ``next_tool_name`` / ``next_tool_args`` step, then ReAct's ``finish``, then the extract
step's ``reasoning`` / ``answer``. ReAct has no call ids; a tool that raises is caught by ReAct, which sends the
model ``Execution error in <tool>: ...`` as the observation. A ReAct call takes one request: a question back
to the user is a call's answer, and the user's reply the next call's request, with the conversation so far as
a ``dspy.History`` input. See README.md here and
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

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
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
        """Per ReAct call (one per user message): a step per scripted call, ``finish``, then the extract
        step's answer (the question, for a call that ends at an ``Ask``)."""
        steps: list[str] = []
        for turn in [*scenario.turns, None]:
            if isinstance(turn, Ask) or turn is None:
                steps.append(sections(next_thought="I have what I need.", next_tool_name="finish", next_tool_args={}))
                answer = turn.text if isinstance(turn, Ask) else scenario.answer
                steps.append(sections(reasoning="The tools answered.", answer=answer))
                continue
            steps.extend(
                sections(next_thought=f"I should call {c.tool}.", next_tool_name=c.tool, next_tool_args=c.args)
                for c in turn
            )
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


class Support(dspy.Signature):
    """Help the customer with their orders."""

    history: dspy.History = dspy.InputField()
    request: str = dspy.InputField()
    answer: str = dspy.OutputField()


def run(scenario: Scenario) -> None:
    """One ReAct call per user message; after an ``Ask`` the user's reply is the next call's request, with
    the conversation so far as its ``dspy.History``."""
    MODEL.load(scenario)
    agent = dspy.ReAct(Support, tools=[dspy.Tool(f) for f in tools(scenario)], max_iters=8)
    history: list[dict[str, Any]] = []
    request = scenario.user
    for reply in [t.reply for t in scenario.turns if isinstance(t, Ask)] + [None]:
        answer = agent(history=dspy.History(messages=list(history)), request=request).answer
        if reply is None:
            break
        history.append({"request": request, "answer": answer})
        request = reply
    assert not MODEL.replies, MODEL.replies


if __name__ == "__main__":
    main(__file__, "dspy", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

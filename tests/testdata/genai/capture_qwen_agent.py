"""Capture ``opentelemetry-instrumentation-genai-qwen-agent`` over a Qwen-Agent ``Assistant`` on Qwen-Agent's
own OpenAI-compatible model client (``model_server``), in every content mode, spans and log records.

genai-qwen-agent traces the agent's runs and its tool calls (``Agent.run``, ``Agent._call_tool``); the model
client is Qwen-Agent's own, which no instrumentation here traces. The model is a scripted OpenAI-compatible
chat-completions server on 127.0.0.1 (``_capture.JsonServer``) that answers in Qwen-Agent's default
function-calling prompt format (``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` in the text), picked
by how many assistant messages the request holds. The tools are ``BaseTool``s answering as tests/scenarios.py
scripts them; a tool that raises is reported to the model by Qwen-Agent itself. After an ``Ask`` turn the
user's reply is a second run on the conversation so far. See README.md here and tests/testdata/_genai.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from opentelemetry.instrumentation.genai.qwen_agent import QwenAgentInstrumentor  # noqa: E402
from qwen_agent.agents import Assistant  # noqa: E402
from qwen_agent.tools.base import BaseTool  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario, ScriptedTools  # noqa: E402
from tests.testdata._capture import PARAMS, JsonServer, model_turn  # noqa: E402
from tests.testdata._genai import main  # noqa: E402


class StreamingServer(JsonServer):
    """``JsonServer`` that answers a ``"stream": true`` request as server-sent events (one chunk holding the
    whole message, then ``[DONE]``), as Qwen-Agent's client asks for by default."""

    def __init__(self, reply):
        super().__init__(reply)
        handler = self._server.RequestHandlerClass

        def do_post(this) -> None:
            body = json.loads(this.rfile.read(int(this.headers.get("Content-Length") or 0)) or b"null")
            answer = reply(body)
            if not body.get("stream"):
                data = json.dumps(answer).encode()
                this.send_response(200)
                this.send_header("Content-Type", "application/json")
                this.send_header("Content-Length", str(len(data)))
                this.end_headers()
                this.wfile.write(data)
                return
            choice = answer["choices"][0]
            chunk = {**answer, "object": "chat.completion.chunk"}
            chunk["choices"] = [{"index": 0, "delta": choice["message"], "finish_reason": choice["finish_reason"]}]
            data = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            this.send_response(200)
            this.send_header("Content-Type", "text/event-stream")
            this.send_header("Content-Length", str(len(data)))
            this.end_headers()
            this.wfile.write(data)

        handler.do_POST = do_post


def completion(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    turn = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
    reply = model_turn(scenario.turns, scenario.answer, turn)
    if isinstance(reply, Ask):
        content = reply.text
    elif isinstance(reply, str):
        content = reply
    else:
        content = "\n".join(
            "<tool_call>\n" + json.dumps({"name": c.tool, "arguments": c.args}) + "\n</tool_call>" for c in reply
        )
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "scripted-chat",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _tools(scenario: Scenario) -> list[BaseTool]:
    scripted = ScriptedTools(scenario)
    scripted.pending.setdefault("cancel_order", [c for c in scenario.calls if c.tool == "cancel_order"])

    def make(tool: str, params: dict[str, str]) -> BaseTool:
        class Scripted(BaseTool):
            name = tool
            description = tool.replace("_", " ")
            parameters = {
                "type": "object",
                "properties": {p: {"type": t} for p, t in params.items()},
                "required": list(params),
            }

            def call(self, params: str | dict, **kwargs: Any) -> str:
                return scripted.answer(tool)

        return Scripted()

    return [make(t, p) for t, p in PARAMS.items()]


def instrument(tracer_provider, logger_provider) -> None:
    QwenAgentInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    server = StreamingServer(lambda body: completion(scenario, body))
    try:
        llm = {"model": "scripted-chat", "model_server": server.url + "/v1", "api_key": "unused-offline"}
        agent = Assistant(
            llm=llm,
            function_list=_tools(scenario),
            name="support_agent",
            system_message="You help customers with orders.",
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": scenario.user}]
        for reply in [t.reply for t in scenario.turns if isinstance(t, Ask)] + [None]:
            *_, responses = agent.run(messages=messages)  # a generator of the growing reply: the last is whole
            messages = messages + list(responses)
            if reply is None:
                return
            messages.append({"role": "user", "content": reply})
    finally:
        server.close()


if __name__ == "__main__":
    main(__file__, "qwen-agent", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

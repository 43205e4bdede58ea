"""Capture ``opentelemetry-instrumentation-genai-bedrock`` over a hand-written Bedrock Converse tool loop
(boto3's ``bedrock-runtime`` client), in every content mode, spans and log records.

No framework: the loop sends the conversation with the tool definitions (``toolConfig``), runs each
``toolUse`` the model returns itself, answers with a ``toolResult`` of the same ``toolUseId``, and asks again
until the model answers in text. A tool that raises is answered as Bedrock documents it: ``status: "error"``
and the failure as a JSON content block, ``[{"json": {"error": "<message>"}}]``. The model is a scripted
Converse endpoint on 127.0.0.1 (``_capture.JsonServer``, given to boto3 as ``endpoint_url``, with dummy
credentials: a stand-in for the AWS service, which cannot be reached here), answering with the scenario's
turns (ids ``call_<turn>_<n>``), picked by how many assistant messages the request holds. See README.md here
and tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402
from opentelemetry.instrumentation.genai.bedrock import BedrockInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import PARAMS, JsonServer, model_turn, object_schema, scripted_call  # noqa: E402
from tests.testdata._genai import main  # noqa: E402

TOOLS = {
    "tools": [{"toolSpec": {"name": n, "description": n, "inputSchema": {"json": object_schema(n)}}} for n in PARAMS]
}


def converse(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    turn = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
    reply = model_turn(scenario.turns, scenario.answer, turn)
    if isinstance(reply, (Ask, str)):
        content: list[dict[str, Any]] = [{"text": reply.text if isinstance(reply, Ask) else reply}]
        stop = "end_turn"
    else:
        content = [
            {"toolUse": {"toolUseId": f"call_{turn}_{n}", "name": c.tool, "input": c.args}} for n, c in enumerate(reply)
        ]
        stop = "tool_use"
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 1},
    }


def instrument(tracer_provider, logger_provider) -> None:
    BedrockInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    server = JsonServer(lambda body: converse(scenario, body))
    try:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=server.url,
            aws_access_key_id="unused-offline",
            aws_secret_access_key="unused-offline",
        )
        replies = [t.reply for t in scenario.turns if isinstance(t, Ask)]
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": scenario.user}]}]
        for turn in range(len(scenario.turns) + 1):
            out = client.converse(
                modelId="scripted-model",
                messages=messages,
                system=[{"text": "You help customers with orders."}],
                toolConfig=TOOLS,
            )
            message = out["output"]["message"]
            messages.append(message)
            uses = [b["toolUse"] for b in message["content"] if "toolUse" in b]
            if not uses:
                if not replies:
                    return
                messages.append({"role": "user", "content": [{"text": replies.pop(0)}]})
                continue
            results = []
            for n, use in enumerate(uses):
                call = scripted_call(scenario, turn, n, use["name"], use["input"])
                if call.error is not None:
                    results.append(
                        {
                            "toolResult": {
                                "toolUseId": use["toolUseId"],
                                "content": [{"json": {"error": call.error}}],
                                "status": "error",
                            }
                        }
                    )
                else:
                    results.append(
                        {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": call.result or ""}]}}
                    )
            messages.append({"role": "user", "content": results})
    finally:
        server.close()


if __name__ == "__main__":
    main(__file__, "bedrock", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,))

"""Capture ``opentelemetry-instrumentation-google-genai`` over the ``google-genai`` client running its own tool
loop (automatic function calling: the SDK calls the Python functions it was given and sends their results
back), in every content mode, spans and log records.

The model is a scripted Gemini API on 127.0.0.1 (``_capture.JsonServer``) answering ``generateContent`` with
the scenario's next turn as ``functionCall`` parts (no call ids, as Gemini sends them), picked by how many
``model`` turns the request holds, then the answer. The functions are tests/scenarios.py's scripted tools; a
function that raises is reported to the model by the SDK itself (in the ``functionResponse``). After an
``Ask`` turn the user's reply is sent in the same chat (``client.chats``). Beside the shared scenarios,
``SAME_TOOL_TWICE``: the instrumentation makes call ids up per message, so both its calls are ``lookup_order_0``. See README.md here and
tests/testdata/_genai.py (modes and files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from google import genai  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SAME_TOOL_TWICE, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import JsonServer, model_turn  # noqa: E402
from tests.testdata._genai import main, tools  # noqa: E402


def generate_content(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    turn = sum(1 for c in body.get("contents", ()) if c.get("role") == "model")
    reply = model_turn(scenario.turns, scenario.answer, turn)
    if isinstance(reply, Ask):
        parts: list[dict[str, Any]] = [{"text": reply.text}]
    elif isinstance(reply, str):
        parts = [{"text": reply}]
    else:
        parts = [{"functionCall": {"name": c.tool, "args": c.args}} for c in reply]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "scripted-gemini",
    }


def instrument(tracer_provider, logger_provider) -> None:
    GoogleGenAiSdkInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)


def run(scenario: Scenario) -> None:
    server = JsonServer(lambda body: generate_content(scenario, body))
    try:
        client = genai.Client(api_key="unused-offline", http_options=types.HttpOptions(base_url=server.url))
        config = types.GenerateContentConfig(
            system_instruction="You help customers with orders.",
            tools=tools(scenario),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(maximum_remote_calls=10),
        )
        chat = client.chats.create(model="scripted-gemini", config=config)
        chat.send_message(scenario.user)
        for turn in scenario.turns:
            if isinstance(turn, Ask):
                chat.send_message(turn.reply)
    finally:
        server.close()


if __name__ == "__main__":
    main(__file__, "google-genai", instrument, run, SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP, SAME_TOOL_TWICE))

"""Capture the contrib OpenAI instrumentation's spans from a hand-written tool loop over the official client.

The loop executes the tools itself (no framework, no tool spans): it sends the conversation with the tool
definitions, runs each tool call the model returns, appends a ``role: tool`` message with the same call id,
and asks again until the model answers in text. The model is an OpenAI-compatible chat-completions server
on 127.0.0.1 written here (``completion``, served by ``_capture.JsonServer``): it answers with the scenario's turn (tool calls with ids
``call_<turn>_<n>``) picked by how many assistant messages the request holds, then the answer text. No
network, no LLM. See README.md here; each output file is one serialized ExportTraceServiceRequest.

Modes (``MODES``), each run in its own process (the instrumentation reads them when instrumenting):
``latest`` (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``; content on with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``, off by default), ``latest-events``
(``SPAN_AND_EVENT`` / ``EVENT_ONLY``) and ``default`` (the v1.30 conventions; content ``true`` / unset,
written to log events only when on). Only spans are captured here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from openai import OpenAI  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import PARAMS, JsonServer, model_turn, object_schema, scripted_call  # noqa: E402

OUT = Path(__file__).resolve().parent
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MODES = {
    "latest": ({**LATEST, CONTENT: "SPAN_ONLY"}, LATEST),
    "latest-events": ({**LATEST, CONTENT: "SPAN_AND_EVENT"}, {**LATEST, CONTENT: "EVENT_ONLY"}),
    "default": ({CONTENT: "true"}, {}),
}
"""Mode -> (environment with content on, environment with content off). ``latest-events``' "off" is
``EVENT_ONLY``: content in log events only, none in the spans. In ``default`` content goes to log events
only, so its spans are those of content off whatever is set."""
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name.replace("_", " "),
            "parameters": object_schema(name),
        },
    }
    for name in PARAMS
]


def completion(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/chat/completions: the scenario's next turn, chosen by the assistant messages already sent."""
    turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    reply = model_turn(scenario.turns, scenario.answer, turn)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(reply, Ask):
        message["content"], finish = reply.text, "stop"
    elif isinstance(reply, str):
        message["content"], finish = reply, "stop"
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {"name": c.tool, "arguments": json.dumps(c.args)},
            }
            for n, c in enumerate(reply)
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "scripted-chat",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def run_tool(scenario: Scenario, turn: int, n: int, name: str, args: dict[str, Any]) -> str:
    """The scripted tool: its result, or ``Error: ...`` when it raises (chat completions has no error field)."""
    call = scripted_call(scenario, turn, n, name, args)
    try:
        if call.error is not None:
            raise RuntimeError(call.error)
        return call.result or ""
    except RuntimeError as e:
        return f"Error: {e}"


def tool_loop(client: OpenAI, scenario: Scenario) -> None:
    """The hand-written loop: ask, run the requested tools, send their results, until the model answers."""
    replies = [t.reply for t in scenario.turns if isinstance(t, Ask)]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You help customers with orders."},
        {"role": "user", "content": scenario.user},
    ]
    for turn in range(len(scenario.turns) + 1):
        reply = client.chat.completions.create(model="scripted-chat", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            if not replies:
                return
            messages.append({"role": "user", "content": replies.pop(0)})
            continue
        for n, tc in enumerate(message.tool_calls):
            result = run_tool(scenario, turn, n, tc.function.name, json.loads(tc.function.arguments))
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})


def capture(scenario: Scenario, mode: str, content: bool) -> None:
    server = JsonServer(lambda body: completion(scenario, body))
    try:
        client = OpenAI(base_url=f"{server.url}/v1", api_key="unused-offline", max_retries=0)
        EXPORTER.clear()
        with PROVIDER.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            tool_loop(client, scenario)
    finally:
        server.close()
    spans = EXPORTER.get_finished_spans()
    stem = f"{scenario.name}.{mode}{'' if content else '.nocontent'}.openai-v2"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


def main(mode: str, content: bool) -> None:
    OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)
    for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        capture(s, mode, content)


if __name__ == "__main__":
    if len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode, (on, off) in MODES.items():
            for content, env in (("content", on), ("nocontent", off)):
                subprocess.run([sys.executable, __file__, mode, content], env={**os.environ, **env}, check=True)

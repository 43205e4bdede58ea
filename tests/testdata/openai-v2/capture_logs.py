"""Capture the spans and log records the contrib OpenAI instrumentation (opentelemetry-instrumentation-openai-v2)
emits for a hand-written tool loop over the official ``openai`` client, on a scripted model (no network).

The model is a scripted OpenAI-compatible chat-completions server on 127.0.0.1 (``ScriptedModel``, stdlib
http.server) that answers each request with the scenario's next turn: its tool calls (ids
``call_<turn>_<n>``), then the answer. The loop runs each requested tool by returning the scenario's scripted
result, as an application without an agent framework does. The instrumentation sends spans to the SDK's
``InMemorySpanExporter`` and log records to ``InMemoryLogRecordExporter``; each capture is saved as one
serialized ExportTraceServiceRequest and one ExportLogsServiceRequest (the OTLP protobuf encoders).

Modes (``MODES``), each run in its own process (the instrumentation reads its environment once, at
``instrument()``): the legacy conventions (v1.30: ``gen_ai.*.message`` and ``gen_ai.choice`` log records,
content with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``) and the latest experimental ones
(``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: content in span attributes (SPAN_ONLY), in one
``gen_ai.client.inference.operation.details`` record per call (EVENT_ONLY), in both, or none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.testdata._capture import JsonServer, model_turn  # noqa: E402

OUT = Path(__file__).resolve().parent
NAMES = ("clean", "forbidden", "injected", "user_supplied", "confirmed", "unconfirmed", "other_order")
"""The four scenarios and the policy ones (tests/scenarios.py)."""
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
MODES = {
    "legacy": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    "legacy.nocontent": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
    "latest.span_only": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "latest.event_only": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
    "latest.span_and_event": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"},
    "latest.nocontent": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT"},
}


class ScriptedModel:
    """An OpenAI-compatible ``POST /v1/chat/completions`` that answers with the loaded scenario's turns."""

    def __init__(self) -> None:
        self.turns: list = []
        self.answer = ""
        self.served = 0
        self._server = JsonServer(lambda body: self.completion())
        self.url = self._server.url + "/v1"

    def load(self, turns, answer: str) -> None:
        self.turns, self.answer, self.served = list(turns), answer, 0

    def completion(self) -> dict:
        from tests.scenarios import Ask

        turn, self.served = self.served, self.served + 1
        reply = model_turn(self.turns, self.answer, turn)
        if isinstance(reply, Ask):  # a question back to the user
            message, finish = {"role": "assistant", "content": reply.text}, "stop"
        elif isinstance(reply, str):
            message, finish = {"role": "assistant", "content": reply}, "stop"
        else:
            calls = [
                {
                    "id": f"call_{turn}_{n}",
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps(c.args)},
                }
                for n, c in enumerate(reply)
            ]
            message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def close(self) -> None:
        self._server.close()


def tool_definitions() -> list[dict]:
    from tests.scenarios import POLICY_TOOLS

    return [
        {
            "type": "function",
            "function": {
                "name": t,
                "description": f"The {t.replace('_', ' ')} tool.",
                "parameters": {"type": "object", "additionalProperties": True},
            },
        }
        for t in POLICY_TOOLS
    ]


def run_mode(mode: str) -> None:
    """In this process: instrument, run every scenario, write its two files."""
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tests.scenarios import BY_NAME, POLICY_SCENARIOS

    scenarios = {**BY_NAME, **{s.name: s for s in POLICY_SCENARIOS}}

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    model = ScriptedModel()
    client = OpenAI(base_url=model.url, api_key="unused-offline", max_retries=0)
    tracer = tracer_provider.get_tracer("luckrate.capture")
    try:
        for name in NAMES:
            scenario = scenarios[name]
            model.load(scenario.turns, scenario.answer)
            with tracer.start_as_current_span(f"eval {name}", attributes={"luckrate.output_ok": True}):
                tool_loop(client, scenario)
            stem = OUT / f"{name}.{mode}.openai-v2"
            stem.with_name(stem.name + ".traces.otlp").write_bytes(
                encode_spans(list(spans.get_finished_spans())).SerializeToString()
            )
            stem.with_name(stem.name + ".logs.otlp").write_bytes(
                encode_logs(list(logs.get_finished_logs())).SerializeToString()
            )
            spans.clear()
            logs.clear()
    finally:
        model.close()


def tool_loop(client, scenario) -> None:
    """The application's own loop: ask the model, run the tools it asks for, send the results back; when
    the model asks the user something (an ``Ask`` turn), the user's scripted reply is the next message."""
    from tests.scenarios import Ask

    results = {c.tool: c for c in scenario.calls}
    messages: list[dict] = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": scenario.user},
    ]
    for turn in [*scenario.turns, None]:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tool_definitions())
        message = reply.choices[0].message
        if isinstance(turn, Ask):
            messages += [{"role": "assistant", "content": message.content}, {"role": "user", "content": turn.reply}]
            continue
        if not message.tool_calls:
            return
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": tc.id,
                        "type": "function",
                        "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                    }
                    for tc in message.tool_calls
                ],
            }
        )
        for tc in message.tool_calls:
            call = results[tc.function.name]
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": call.result or call.error or ""})


def main() -> None:
    if len(sys.argv) > 1:
        run_mode(sys.argv[1])
        return
    for mode, env in MODES.items():
        subprocess.run(
            [sys.executable, __file__, mode], check=True, env={**os.environ, "OTEL_SEMCONV_STABILITY_OPT_IN": "", **env}
        )
        print(f"captured {mode}")


if __name__ == "__main__":
    main()

"""Capture the spans and log records the Traceloop (OpenLLMetry) Anthropic instrumentation
(opentelemetry-instrumentation-anthropic) emits for a hand-written tool loop over the official ``anthropic``
client, on a scripted model (no network).

The model is a scripted Anthropic-compatible ``POST /v1/messages`` server on 127.0.0.1 (``ScriptedModel``,
stdlib http.server) answering each request with the scenario's next turn: ``tool_use`` blocks (ids
``toolu_<turn>_<n>``), then the answer as a ``text`` block. The loop runs each requested tool by returning
the scenario's scripted result in a ``tool_result`` block. Spans go to the SDK's ``InMemorySpanExporter``,
log records to ``InMemoryLogRecordExporter``; each capture is one serialized ExportTraceServiceRequest and
one ExportLogsServiceRequest.

Modes (``MODES``), each run in its own process: ``attributes`` (the default, ``use_attributes=True``:
messages in span attributes) and ``events`` (``use_attributes=False``: ``gen_ai.*.message`` and
``gen_ai.choice`` log records), each with content (``TRACELOOP_TRACE_CONTENT`` unset) and without
(``TRACELOOP_TRACE_CONTENT=false``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.testdata._capture import JsonServer, model_turn  # noqa: E402

OUT = Path(__file__).resolve().parent
NAMES = ("clean", "forbidden", "injected", "user_supplied", "confirmed", "unconfirmed", "other_order")
MODES = {
    "attributes": ({}, True),
    "attributes.nocontent": ({"TRACELOOP_TRACE_CONTENT": "false"}, True),
    "events": ({}, False),
    "events.nocontent": ({"TRACELOOP_TRACE_CONTENT": "false"}, False),
}
"""mode -> (environment, use_attributes)."""


class ScriptedModel:
    """An Anthropic-compatible ``POST /v1/messages`` answering with the loaded scenario's turns."""

    def __init__(self) -> None:
        self.turns: list = []
        self.answer = ""
        self.served = 0
        self._server = JsonServer(lambda body: self.reply())
        self.url = self._server.url

    def load(self, turns, answer: str) -> None:
        self.turns, self.answer, self.served = list(turns), answer, 0

    def reply(self) -> dict:
        from tests.scenarios import Ask

        turn, self.served = self.served, self.served + 1
        reply = model_turn(self.turns, self.answer, turn)
        if isinstance(reply, Ask):
            content, stop = [{"type": "text", "text": reply.text}], "end_turn"
        elif isinstance(reply, str):
            content, stop = [{"type": "text", "text": reply}], "end_turn"
        else:
            content = [
                {"type": "tool_use", "id": f"toolu_{turn}_{n}", "name": c.tool, "input": dict(c.args)}
                for n, c in enumerate(reply)
            ]
            stop = "tool_use"
        return {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def close(self) -> None:
        self._server.close()


def tool_definitions() -> list[dict]:
    from tests.scenarios import POLICY_TOOLS

    return [
        {
            "name": t,
            "description": f"The {t.replace('_', ' ')} tool.",
            "input_schema": {"type": "object", "additionalProperties": True},
        }
        for t in POLICY_TOOLS
    ]


def run_mode(mode: str) -> None:
    from anthropic import Anthropic
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
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
    AnthropicInstrumentor(use_attributes=MODES[mode][1]).instrument(
        tracer_provider=tracer_provider, logger_provider=logger_provider
    )
    model = ScriptedModel()
    client = Anthropic(base_url=model.url, api_key="unused-offline", max_retries=0)
    tracer = tracer_provider.get_tracer("luckrate.capture")
    try:
        for name in NAMES:
            scenario = scenarios[name]
            model.load(scenario.turns, scenario.answer)
            with tracer.start_as_current_span(f"eval {name}", attributes={"luckrate.output_ok": True}):
                tool_loop(client, scenario)
            stem = f"{name}.{mode}.anthropic"
            traces_request = encode_spans(list(spans.get_finished_spans()))
            (OUT / f"{stem}.traces.otlp").write_bytes(traces_request.SerializeToString())
            (OUT / f"{stem}.logs.otlp").write_bytes(encode_logs(list(logs.get_finished_logs())).SerializeToString())
            spans.clear()
            logs.clear()
    finally:
        model.close()


def tool_loop(client, scenario) -> None:
    """The application's own loop: ask the model, run the tools it asks for, send the results back; when
    the model asks the user something (an ``Ask`` turn), the user's scripted reply is the next message."""
    from tests.scenarios import Ask

    results = {c.tool: c for c in scenario.calls}
    messages: list[dict] = [{"role": "user", "content": scenario.user}]
    for turn in [*scenario.turns, None]:
        reply = client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            system="You are a support agent.",
            messages=messages,
            tools=tool_definitions(),
        )
        blocks = [b.model_dump(exclude_none=True) for b in reply.content]
        if isinstance(turn, Ask):
            messages += [{"role": "assistant", "content": blocks}, {"role": "user", "content": turn.reply}]
            continue
        uses = [b for b in blocks if b["type"] == "tool_use"]
        if not uses:
            return
        messages.append({"role": "assistant", "content": blocks})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b["id"],
                        "content": results[b["name"]].result or results[b["name"]].error or "",
                    }
                    for b in uses
                ],
            }
        )


def main() -> None:
    if len(sys.argv) > 1:
        run_mode(sys.argv[1])
        return
    for mode, (env, _) in MODES.items():
        subprocess.run(
            [sys.executable, __file__, mode],
            check=True,
            env={**{k: v for k, v in os.environ.items() if k != "TRACELOOP_TRACE_CONTENT"}, **env},
        )
        print(f"captured {mode}")


if __name__ == "__main__":
    main()

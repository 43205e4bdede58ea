"""Capture Traceloop's Anthropic instrumentation from a hand-written tool loop over the official client.

As tests/testdata/openai-v2: the loop runs each ``tool_use`` the model returns itself and answers with a
user turn of ``tool_result`` blocks (``is_error: true`` for a tool that raised), until the model answers in
text; no tool spans. The model is ``message`` here, served as an Anthropic Messages API on 127.0.0.1
(``_capture.JsonServer``): it answers with the scenario's turn (``tool_use`` blocks with ids ``call_<turn>_<n>``) picked by how many
assistant messages the request holds, then the answer. No network, no LLM. See README.md here.

Modes, each in its own venv and process: ``current`` (opentelemetry-instrumentation-anthropic 0.62.4: the
GenAI conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages``) and ``legacy`` (0.53.4:
flattened ``gen_ai.prompt.<i>.*`` / ``gen_ai.completion.<i>.*``). Content on / off:
``TRACELOOP_TRACE_CONTENT`` unset (on by default) / ``false``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from anthropic import Anthropic  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402
from tests.testdata._capture import PARAMS, JsonServer, model_turn, object_schema, scripted_call  # noqa: E402

OUT = Path(__file__).resolve().parent
MODES = {"current": "/tmp/msgsvenv/bin/python", "legacy": "/tmp/tl053venv/bin/python"}
"""Mode -> the venv's python holding that instrumentation release (README.md here)."""
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
TOOLS = [
    {
        "name": name,
        "description": name.replace("_", " "),
        "input_schema": object_schema(name),
    }
    for name in PARAMS
]


def message(scenario: Scenario, body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/messages: the scenario's next turn, chosen by the assistant messages already sent."""
    turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    reply = model_turn(scenario.turns, scenario.answer, turn)
    if isinstance(reply, Ask):
        content, stop = [{"type": "text", "text": reply.text}], "end_turn"
    elif isinstance(reply, str):
        content, stop = [{"type": "text", "text": reply}], "end_turn"
    else:
        content = [
            {"type": "tool_use", "id": f"call_{turn}_{n}", "name": c.tool, "input": c.args} for n, c in enumerate(reply)
        ]
        stop = "tool_use"
    return {
        "id": f"msg_{turn}",
        "type": "message",
        "role": "assistant",
        "model": "scripted-claude",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def run_tool(scenario: Scenario, turn: int, n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The scripted tool's ``tool_result`` block: its result, or the error with ``is_error: true``."""
    call = scripted_call(scenario, turn, n, name, args)
    block = {"type": "tool_result", "tool_use_id": f"call_{turn}_{n}"}
    try:
        if call.error is not None:
            raise RuntimeError(call.error)
        return {**block, "content": call.result or ""}
    except RuntimeError as e:
        return {**block, "content": str(e), "is_error": True}


def tool_loop(client: Anthropic, scenario: Scenario) -> None:
    """The hand-written loop: ask, run the requested tools, send their results, until the model answers."""
    replies = [t.reply for t in scenario.turns if isinstance(t, Ask)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": scenario.user}]
    for turn in range(len(scenario.turns) + 1):
        reply = client.messages.create(
            model="scripted-claude",
            max_tokens=512,
            system="You help customers with orders.",
            tools=TOOLS,
            messages=messages,
        )
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            if not replies:
                return
            messages.append({"role": "user", "content": replies.pop(0)})
            continue
        messages.append(
            {"role": "user", "content": [run_tool(scenario, turn, n, b.name, b.input) for n, b in enumerate(uses)]}
        )


def capture(scenario: Scenario, mode: str, content: bool) -> None:
    server = JsonServer(lambda body: message(scenario, body))
    try:
        client = Anthropic(base_url=server.url, api_key="unused-offline", max_retries=0)
        EXPORTER.clear()
        with PROVIDER.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            tool_loop(client, scenario)
    finally:
        server.close()
    spans = EXPORTER.get_finished_spans()
    stem = f"{scenario.name}.{mode}{'' if content else '.nocontent'}.anthropic"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


def main(mode: str, content: bool) -> None:
    AnthropicInstrumentor().instrument(tracer_provider=PROVIDER)
    for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        capture(s, mode, content)


if __name__ == "__main__":
    if len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode, python in MODES.items():
            for content, env in (("content", {}), ("nocontent", {"TRACELOOP_TRACE_CONTENT": "false"})):
                subprocess.run([python, __file__, mode, content], env={**os.environ, **env}, check=True)

"""What the capture scripts of the GenAI instrumentation family share (tests/testdata/genai/capture_*.py).

The contrib ``opentelemetry-instrumentation-genai-*`` instrumentations all write through
``opentelemetry-util-genai``, which reads one variable for where content goes:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` = ``NO_CONTENT`` (the default), ``SPAN_ONLY``,
``EVENT_ONLY`` or ``SPAN_AND_EVENT`` (``opentelemetry.util.genai.types.ContentCapturingMode``; util-genai 1.x
writes the latest GenAI conventions only, and ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` is
set as a deployment sets it). Each mode runs in a process of its own (the variable is read when the
instrumentation starts); each scenario is one trace under a root span ``eval <name>`` carrying
``luckrate.output_ok = true``, saved as two files beside the script: the spans (one serialized
``ExportTraceServiceRequest``) and the log records (one ``ExportLogsServiceRequest``, empty when the mode
emits none). Only the OTel SDK is imported here; the frameworks are the scripts'.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.scenarios import Scenario, ScriptedTools

CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MODES = {
    "nocontent": "NO_CONTENT",
    "span_only": "SPAN_ONLY",
    "event_only": "EVENT_ONLY",
    "span_and_event": "SPAN_AND_EVENT",
}
"""File name part -> the content mode's value."""


def tools(scenario: Scenario, coroutines: bool = False) -> list[Callable[..., Any]]:
    """The scenario's scripted tools (``ScriptedTools``) and ``cancel_order``, which the policy scenarios call."""
    scripted = ScriptedTools(scenario)
    fns = scripted.functions(coroutines)

    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return scripted.answer("cancel_order")

    async def cancel_order_async(order_id: str) -> str:
        """Cancel an order."""
        return scripted.answer("cancel_order")

    if coroutines:
        cancel_order_async.__name__ = cancel_order_async.__qualname__ = "cancel_order"
        return [*fns, cancel_order_async]
    return [*fns, cancel_order]


def chat_completion(scenario: Scenario, body: dict[str, Any], model: str = "scripted-chat") -> dict[str, Any]:
    """An OpenAI chat-completions reply to ``body``: the scenario's next turn, picked by how many assistant
    messages the request holds (tool calls with ids ``call_<turn>_<n>``, a question back to the user, or the
    answer), so a framework that resends its history gets the right turn in a later run too."""
    from tests.scenarios import Ask
    from tests.testdata._capture import model_turn

    turn = sum(1 for m in body.get("messages", ()) if isinstance(m, dict) and m.get("role") == "assistant")
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
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def environment(mode: str) -> dict[str, str]:
    """The variables a deployment sets for ``mode``."""
    return {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", CONTENT: MODES[mode]}


def stem(out: Path, scenario: str, mode: str, framework: str) -> Path:
    """``<out>/<scenario>.<mode>.<framework>``: ``.traces.otlp`` and ``.logs.otlp`` are added to it."""
    return out / f"{scenario}.{mode}.{framework}"


def main(
    script: str,
    framework: str,
    instrument: Callable[[Any, Any], None],
    run: Callable[[Scenario], None],
    scenarios: Sequence[Scenario],
    flags: Sequence[str] = (),
) -> None:
    """With no argument: run this script once per mode, each in its own process with the mode's environment.
    With a mode: instrument (``instrument(tracer_provider, logger_provider)``) and ``run`` each scenario under
    its root span, writing its two files beside ``script``. ``flags`` go to each mode's process (before the
    mode): the script's own variants."""
    if len(sys.argv) < 2:
        for mode in MODES:
            subprocess.run([sys.executable, script, *flags, mode], check=True, env={**os.environ, **environment(mode)})
        return
    mode = sys.argv[1]
    assert os.environ.get(CONTENT) == MODES[mode], f"run {script} without arguments (it sets {CONTENT})"
    wanted = set(sys.argv[2:])
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    instrument(tracer_provider, logger_provider)
    tracer = tracer_provider.get_tracer("luckrate.capture")
    out = Path(script).resolve().parent
    for scenario in scenarios:
        if wanted and scenario.name not in wanted:
            continue
        spans.clear()
        logs.clear()
        with tracer.start_as_current_span(f"eval {scenario.name}", attributes={"luckrate.output_ok": True}):
            run(scenario)
        at = stem(out, scenario.name, mode, framework)
        traces = encode_spans(list(spans.get_finished_spans())).SerializeToString()
        records = encode_logs(list(logs.get_finished_logs())).SerializeToString()
        at.with_name(at.name + ".traces.otlp").write_bytes(traces)
        at.with_name(at.name + ".logs.otlp").write_bytes(records)
        print(f"{at.name}: {len(spans.get_finished_spans())} spans, {len(logs.get_finished_logs())} log records")

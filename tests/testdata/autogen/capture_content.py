"""Capture AutoGen AgentChat runs *with content*, as AutoGen deployments record it: autogen-core's own tracing
records no arguments, results or messages (capture.py), so content comes from an instrumentation of the model
client underneath. The agent is an ``AssistantAgent`` on autogen-ext's ``OpenAIChatCompletionClient`` (the
official ``openai`` client), talking to an OpenAI-compatible chat-completions server on 127.0.0.1 written here
(``_genai.chat_completion``, served by ``_capture.JsonServer``): it answers with the scenario's turn (tool calls with ids
``call_<turn>_<n>``), picked by how many assistant messages the request holds, then the answer. No network, no
LLM. autogen-core's own spans go to the same provider, as in any deployment with a global tracer provider.

Modes (``MODES``), each in its own process (the instrumentations read their settings once):

- ``openinference``: ``openinference-instrumentation-autogen-agentchat`` (AGENT, TOOL and LLM spans: the
  tool's arguments and result, the model's messages); content off is OpenInference's
  ``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``.
- ``openai-v2``: the contrib ``opentelemetry-instrumentation-openai-v2`` on the ``openai`` client AutoGen
  calls (chat spans with ``gen_ai.input.messages`` / ``gen_ai.output.messages`` under
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``); content off: the variable unset.
- ``traceloop``: Traceloop's ``opentelemetry-instrumentation-openai`` (0.62.4) on the same client (content
  on by default; off with ``TRACELOOP_TRACE_CONTENT=false``).

A tool that raises is caught by AutoGen and sent to the model as ``FunctionExecutionResult(is_error=True)``
whose content is the exception's text. ``error_objects``: ``failing_loop`` with the failing tool answering
``{"error": "RuntimeError: ..."}`` instead of raising (``ErrorObjects``), which AutoGen takes for a success;
``invented``: a refund of an order id nothing in the run holds (``INVENTED``). See README.md; each output file is one serialized
ExportTraceServiceRequest.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_core.tools import FunctionTool  # noqa: E402
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import (  # noqa: E402
    FAILING_LOOP,
    POLICY_SCENARIOS,
    SCENARIOS,
    Ask,
    Call,
    Scenario,
    ScriptedTools,
)
from tests.testdata._capture import JsonServer  # noqa: E402
from tests.testdata._genai import chat_completion  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT = "support_agent"
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
HIDE = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}
MODES = {
    "openinference": ({}, HIDE),
    "openai-v2": ({**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, LATEST),
    "traceloop": ({"TRACELOOP_TRACE_CONTENT": "true"}, {"TRACELOOP_TRACE_CONTENT": "false"}),
}
"""Mode -> (environment with content on, environment with content off)."""
INVENTED = Scenario(
    "invented",
    "Please refund my last order, I was charged 129.",
    ((Call("issue_refund", {"order_id": "ORD-99999", "amount": 129}, "refund R-780 issued"),),),
    "Your refund has been issued.",
)
"""The model refunds an order id that nothing in the run holds (the user named none): ``ungrounded``."""
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)  # autogen-core and both instrumentations trace through the global provider


class ErrorObjects(ScriptedTools):
    """The scenario's tools, a failing call answering with an error object instead of raising
    (``{"error": "RuntimeError: <message>"}``, as many tools report a failure): AutoGen then sees a success."""

    def answer(self, tool: str) -> str:
        try:
            return super().answer(tool)
        except RuntimeError as e:
            return json.dumps({"error": f"RuntimeError: {e}"})


async def _run(scenario: Scenario, url: str, error_objects: bool = False) -> None:
    client = OpenAIChatCompletionClient(model="gpt-4o", base_url=f"{url}/v1", api_key="unused-offline", max_retries=0)
    scripted = (ErrorObjects if error_objects else ScriptedTools)(scenario)

    async def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return scripted.answer("cancel_order")

    functions = [*scripted.functions(coroutines=True), cancel_order]
    agent = AssistantAgent(
        AGENT,
        model_client=client,
        tools=[FunctionTool(f, description=f.__doc__ or "") for f in functions],
        system_message="You help customers with orders.",
        description="Handles orders.",
        max_tool_iterations=len(scenario.turns) + 1,
    )
    await agent.run(task=scenario.user)
    for turn in scenario.turns:  # the user's reply to each question the agent asked
        if isinstance(turn, Ask):
            await agent.run(task=turn.reply)


def capture(scenario: Scenario, mode: str, content: bool, error_objects: bool = False) -> None:
    server = JsonServer(lambda body: chat_completion(scenario, body, model="gpt-4o-2024-08-06"))
    try:
        EXPORTER.clear()
        with PROVIDER.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            asyncio.run(_run(scenario, server.url, error_objects))
    finally:
        server.close()
    spans = EXPORTER.get_finished_spans()
    name = "error_objects" if error_objects else scenario.name
    stem = f"{name}.{mode}{'' if content else '.nocontent'}.autogen"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


def main(mode: str, content: bool) -> None:
    if mode == "openinference":
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

        AutogenAgentChatInstrumentor().instrument(tracer_provider=PROVIDER)
    elif mode == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)
    else:  # Traceloop's (OpenLLMetry) instrumentation of the same client: a module of the same name
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TraceloopOpenAI

        TraceloopOpenAI().instrument(tracer_provider=PROVIDER)
    for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        capture(s, mode, content)
    capture(FAILING_LOOP, mode, content, error_objects=True)
    capture(INVENTED, mode, content)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] in ("content", "nocontent"):
        main(sys.argv[1], sys.argv[2] == "content")
    else:  # the modes named (all by default), each setting in a process of its own
        for mode in sys.argv[1:] or MODES:
            for content, env in zip(("content", "nocontent"), MODES[mode]):
                subprocess.run([sys.executable, __file__, mode, content], env={**os.environ, **env}, check=True)

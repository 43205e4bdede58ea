"""Capture Google ADK's native OpenTelemetry spans from real agent runs on a scripted model (no network).

google-adk pins the OTel SDK below luckrate's test venv (it would downgrade opentelemetry-sdk) and
brings google-genai, fastapi and friends, so it runs in a scratch venv and the captures are committed;
see README.md here. Each output file is one serialized ExportTraceServiceRequest.

Modes (``MODES``), each set by the environment variables an ADK deployment sets, each run in its own
process (ADK reads some of them once): ``v1`` (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``, the legacy
schema that ADK 1.x emitted: content in ``gcp.vertex.agent.*`` keys, on unless
``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``), ``v2`` (the default schema: content only with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``, off by default) and
``v2-experimental`` (v2 plus ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

os.environ.setdefault("GOOGLE_API_KEY", "unused-offline")  # never sent: the model is scripted
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.run_config import RunConfig  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import BY_NAME, SCENARIOS, Call, Scenario, ScriptedTools  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT, TRIAGE = "support_agent", "triage_agent"
MODES = {
    "v1": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    "v2": {},
    "v2-experimental": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
}
CONTENT = {  # content on / off, per mode
    "v1": ({}, {"ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"}),
    "v2": ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, {}),
    "v2-experimental": ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, {}),
}
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)  # ADK traces through the global provider


class ScriptedLlm(BaseLlm):
    """Returns the turns in order: each turn's function calls (ids ``call_<turn>_<n>``), then the answer."""

    turns: list[Any]
    answer: str
    prefix: str = "call"
    served: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        turn, self.served = self.served, self.served + 1
        if turn < len(self.turns):
            parts = [
                types.Part(
                    function_call=types.FunctionCall(id=f"{self.prefix}_{turn}_{n}", name=c.tool, args=dict(c.args))
                )
                for n, c in enumerate(self.turns[turn])
            ]
        else:
            parts = [types.Part(text=self.answer)]
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=10, candidates_token_count=5),
        )


def _agent(scenario: Scenario, multi_agent: bool) -> LlmAgent:
    support = LlmAgent(
        name=AGENT,
        model=ScriptedLlm(model="scripted-chat", turns=list(scenario.turns), answer=scenario.answer),
        instruction="You help customers with orders.",
        description="Handles orders.",
        tools=ScriptedTools(scenario).functions(),
    )
    if not multi_agent:
        return support
    handoff = Call("transfer_to_agent", {"agent_name": AGENT})
    return LlmAgent(
        name=TRIAGE,
        model=ScriptedLlm(model="scripted-chat", turns=[(handoff,)], answer="unused", prefix="triage"),
        instruction="Route the customer to the right agent.",
        sub_agents=[support],
    )


async def _run(scenario: Scenario, multi_agent: bool) -> None:
    agent = _agent(scenario, multi_agent)
    sessions = InMemorySessionService()
    runner = Runner(app_name="luckrate-capture", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="luckrate-capture", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text=scenario.user)])
    tracer = PROVIDER.get_tracer("luckrate.capture")
    with tracer.start_as_current_span(f"eval {scenario.name}", attributes={"luckrate.output_ok": True}):
        async for _ in runner.run_async(
            user_id="u1", session_id=session.id, new_message=message, run_config=RunConfig()
        ):
            pass


def capture(scenario: Scenario, mode: str, content: bool, multi_agent: bool = False, name: str | None = None) -> None:
    EXPORTER.clear()
    asyncio.run(_run(scenario, multi_agent))
    spans = EXPORTER.get_finished_spans()
    stem = f"{name or scenario.name}.{mode}{'' if content else '.nocontent'}.google-adk"
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans")


def main(mode: str, content: bool) -> None:
    for s in SCENARIOS:
        capture(s, mode, content)
    if content:
        capture(BY_NAME["forbidden"], mode, True, multi_agent=True, name="handoff")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode, env in MODES.items():
            for content, extra in zip(("content", "nocontent"), CONTENT[mode]):
                subprocess.run(
                    [sys.executable, __file__, mode, content], env={**os.environ, **env, **extra}, check=True
                )

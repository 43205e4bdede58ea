"""Capture AutoGen AgentChat spans (autogen-core's own OpenTelemetry tracing) from real ``AssistantAgent``
runs on AutoGen's own scripted model client (``ReplayChatCompletionClient``); no network. See README.md.

autogen-agentchat would downgrade protobuf in luckrate's test venv (it pins protobuf 5), so it runs in
a scratch venv and the captures are committed. Each output file is one serialized
ExportTraceServiceRequest.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination, TextMessageTermination  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_core.tools import FunctionTool  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import BY_NAME, SCENARIOS, Call, Scenario, ScriptedTools  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT, TRIAGE = "support_agent", "triage_agent"
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)  # autogen-core traces through the global provider
USAGE = RequestUsage(prompt_tokens=10, completion_tokens=5)


def _client(turns: list[Any], answer: str, prefix: str = "call") -> ReplayChatCompletionClient:
    """AutoGen's own test client: each create() returns the next scripted result (the turn's function
    calls, ids ``<prefix>_<turn>_<n>``, then the answer text)."""
    results: list[Any] = [
        CreateResult(
            finish_reason="function_calls",
            usage=USAGE,
            cached=False,
            content=[
                FunctionCall(id=f"{prefix}_{i}_{n}", name=c.tool, arguments=json.dumps(c.args))
                for n, c in enumerate(turn)
            ],
        )
        for i, turn in enumerate(turns)
    ]
    results.append(CreateResult(finish_reason="stop", usage=USAGE, cached=False, content=answer))
    return ReplayChatCompletionClient(
        results,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )


def _tools(scenario: Scenario) -> list[FunctionTool]:
    return [FunctionTool(f, description=f.__doc__ or "") for f in ScriptedTools(scenario).functions(coroutines=True)]


def _support(scenario: Scenario) -> AssistantAgent:
    # max_tool_iterations: the agent keeps calling the model while it asks for tools (the scripted turns)
    return AssistantAgent(
        AGENT,
        model_client=_client(list(scenario.turns), scenario.answer),
        tools=_tools(scenario),
        system_message="You help customers with orders.",
        description="Handles orders.",
        max_tool_iterations=len(scenario.turns) + 1,
    )


async def _run(scenario: Scenario, multi_agent: bool, split: bool = False) -> None:
    if not multi_agent and not split:
        await _support(scenario).run(task=scenario.user)
        return
    support = _support(scenario)
    if not multi_agent:
        # A team runs its agents on autogen-core's SingleThreadedAgentRuntime: every message delivery is
        # traced, and with no span around the run each starts a trace of its own, linked to the sender's.
        team: Any = RoundRobinGroupChat(
            [support], termination_condition=TextMessageTermination(AGENT) | MaxMessageTermination(20)
        )
        await team.run(task=scenario.user)
        return
    triage = AssistantAgent(
        TRIAGE,
        model_client=_client([(Call(f"transfer_to_{AGENT}", {}),)], "unused", prefix="triage"),
        handoffs=[AGENT],
        system_message="Route the customer.",
        description="Routes requests.",
    )
    team = Swarm([triage, support], termination_condition=TextMessageTermination(AGENT) | MaxMessageTermination(20))
    await team.run(task=scenario.user)


def capture(scenario: Scenario, multi_agent: bool = False, name: str | None = None) -> None:
    EXPORTER.clear()
    with PROVIDER.get_tracer("luckrate.capture").start_as_current_span(
        f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
    ):
        asyncio.run(_run(scenario, multi_agent))
    _write(f"{name or scenario.name}.autogen")


def capture_split(scenario: Scenario, multi_agent: bool = False, name: str | None = None) -> None:
    """As a deployment runs it: no span around the run (so no ``luckrate.output_ok`` either), a team on
    the runtime; the export holds every trace the run made, the agents' ``create_agent`` traces too."""
    EXPORTER.clear()
    asyncio.run(_run(scenario, multi_agent, split=True))
    _write(f"{name or scenario.name}.split.autogen")


def _write(stem: str) -> None:
    spans = EXPORTER.get_finished_spans()
    (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
    print(f"{stem}.otlp: {len(spans)} spans in {len({s.context.trace_id for s in spans})} traces")


if __name__ == "__main__":
    for s in SCENARIOS:
        capture(s)
    capture(BY_NAME["forbidden"], multi_agent=True, name="handoff")
    for s in SCENARIOS:
        capture_split(s)
    capture_split(BY_NAME["forbidden"], multi_agent=True, name="handoff")

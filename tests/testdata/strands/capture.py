"""Capture Strands Agents' native OpenTelemetry spans from real ``Agent`` runs on a scripted model (no
network). See README.md here. Each output file is one serialized ExportTraceServiceRequest.

Modes (each in its own process: Strands reads ``OTEL_SEMCONV_STABILITY_OPT_IN`` once, into a
process-wide tracer): ``default`` (message content as span events: ``gen_ai.user.message``,
``gen_ai.choice``, ``gen_ai.tool.message``) and ``latest`` (``gen_ai_latest_experimental``:
``gen_ai.input.messages`` / ``gen_ai.output.messages`` and ``gen_ai.tool.call.arguments`` / ``.result``).
Content off is Strands' redaction policy: ``gen_ai_unredacted_attributes=gen_ai.system_instructions``
in the same variable redacts every message, argument and result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

OUT = Path(__file__).resolve().parent
AGENT, TRIAGE = "support_agent", "triage_agent"
MODES = {"default": "", "latest": "gen_ai_latest_experimental"}
NO_CONTENT = "gen_ai_unredacted_attributes=gen_ai.system_instructions"


def main(mode: str, content: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # Strands traces through the global provider

    from strands import Agent, tool
    from strands.models.model import Model

    from tests.scenarios import BY_NAME, SCENARIOS, Call, Scenario, ScriptedTools

    class ScriptedModel(Model):
        """Streams the turns in order as toolUse blocks (ids ``<prefix>_<turn>_<n>``), then the answer;
        the turn is the number of its own toolUse messages already in the conversation."""

        def __init__(self, turns: list[Any], answer: str, prefix: str = "call"):
            self.turns, self.answer, self.prefix = turns, answer, prefix

        def update_config(self, **config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {"model_id": "scripted-chat"}

        async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
            raise NotImplementedError
            yield

        async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncGenerator[Any, None]:
            turn = sum(
                1
                for m in messages
                if m["role"] == "assistant"
                and any(
                    "toolUse" in b and b["toolUse"]["toolUseId"].startswith(self.prefix + "_") for b in m["content"]
                )
            )
            yield {"messageStart": {"role": "assistant"}}
            if turn < len(self.turns):
                for n, c in enumerate(self.turns[turn]):
                    yield {
                        "contentBlockStart": {
                            "start": {"toolUse": {"toolUseId": f"{self.prefix}_{turn}_{n}", "name": c.tool}}
                        }
                    }
                    yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(c.args)}}}}
                    yield {"contentBlockStop": {}}
                stop = "tool_use"
            else:
                yield {"contentBlockDelta": {"delta": {"text": self.answer}}}
                yield {"contentBlockStop": {}}
                stop = "end_turn"
            yield {"messageStop": {"stopReason": stop}}
            yield {
                "metadata": {
                    "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
                    "metrics": {"latencyMs": 1},
                }
            }

    def tools(scenario: Scenario) -> list[Any]:
        return [tool(f) for f in ScriptedTools(scenario).functions()]

    def support(scenario: Scenario) -> Any:
        return Agent(
            name=AGENT,
            model=ScriptedModel(list(scenario.turns), scenario.answer),
            tools=tools(scenario),
            system_prompt="You help customers with orders.",
            callback_handler=None,
        )

    def triage(scenario: Scenario) -> Any:
        """Strands' agents-as-tools pattern: the triage agent's tool runs the support agent."""
        helper = support(scenario)

        @tool
        def transfer_to_support_agent(request: str) -> str:
            """Hand the request to the support agent."""
            return str(helper(request))

        return Agent(
            name=TRIAGE,
            model=ScriptedModel(
                [(Call("transfer_to_support_agent", {"request": scenario.user}),)], scenario.answer, prefix="triage"
            ),
            tools=[transfer_to_support_agent],
            system_prompt="Route the customer.",
            callback_handler=None,
        )

    runs = [(s, s.name, support) for s in SCENARIOS]
    if content:
        runs.append((BY_NAME["forbidden"], "handoff", triage))
    for scenario, name, build in runs:
        exporter.clear()
        with provider.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            build(scenario)(scenario.user)
        spans = exporter.get_finished_spans()
        stem = f"{name}.{mode}{'' if content else '.nocontent'}.strands"
        (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
        print(f"{stem}.otlp: {len(spans)} spans")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode, opt_in in MODES.items():
            for content in ("content", "nocontent"):
                value = ",".join(v for v in (opt_in, NO_CONTENT if content == "nocontent" else "") if v)
                subprocess.run(
                    [sys.executable, __file__, mode, content],
                    check=True,
                    env={**os.environ, "OTEL_SEMCONV_STABILITY_OPT_IN": value},
                )

"""Capture Haystack's own OpenTelemetry tracing from real ``Agent`` runs on a scripted chat generator
(Haystack's ``MockChatGenerator`` with a ``response_fn``; no network). See README.md here. Each output
file is one serialized ExportTraceServiceRequest.

Content on is ``HAYSTACK_CONTENT_TRACING_ENABLED=true`` (Haystack reads it once, at import), so each
setting runs in its own process. A scenario whose agent asks a question and gets a reply is two
``Agent.run`` calls (the second with the first's messages and the user's reply) under one root span,
as a chat front end runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
TOOL_DOCS = {
    "lookup_order": ("Look up an order.", {"order_id": "string"}),
    "issue_refund": ("Refund an order.", {"order_id": "string", "amount": "number"}),
    "fetch_webpage": ("Fetch a web page.", {"url": "string"}),
    "send_email": ("Send an email.", {"to": "string", "body": "string"}),
    "delete_account": ("Delete a user's account.", {"user_id": "string"}),
    "escalate_to_human": ("Hand the conversation to a person.", {"reason": "string"}),
    "cancel_order": ("Cancel an order.", {"order_id": "string"}),
}


MODES = ("agent", "pipeline")
"""``agent``: the Agent run by itself (its spans name no agent); ``pipeline``: the Agent as a component
named ``support_agent`` of a ``Pipeline`` (a ``haystack.component.run`` span around its run names it)."""


def main(mode: str, content: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from haystack import Pipeline, tracing
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import MockChatGenerator
    from haystack.dataclasses import ChatMessage, ToolCall
    from haystack.tools import Tool
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

    from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario, ScriptedTools

    tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer("haystack")))

    def script(scenario: Scenario):
        """The scenario's turns in order; the turn is the number of assistant messages so far."""

        def respond(messages: list[Any], tools: Any = None) -> ChatMessage:
            turn = sum(1 for m in messages if m.role.value == "assistant")
            if turn >= len(scenario.turns):
                return ChatMessage.from_assistant(scenario.answer)
            step = scenario.turns[turn]
            if isinstance(step, Ask):
                return ChatMessage.from_assistant(step.text)
            return ChatMessage.from_assistant(
                tool_calls=[
                    ToolCall(tool_name=c.tool, arguments=c.args, id=f"call_{turn}_{n}") for n, c in enumerate(step)
                ]
            )

        return respond

    def tools(scenario: Scenario) -> list[Tool]:
        answer = ScriptedTools(scenario).answer

        def make(name: str) -> Tool:
            def run(**kwargs: Any) -> str:
                return answer(name)

            doc, params = TOOL_DOCS[name]
            schema = {
                "type": "object",
                "properties": {k: {"type": t} for k, t in params.items()},
                "required": list(params),
            }
            return Tool(name=name, description=doc, parameters=schema, function=run)

        return [make(name) for name in TOOL_DOCS]

    for scenario in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        exporter.clear()
        agent = Agent(
            chat_generator=MockChatGenerator(response_fn=script(scenario)),
            tools=tools(scenario),
            system_prompt="You help customers with orders.",
        )
        run = agent.run
        if mode == "pipeline":
            pipeline = Pipeline()
            pipeline.add_component("support_agent", agent)

            def run(messages: list[Any], pipeline: Pipeline = pipeline) -> dict[str, Any]:
                return pipeline.run({"support_agent": {"messages": messages}})["support_agent"]

        with provider.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            messages = [ChatMessage.from_user(scenario.user)]
            for turn in [t for t in scenario.turns if isinstance(t, Ask)] + [None]:
                messages = run(messages=messages)["messages"]
                if turn is not None:
                    messages = messages + [ChatMessage.from_user(turn.reply)]
        spans = exporter.get_finished_spans()
        stem = f"{scenario.name}.{mode}{'' if content else '.nocontent'}.haystack"
        (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
        print(f"{stem}.otlp: {len(spans)} spans")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode in MODES:
            for setting in ("content", "nocontent"):
                env = {
                    **os.environ,
                    "HAYSTACK_CONTENT_TRACING_ENABLED": "true" if setting == "content" else "false",
                    "HAYSTACK_TELEMETRY_ENABLED": "False",
                }
                subprocess.run([sys.executable, __file__, mode, setting], env=env, check=True)

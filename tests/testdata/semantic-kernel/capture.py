"""Capture Semantic Kernel's built-in OpenTelemetry diagnostics from real ``ChatCompletionAgent`` runs
on a scripted chat completion service (no network). See README.md here. Each output file is one
serialized ExportTraceServiceRequest.

Content on is ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true``, off is
``..._ENABLE_OTEL_DIAGNOSTICS=true`` alone; Semantic Kernel reads them once, so each runs in its own process.
"""

from __future__ import annotations

import asyncio
import json
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
AGENT = "support_agent"
PLUGIN = "orders"


def main(content: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # Semantic Kernel traces through the global provider

    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
    from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
    from semantic_kernel.contents import ChatMessageContent, FunctionCallContent
    from semantic_kernel.contents.utils.author_role import AuthorRole
    from semantic_kernel.functions import kernel_function
    from semantic_kernel.utils.telemetry.model_diagnostics.decorators import trace_chat_completion

    from tests.scenarios import SCENARIOS, Scenario, ScriptedTools

    class ScriptedChat(ChatCompletionClientBase):
        """The scenario's turns in order as function calls (ids ``call_<turn>_<n>``), then the answer; the
        turn is the number of assistant messages with function calls so far."""

        SUPPORTS_FUNCTION_CALLING = True
        scenario: Any = None

        def get_prompt_execution_settings_class(self):
            return PromptExecutionSettings

        @trace_chat_completion("scripted")
        async def _inner_get_chat_message_contents(self, chat_history, settings) -> list[ChatMessageContent]:
            turn = sum(
                1
                for m in chat_history.messages
                if m.role == AuthorRole.ASSISTANT and any(isinstance(i, FunctionCallContent) for i in m.items)
            )
            turns = self.scenario.turns
            if turn >= len(turns):
                return [ChatMessageContent(role=AuthorRole.ASSISTANT, content=self.scenario.answer)]
            return [
                ChatMessageContent(
                    role=AuthorRole.ASSISTANT,
                    items=[
                        FunctionCallContent(
                            id=f"call_{turn}_{n}",
                            function_name=c.tool,
                            plugin_name=PLUGIN,
                            arguments=json.dumps(c.args),
                        )
                        for n, c in enumerate(turns[turn])
                    ],
                )
            ]

    def plugin(scenario: Scenario) -> Any:
        answer = ScriptedTools(scenario).answer

        class Orders:
            @kernel_function(description="Look up an order.")
            def lookup_order(self, order_id: str) -> str:
                return answer("lookup_order")

            @kernel_function(description="Refund an order.")
            def issue_refund(self, order_id: str, amount: float) -> str:
                return answer("issue_refund")

            @kernel_function(description="Fetch a web page.")
            def fetch_webpage(self, url: str) -> str:
                return answer("fetch_webpage")

            @kernel_function(description="Send an email.")
            def send_email(self, to: str, body: str) -> str:
                return answer("send_email")

            @kernel_function(description="Delete a user's account.")
            def delete_account(self, user_id: str) -> str:
                return answer("delete_account")

            @kernel_function(description="Hand the conversation to a person.")
            def escalate_to_human(self, reason: str) -> str:
                return answer("escalate_to_human")

        return Orders()

    async def run(scenario: Scenario, keyword: bool = False) -> None:
        kernel = Kernel()
        kernel.add_plugin(plugin(scenario), plugin_name=PLUGIN)
        service = ScriptedChat(ai_model_id="scripted-chat", service_id="scripted")
        service.scenario = scenario
        agent = ChatCompletionAgent(
            service=service, kernel=kernel, name=AGENT, instructions="You help customers with orders."
        )
        if keyword:  # the agent span then records no input: its tracer reads the messages positionally only
            await agent.get_response(messages=scenario.user)
        else:
            await agent.get_response(scenario.user)

    runs = [(s, s.name, False) for s in SCENARIOS]
    if content:
        runs.append((SCENARIOS[2], "injected-keyword", True))
    for scenario, name, keyword in runs:
        exporter.clear()
        with provider.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            asyncio.run(run(scenario, keyword))
        spans = exporter.get_finished_spans()
        stem = f"{name}{'' if content else '.nocontent'}.semantic-kernel"
        (OUT / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
        print(f"{stem}.otlp: {len(spans)} spans")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        main(sys.argv[1] == "content")
    else:
        for setting in ("content", "nocontent"):
            env = {
                **os.environ,
                "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS": "true",
                "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE": "true"
                if setting == "content"
                else "false",
            }
            subprocess.run([sys.executable, __file__, setting], env=env, check=True)

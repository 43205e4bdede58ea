"""Capture Semantic Kernel's built-in diagnostics *with its log records*, as its telemetry guide sets them up:
spans to a tracer provider, and SK's own Python ``logging`` records to an OTel ``LoggingHandler`` on the
``semantic_kernel`` logger. With the sensitive flag on
(``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true``) the chat spans' messages are not
span attributes but these records: one per message sent (``event.name`` = ``gen_ai.system.message`` /
``gen_ai.user.message`` / ``gen_ai.assistant.message`` / ``gen_ai.tool.message``, body the message as JSON
text) and one ``gen_ai.choice`` per answer, each carrying the span context of the chat span that wrote it.

The agent is a ``ChatCompletionAgent`` on a scripted chat service (as in capture.py: ``ScriptedChat``, SK's
``trace_chat_completion`` decorator on its ``_inner_get_chat_message_contents``) with the scenario's tools as
``@kernel_function``s of a plugin ``orders``, called as SK's own samples call it,
``get_response(messages=...)``: the agent span then records no input, and the user's words are only in the
log records. Content off is ``..._ENABLE_OTEL_DIAGNOSTICS=true`` alone (no records are written). Each setting
runs in its own process (SK reads them once). No network, no LLM.

Output per run: ``<name>[.nocontent].logs.semantic-kernel.traces.otlp`` (ExportTraceServiceRequest) and
``...logs.otlp`` (ExportLogsServiceRequest).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

OUT = Path(__file__).resolve().parent
AGENT = "support_agent"
PLUGIN = "orders"


def main(content: bool) -> None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    provider, logger_provider = TracerProvider(), LoggerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    trace.set_tracer_provider(provider)  # Semantic Kernel traces through the global provider
    handler = LoggingHandler(logger_provider=logger_provider)
    sk_logger = logging.getLogger("semantic_kernel")
    sk_logger.addHandler(handler)
    sk_logger.setLevel(logging.INFO)

    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
    from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
    from semantic_kernel.contents import ChatMessageContent, FunctionCallContent
    from semantic_kernel.contents.utils.author_role import AuthorRole
    from semantic_kernel.functions import kernel_function
    from semantic_kernel.utils.telemetry.model_diagnostics.decorators import trace_chat_completion

    from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario, ScriptedTools

    class ScriptedChat(ChatCompletionClientBase):
        """The scenario's turns in order as function calls (ids ``call_<turn>_<n>``), a question as text, then
        the answer; the turn is the number of assistant messages so far."""

        SUPPORTS_FUNCTION_CALLING = True
        scenario: Any = None

        def get_prompt_execution_settings_class(self):
            return PromptExecutionSettings

        @trace_chat_completion("scripted")
        async def _inner_get_chat_message_contents(self, chat_history, settings) -> list[ChatMessageContent]:
            turn = sum(1 for m in chat_history.messages if m.role == AuthorRole.ASSISTANT)
            turns = self.scenario.turns
            if turn >= len(turns):
                return [ChatMessageContent(role=AuthorRole.ASSISTANT, content=self.scenario.answer)]
            if isinstance(turns[turn], Ask):
                return [ChatMessageContent(role=AuthorRole.ASSISTANT, content=turns[turn].text)]
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

            @kernel_function(description="Cancel an order.")
            def cancel_order(self, order_id: str) -> str:
                return answer("cancel_order")

        return Orders()

    async def run(scenario: Scenario) -> None:
        kernel = Kernel()
        kernel.add_plugin(plugin(scenario), plugin_name=PLUGIN)
        service = ScriptedChat(ai_model_id="scripted-chat", service_id="scripted")
        service.scenario = scenario
        agent = ChatCompletionAgent(
            service=service, kernel=kernel, name=AGENT, instructions="You help customers with orders."
        )
        response = await agent.get_response(messages=scenario.user)
        for turn in scenario.turns:  # the user's reply to each question, on the same thread
            if isinstance(turn, Ask):
                response = await agent.get_response(messages=turn.reply, thread=response.thread)

    for scenario in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        spans.clear()
        logs.clear()
        with provider.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            asyncio.run(run(scenario))
        logger_provider.force_flush()
        stem = OUT / f"{scenario.name}{'' if content else '.nocontent'}.logs.semantic-kernel"
        finished = spans.get_finished_spans()
        records = list(logs.get_finished_logs())
        Path(f"{stem}.traces.otlp").write_bytes(encode_spans(finished).SerializeToString())
        Path(f"{stem}.logs.otlp").write_bytes(encode_logs(records).SerializeToString())
        print(f"{stem.name}: {len(finished)} spans, {len(records)} log records")


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

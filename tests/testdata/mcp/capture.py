"""Capture MCP tool calls traced by the MCP Python SDK's own tracing and by Traceloop's MCP instrumentation.

A hand-written tool loop over the official ``openai`` client (the contrib OpenAI instrumentation, latest
GenAI conventions) runs each tool the scripted model asks for through an MCP client session connected in
memory to an MCP server holding the scenario tools; the tool loop and the scripted chat-completions server
on 127.0.0.1 are tests/testdata/openai-v2/capture.py's. A tool whose scenario call has an ``error`` raises
in the server, which answers ``isError: true``; the loop sends the result text back to the model. No
network, no LLM. See README.md here; each output file is one serialized ExportTraceServiceRequest.

Modes, each in its own venv (they need different ``mcp`` releases) and process:
``sdk`` (mcp 2.3.0: its built-in client and server spans, no instrumentation; the server in memory, in
the client's process), ``sdk-stdio`` (the same over stdio: the server is this script run as a subprocess
with its own tracer provider and resource, continuing the client's trace from the request's ``_meta``;
its spans are merged into the client's export as a second resource) and ``traceloop`` (mcp 1.30.0 under
opentelemetry-instrumentation-mcp 0.62.4). Content on / off is the OpenAI
instrumentation's ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` / unset, and for
``traceloop`` also ``TRACELOOP_TRACE_CONTENT=true`` / ``false``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
_spec = importlib.util.spec_from_file_location("openai_v2_capture", ROOT / "tests/testdata/openai-v2/capture.py")
loop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loop)

from openai import AsyncOpenAI  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario  # noqa: E402

OUT = Path(__file__).resolve().parent
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
MODES = {  # mode -> (venv python, environment with content on, environment with content off)
    "sdk": (
        "/tmp/msgsvenv/bin/python",
        {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
        LATEST,
    ),
    "sdk-stdio": (
        "/tmp/msgsvenv/bin/python",
        {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
        LATEST,
    ),
    "traceloop": (
        "/tmp/mcp1venv/bin/python",
        {
            **LATEST,
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
            "TRACELOOP_TRACE_CONTENT": "true",
        },
        {**LATEST, "TRACELOOP_TRACE_CONTENT": "false"},
    ),
}
logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the server logs each failing tool's traceback


def server(scenario: Scenario, make: Any) -> Any:
    """An MCP server (``make(name)``: MCPServer or FastMCP) whose tools return the scenario's results in call order."""
    script = list(scenario.calls)
    mcp = make("support-tools")

    def answer(tool: str, args: dict[str, Any]) -> str:
        call = script.pop(0)
        assert (call.tool, call.args) == (tool, args), (call, tool, args)
        if call.error is not None:
            raise RuntimeError(call.error)
        return call.result or ""

    @mcp.tool()
    def lookup_order(order_id: str) -> str:
        return answer("lookup_order", {"order_id": order_id})

    @mcp.tool()
    def issue_refund(order_id: str, amount: int) -> str:
        return answer("issue_refund", {"order_id": order_id, "amount": amount})

    @mcp.tool()
    def fetch_webpage(url: str) -> str:
        return answer("fetch_webpage", {"url": url})

    @mcp.tool()
    def send_email(to: str, body: str) -> str:
        return answer("send_email", {"to": to, "body": body})

    @mcp.tool()
    def delete_account(user_id: str) -> str:
        return answer("delete_account", {"user_id": user_id})

    @mcp.tool()
    def escalate_to_human(reason: str) -> str:
        return answer("escalate_to_human", {"reason": reason})

    @mcp.tool()
    def cancel_order(order_id: str) -> str:
        return answer("cancel_order", {"order_id": order_id})

    return mcp


async def tool_loop(client: AsyncOpenAI, scenario: Scenario, call_tool: Any) -> None:
    """As openai-v2's loop, the tools run by ``call_tool(name, args) -> CallToolResult``."""
    replies = [t.reply for t in scenario.turns if isinstance(t, Ask)]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You help customers with orders."},
        {"role": "user", "content": scenario.user},
    ]
    for _ in range(len(scenario.turns) + 1):
        reply = await client.chat.completions.create(model="scripted-chat", messages=messages, tools=loop.TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            if not replies:
                return
            messages.append({"role": "user", "content": replies.pop(0)})
            continue
        for tc in message.tool_calls:
            result = await call_tool(tc.function.name, json.loads(tc.function.arguments))
            text = "".join(getattr(c, "text", "") for c in result.content)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": text})


async def run(scenario: Scenario, mode: str, base_url: str) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="unused-offline", max_retries=0)
    if mode == "sdk-stdio":
        from mcp import Client, StdioServerParameters

        spans = OUT / f".{scenario.name}.server-spans"
        params = StdioServerParameters(
            command=sys.executable, args=[__file__, "serve", scenario.name, str(spans)], env=dict(os.environ)
        )
        async with Client(params) as session:
            await tool_loop(client, scenario, session.call_tool)
    elif mode == "sdk":
        from mcp import Client
        from mcp.client._memory import InMemoryTransport
        from mcp.server.mcpserver import MCPServer

        # Through the in-memory transport, not Client(server): an in-process server skips the JSON-RPC
        # dispatcher, which is what opens the SDK's client spans.
        async with Client(InMemoryTransport(server(scenario, MCPServer))) as session:
            await tool_loop(client, scenario, session.call_tool)
    else:
        from mcp.server.fastmcp import FastMCP
        from mcp.shared.memory import create_connected_server_and_client_session

        mcp = server(scenario, FastMCP)
        async with create_connected_server_and_client_session(mcp._mcp_server) as session:
            await tool_loop(client, scenario, session.call_tool)


def capture(scenario: Scenario, mode: str, content: bool) -> None:
    handler = type("Handler", (loop.ScriptedModel,), {"scenario": scenario})
    http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        loop.EXPORTER.clear()
        with loop.PROVIDER.get_tracer("luckrate.capture").start_as_current_span(
            f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
        ):
            asyncio.run(run(scenario, mode, f"http://127.0.0.1:{http.server_port}/v1"))
    finally:
        http.shutdown()
        http.server_close()
        thread.join()
    request = encode_spans(loop.EXPORTER.get_finished_spans())
    served = OUT / f".{scenario.name}.server-spans"
    if served.exists():  # the stdio server's spans, under its own resource
        request.resource_spans.extend(ExportTraceServiceRequest.FromString(served.read_bytes()).resource_spans)
        served.unlink()
    stem = f"{scenario.name}.{mode}{'' if content else '.nocontent'}.mcp"
    (OUT / f"{stem}.otlp").write_bytes(request.SerializeToString())
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    print(f"{stem}.otlp: {len(spans)} spans")


class FileExporter(SpanExporter):
    """Writes every span ended so far to ``path`` (one ExportTraceServiceRequest), after each export: the
    server process may be ended as soon as its client goes."""

    def __init__(self, path: Path):
        self.path, self.spans = path, []

    def export(self, spans: Any) -> SpanExportResult:
        self.spans.extend(spans)
        self.path.write_bytes(encode_spans(self.spans).SerializeToString())
        return SpanExportResult.SUCCESS


def serve(name: str, path: str) -> None:
    """The stdio server of ``sdk-stdio``: the scenario's tools, traced under their own resource."""
    from mcp.server.mcpserver import MCPServer

    provider = TracerProvider(resource=Resource.create({"service.name": "support-tools"}))
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(Path(path))))
    trace.set_tracer_provider(provider)
    scenario = next(s for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,) if s.name == name)
    server(scenario, MCPServer).run("stdio")


def main(mode: str, content: bool) -> None:
    trace.set_tracer_provider(loop.PROVIDER)  # the MCP SDK traces through the global provider
    OpenAIInstrumentor().instrument(tracer_provider=loop.PROVIDER)
    if mode == "traceloop":
        from opentelemetry.instrumentation.mcp import McpInstrumentor

        McpInstrumentor().instrument(tracer_provider=loop.PROVIDER)
    for s in SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,):
        capture(s, mode, content)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2] == "content")
    else:
        for mode, (python, on, off) in MODES.items():
            for content, env in (("content", on), ("nocontent", off)):
                subprocess.run([python, __file__, mode, content], env={**os.environ, **env}, check=True)

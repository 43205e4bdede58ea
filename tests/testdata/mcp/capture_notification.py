"""Capture the trace the MCP SDK's server writes for the ``notifications/initialized`` notification.

A client on the initialize handshake (``mode="legacy"``) sends ``notifications/initialized`` with no
``_meta``, so the server's tracing middleware opens its span with no trace context: a trace of one span,
no agent, model or tool span in it. Written to ``initialized.sdk.mcp.otlp`` beside the other captures.

    .venv/bin/pip install 'mcp==2.3.0' && .venv/bin/python tests/testdata/mcp/capture_notification.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

HERE = Path(__file__).resolve().parent


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-tools"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # the MCP SDK traces through the global provider

    from mcp import Client
    from mcp.client._memory import InMemoryTransport
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("support-tools")

    @server.tool()
    def lookup_order(order_id: str) -> str:
        return f"order {order_id}: delivered"

    async def handshake() -> None:
        async with Client(InMemoryTransport(server), mode="legacy"):
            pass

    asyncio.run(handshake())
    spans = [s for s in exporter.get_finished_spans() if s.name == "notifications/initialized"]
    assert len(spans) == 1 and spans[0].parent is None, spans
    (HERE / "initialized.sdk.mcp.otlp").write_bytes(encode_spans(spans).SerializeToString())


if __name__ == "__main__":
    main()

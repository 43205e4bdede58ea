"""Instrument an agent and send its runs to `luckrate serve` (run beside `luckrate serve --spec examples/spec.py`).

Most frameworks trace themselves (docs/instrumentations.md); this is the shape luckrate reads when you trace a
hand-written agent yourself with the OpenTelemetry SDK: one `invoke_agent` span per run, one `execute_tool`
span per tool call under it, and the run's output verdict as `luckrate.output_ok` on that span. When a
framework owns the root span, open your own span around its call and set the verdict there (the root's
attribute wins), or record a `gen_ai.evaluation.result` event and start luckrate with `--output-evaluation`.

    pip install 'luckrate[otlp]'    # the SDK's OTLP exporter
    python examples/instrument.py [HOST:PORT]

Without HOST:PORT, the exporter sends where OTEL_EXPORTER_OTLP_ENDPOINT says (a collector in front of
luckrate: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14317 for collector-config/otelcol-single-host.yaml),
else to luckrate on localhost:4317.
"""

import json
import sys

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

# The standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, ..._TRACES_ENDPOINT) unless HOST:PORT is given.
exporter = OTLPSpanExporter(endpoint=sys.argv[1], insecure=True) if len(sys.argv) > 1 else OTLPSpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
provider.add_span_processor(BatchSpanProcessor(exporter))
tracer = provider.get_tracer("my-agent")


def call_tool(name: str, args: dict, run_tool) -> str:
    with tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(args),
            }
        )
        result = run_tool(**args)
        span.set_attribute("gen_ai.tool.call.result", result)
        return result


with tracer.start_as_current_span("invoke_agent support_agent") as run:
    run.set_attributes(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Refund order ORD-12345"}]}]
            ),
        }
    )
    order = call_tool("lookup_order", {"order_id": "ORD-12345"}, lambda order_id: '{"status": "delivered"}')
    call_tool("issue_refund", {"order_id": "ORD-12345"}, lambda order_id: "refunded")
    run.set_attribute("luckrate.output_ok", True)  # your output eval's verdict on this run

provider.shutdown()  # flush before exit

"""The OpenTelemetry Python SDK's OTLP trace exporters (HTTP/protobuf and gRPC), each with and without gzip,
through a TracerProvider and BatchSpanProcessor as an instrumented agent uses them: every run graded as
the core grades it."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import grpc
from luckrate import demo
from tests.interop.harness import assert_graded_right, runs_for
from tests.service.harness import Server, record_runs

CASES = [(exporter, gzip) for exporter in ("http", "grpc") for gzip in (False, True)]


class Recording(SpanExporter):
    """The real exporter, keeping each export's result (the SDK only logs a failure)."""

    def __init__(self, inner: SpanExporter):
        self.inner, self.results, self.spans = inner, [], 0

    def export(self, spans):
        result = self.inner.export(spans)
        self.results.append(result)
        self.spans += len(spans) if result is SpanExportResult.SUCCESS else 0
        return result

    def shutdown(self):
        self.inner.shutdown()


@pytest.fixture(scope="module")
def server():
    with Server("--root-grace", "1") as s:
        yield s


def exporter_for(server: Server, kind: str, gzip: bool) -> SpanExporter:
    if kind == "http":
        return HttpSpanExporter(
            endpoint=server.http + "/v1/traces",
            compression=HttpCompression.Gzip if gzip else HttpCompression.NoCompression,
        )
    return GrpcSpanExporter(
        endpoint=server.grpc,
        insecure=True,
        compression=grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression,
    )


@pytest.mark.parametrize("kind, gzip", CASES, ids=[f"{k}-{'gzip' if g else 'none'}" for k, g in CASES])
def test_python_exporter_is_graded_right(server, kind, gzip):
    agent = f"py-{kind}-{'gzip' if gzip else 'none'}"
    runs = runs_for(agent)
    exporter = Recording(exporter_for(server, kind, gzip))
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=20, schedule_delay_millis=50))
    tracer = provider.get_tracer("luckrate.interop")
    for run in runs:
        demo.emit(tracer, run)
    assert provider.force_flush(30_000)
    provider.shutdown()
    assert exporter.results and all(r is SpanExportResult.SUCCESS for r in exporter.results), exporter.results
    assert exporter.spans == len(record_runs(runs))
    assert_graded_right(server, agent, runs)

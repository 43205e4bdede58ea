"""Round trip of one small OTLP/HTTP export on a kept-alive connection, by encoding and answer.

    .venv/bin/python benchmarks/http_keepalive.py [--requests N]

One ``luckrate serve`` subprocess; this process sends N requests one after another on a single
``http.client`` connection (what every OTLP/HTTP exporter keeps open), each one run of the benchmark
traffic (9 spans, fresh trace ids), and prints the median and p90 wall time from sending the request to
having read the whole answer:

- protobuf 200: the answer has an empty body;
- OTLP/JSON 200: the answer's body is ``{}``;
- OTLP/JSON 400: a request that is not JSON, answered with a ``google.rpc.Status`` as JSON.

An answer whose headers and body leave in two writes with Nagle's algorithm on waits for the client's
delayed ACK (about 40 ms on Linux) on every request after the connection's first few: these rows show it.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import statistics
import struct
import time

import harness
import traffic
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTO = "application/x-protobuf"
JSON = "application/json"


def _request(n: int) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.scope_spans.add().spans.extend(traffic.trace_spans(struct.pack(">QQ", 7, n + 1), n))
    return req


def _json(req: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON as the SDKs send it: ids in hex, not proto3 JSON's base64."""
    doc = json_format.MessageToDict(req, use_integers_for_enums=True)
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(doc).encode()


def _body(kind: str, n: int) -> tuple[bytes, str]:
    if kind == "protobuf 200":
        return _request(n).SerializeToString(), PROTO
    if kind == "OTLP/JSON 200":
        return _json(_request(n)), JSON
    return b"{not json", JSON


def measure(port: int, kind: str, requests: int) -> list[float]:
    """Milliseconds per round trip, one connection kept alive for all ``requests``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    expected = 400 if kind.endswith("400") else 200
    times = []
    try:
        for n in range(requests):
            body, ctype = _body(kind, n)
            t = time.perf_counter()
            conn.request("POST", "/v1/traces", body, {"Content-Type": ctype})
            response = conn.getresponse()
            response.read()
            times.append((time.perf_counter() - t) * 1000)
            if response.status != expected:
                raise SystemExit(f"{kind}: HTTP {response.status}, expected {expected}")
    finally:
        conn.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    server = harness.Serve()
    try:
        print("| answer | median ms | p90 ms |\n|---|---:|---:|")
        for kind in ("protobuf 200", "OTLP/JSON 200", "OTLP/JSON 400"):
            times = measure(server.ports["http"], kind, args.requests)
            p90 = statistics.quantiles(times, n=10)[-1]
            print(f"| {kind} | {statistics.median(times):.2f} | {p90:.2f} |")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

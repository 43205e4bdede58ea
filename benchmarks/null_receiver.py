"""Null OTLP receiver: the ceiling for a Python receiver on this machine.

It does the least any receiver must: decode the ``ExportTraceServiceRequest``, count the spans, and walk
every span's attributes into a dict (the cheapest useful look at a span). It buffers, assembles and
grades nothing. Same servers as ``luckrate serve``: a grpcio server with 8 worker threads taking raw
bytes, and a stdlib ThreadingHTTPServer whose listening socket has a 4 MiB receive buffer (with the
default buffer, large uploads idle on TCP windowing).

    python benchmarks/null_receiver.py --transport grpc   # prints "listening PORT"; SIGTERM to stop
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

RCVBUF = 4 * 1024 * 1024
SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class Counter:
    def __init__(self) -> None:
        self.spans = 0
        self.attributes = 0
        self.lock = threading.Lock()

    def consume(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        spans = attributes = 0
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {kv.key: _value(kv.value) for kv in span.attributes}
                    spans += 1
                    attributes += len(attrs)
        with self.lock:
            self.spans += spans
            self.attributes += attributes


def _value(v):
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def serve_grpc(counter: Counter, port: int) -> tuple[int, callable]:
    server = grpc.server(ThreadPoolExecutor(8), options=[("grpc.max_receive_message_length", 64 << 20)])

    def export(body: bytes, context) -> bytes:
        counter.consume(body)
        return b""  # an empty ExportTraceServiceResponse

    handler = grpc.unary_unary_rpc_method_handler(export)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),))
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return port, lambda: server.stop(1).wait()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        super().server_bind()


def serve_http(counter: Counter, port: int) -> tuple[int, callable]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            counter.consume(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = _Server(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], server.shutdown


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--transport", choices=("grpc", "http"), required=True)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    counter = Counter()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    port, shutdown = (serve_grpc if args.transport == "grpc" else serve_http)(counter, args.port)
    print(f"listening {port}", flush=True)
    while not stop.wait(0.5):
        pass
    shutdown()
    print(json.dumps({"spans": counter.spans, "attributes": counter.attributes}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Load generator: sends pre-serialized OTLP trace requests as fast as allowed (or at a set rate).

Runs in its own process so that it never shares an interpreter lock with the receiver it measures.
Back-pressure is honoured the way the Collector's exporter does it: a throttled request
(``RESOURCE_EXHAUSTED`` / HTTP 429 or 503) is retried after a short pause, and counted.

With several targets, each request goes to ``crc32(trace-id prefix) % len(targets)``: every trace of a
request shares that prefix, so this is the Collector's load-balancing exporter routing by trace id.

Prints one JSON line when it stops: requests and spans acknowledged, throttles, errors, and a
timeline of ``[monotonic_seconds, spans_acked]`` samples (CLOCK_MONOTONIC is system-wide, so the
parent can cut the same window it scraped the server in).

    python benchmarks/loadgen.py --transport grpc --target 127.0.0.1:4317 --duration 5
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import signal
import sys
import threading
import time
import zlib

import grpc

import traffic

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
CHUNK = 64 * 1024
PAUSE = 0.05
"""Seconds before retrying a throttled request: shorter than the Collector's backoff, so the server never
idles for want of offered load."""


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.spans = self.throttled = self.errors = 0
        self.first_error = ""

    def acked(self, spans: int) -> None:
        with self.lock:
            self.requests += 1
            self.spans += spans

    def failed(self, throttled: bool, error: str = "") -> None:
        with self.lock:
            if throttled:
                self.throttled += 1
            else:
                self.errors += 1
                self.first_error = self.first_error or error[:300]


class GrpcSender:
    def __init__(self, target: str):
        self.channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", 64 << 20)])
        # Raw bytes in, raw bytes out: the request is already serialized.
        self.call = self.channel.unary_unary(EXPORT)

    def send(self, body: bytes) -> bool | str:
        """True when accepted, False when throttled, else the error text."""
        try:
            self.call(body, timeout=60)
            return True
        except grpc.RpcError as e:
            return False if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else f"{e.code()}: {e.details()}"


class HttpSender:
    chunked = False
    """Send each body as 64 KiB chunks (Transfer-Encoding: chunked, as the JS exporters do)."""

    def __init__(self, target: str):
        host, port = target.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)

    def send(self, body: bytes) -> bool | str:
        if self.chunked:
            pieces = (body[i : i + CHUNK] for i in range(0, len(body), CHUNK))
            self.conn.request(
                "POST", "/v1/traces", pieces, {"Content-Type": "application/x-protobuf"}, encode_chunked=True
            )
        else:
            self.conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        response = self.conn.getresponse()
        response.read()
        if response.status == 200:
            return True
        return False if response.status in (429, 503) else f"HTTP {response.status}"


def run(args: argparse.Namespace) -> dict:
    template = traffic.build(tools_only=args.tools_only)
    sender_type = GrpcSender if args.transport == "grpc" else HttpSender
    stats = Stats()
    numbers = itertools.count()
    stop = threading.Event()
    start = time.monotonic()
    deadline = start + args.duration
    interval = template.spans / args.rate if args.rate else 0.0

    def worker() -> None:
        senders = [sender_type(t) for t in args.target]
        while not stop.is_set():
            n = next(numbers)
            if args.requests and n >= args.requests:
                return
            if interval:
                wait = start + n * interval - time.monotonic()
                if wait > 0 and stop.wait(wait):
                    return
            marker = traffic.marker_for(n, args.nonce)
            body = template.body.replace(template.marker, marker)
            sender = senders[zlib.crc32(marker) % len(senders)]
            while not stop.is_set():
                outcome = sender.send(body)
                if outcome is True:
                    stats.acked(template.spans)
                    break
                stats.failed(outcome is False, outcome or "")
                if outcome is not False:
                    if isinstance(sender, HttpSender):
                        sender.conn.close()
                    time.sleep(PAUSE)
                    break
                time.sleep(PAUSE)

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    timeline = []
    print("started", flush=True)
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline and not stop.is_set():
        timeline.append((time.monotonic(), stats.spans))
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(5)
    timeline.append((time.monotonic(), stats.spans))
    return {
        "requests": stats.requests,
        "spans": stats.spans,
        "throttled": stats.throttled,
        "errors": stats.errors,
        "first_error": stats.first_error,
        "spans_per_request": template.spans,
        "elapsed": time.monotonic() - start,
        "timeline": timeline,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--transport", choices=("grpc", "http"), required=True)
    p.add_argument("--target", action="append", required=True, help="HOST:PORT (repeat to split by trace id)")
    p.add_argument("--duration", type=float, default=5.0, help="stop after this many seconds")
    p.add_argument("--requests", type=int, default=0, help="stop after this many requests (0: no limit)")
    p.add_argument("--rate", type=float, default=0.0, help="spans per second to offer (0: as fast as possible)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    p.add_argument("--tools-only", action="store_true", help="traces of execute_tool spans only")
    p.add_argument("--chunked", action="store_true", help="HTTP: chunked request bodies (no Content-Length)")
    p.add_argument("--nonce", type=lambda s: int(s, 0), default=None, help="keeps trace ids apart across runs")
    args = p.parse_args(argv)
    HttpSender.chunked = args.chunked
    if args.nonce is None:
        args.nonce = int.from_bytes(os.urandom(4), "big")
    print(json.dumps(run(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

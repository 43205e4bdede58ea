"""A load generator for the overload and shutdown tests: runs in its own process, sends demo traces (fresh
trace ids) to one receiver at a fixed request rate for a bounded time and count, and reports what it
saw for every request, so the test can match the client's view with the server's counters exactly.

Pacing waits until each request's scheduled time; that is rate control, never an assertion.
"""

from __future__ import annotations

import http.client
import random
import time
from collections import Counter

import grpc
from google.rpc import error_details_pb2, status_pb2

from tests.reliability.harness import fresh_request, span_count

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def generate(
    transport: str,
    address: str,
    rate: float,
    seconds: float,
    traces_per_request: int,
    seed: int,
    results,
    token: str | None = None,
) -> None:
    """Send for ``seconds`` at ``rate`` requests/s (at most rate*seconds requests); put a summary dict on
    ``results`` (a multiprocessing queue)."""
    rng = random.Random(seed)
    seen: Counter = Counter()
    send = _grpc_sender(address, token) if transport == "grpc" else _http_sender(address, token)
    start = time.monotonic()
    limit = int(rate * seconds)
    for i in range(limit):
        due = start + i / rate
        now = time.monotonic()
        if now > start + seconds:
            break
        if due > now:
            time.sleep(due - now)
        req = fresh_request(rng, traces_per_request)
        n = span_count(req)
        outcome = send(req.SerializeToString())
        seen[f"requests_{outcome}"] += 1
        seen[f"spans_{outcome}"] += n
        seen[f"traces_{outcome}"] += traces_per_request
    seen["elapsed_ms"] = int((time.monotonic() - start) * 1000)
    results.put((transport, dict(seen)))


def _http_sender(address: str, token: str | None):
    host, port = address.rsplit(":", 1)
    conn = [http.client.HTTPConnection(host, int(port), timeout=30)]
    headers = {"Content-Type": "application/x-protobuf"}
    if token:
        headers["Authorization"] = f"Bearer {token}"

    def send(body: bytes) -> str:
        try:
            conn[0].request("POST", "/v1/traces", body, headers)
            resp = conn[0].getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            conn[0].close()
            conn[0] = http.client.HTTPConnection(host, int(port), timeout=30)
            return "error"
        if resp.status == 200:
            return "accepted"
        if resp.status in (429, 503):
            return "throttled" if (resp.getheader("Retry-After") or "").isdigit() else "throttled_without_retry"
        return f"http_{resp.status}"

    return send


def _grpc_sender(address: str, token: str | None):
    channel = grpc.insecure_channel(address)
    call = channel.unary_unary(EXPORT)
    metadata = (("authorization", f"Bearer {token}"),) if token else None

    def send(body: bytes) -> str:
        try:
            call(body, timeout=30, metadata=metadata)
            return "accepted"
        except grpc.RpcError as e:
            if e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                return "throttled" if _retry_info(e) else "throttled_without_retry"
            return f"grpc_{e.code().name}"

    return send


def _retry_info(e: grpc.RpcError) -> bool:
    for key, value in e.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            for detail in st.details:
                info = error_details_pb2.RetryInfo()
                if detail.Unpack(info):
                    return info.retry_delay.seconds > 0
    return False

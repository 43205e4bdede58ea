"""Which HTTP server should luckrate's OTLP/HTTP receiver stand on? Each candidate as a null receiver, on
the benchmark traffic, with Content-Length and with chunked bodies.

    .venv/bin/python benchmarks/http_servers.py              # 3 rounds, about 2 minutes on 2 cores
    .venv/bin/python benchmarks/http_servers.py --quick      # 1 short round

Candidates (h11 and aiohttp are not luckrate dependencies: `pip install h11 aiohttp` to measure them):

- ``luckrate``: the real ``HttpReceiver`` (stdlib ThreadingHTTPServer, thread per connection, with its
  connection cap, request deadline, framing in receive/framing.py) in front of a null intake;
- ``h11``: h11 for the framing, one thread per connection (h11 leaves the I/O to its caller, so the
  cap, the deadline and the lingering close would still be ours to write);
- ``aiohttp``: aiohttp's web server (llhttp parser in C, asyncio), one event loop.

Every candidate decodes each request with luckrate's ``request_from_protobuf`` and walks every span's
attributes (the null receiver's work), and answers 200 only after that. Figures are spans/s acknowledged
by the load generator (its own process, its own core), median of the rounds, rounds interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import signal
import socket
import statistics
import sys
import threading
import time
from socketserver import BaseRequestHandler, ThreadingTCPServer

import harness
from null_receiver import RCVBUF, Counter

CANDIDATES = ("luckrate", "h11", "aiohttp")


# ---- the servers (run as ``http_servers.py --serve NAME``) --------------------------------------------


def serve_luckrate(counter: Counter) -> tuple[int, callable]:
    from luckrate.service.config import Endpoint
    from luckrate.service.assemble.intake import Outcome
    from luckrate.service.receive.http_receiver import HttpReceiver
    from luckrate.service.receive.options import ReceiverOptions

    class NullIntake:
        def accept(self, request, transport: str) -> Outcome:
            _consume(counter, request)
            return Outcome(False)

        def refuse(self, transport: str, reason: str) -> None:
            pass

    receiver = HttpReceiver(Endpoint("127.0.0.1", 0), NullIntake(), ReceiverOptions(64 << 20, retry_after=1))
    receiver.start()
    return receiver.port, receiver.shutdown


def _consume(counter: Counter, request) -> None:
    """Counter.consume after the decode: walk every span's attributes into a dict."""
    from null_receiver import _value

    spans = attributes = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                attributes += len({kv.key: _value(kv.value) for kv in span.attributes})
                spans += 1
    with counter.lock:
        counter.spans += spans
        counter.attributes += attributes


def _decode(body: bytes):
    from luckrate.adapters.otlp import request_from_protobuf

    return request_from_protobuf(body)


def serve_h11(counter: Counter) -> tuple[int, callable]:
    import h11

    class Handler(BaseRequestHandler):
        def handle(self) -> None:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
            body = bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(self.request.recv(256 * 1024))
                elif isinstance(event, h11.Request):
                    body.clear()
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    _consume(counter, _decode(bytes(body)))
                    out = conn.send(
                        h11.Response(
                            status_code=200,
                            headers=[("Content-Type", "application/x-protobuf"), ("Content-Length", "0")],
                        )
                    )
                    self.request.sendall(out + conn.send(h11.EndOfMessage()))
                    conn.start_next_cycle()
                else:  # ConnectionClosed, PAUSED on a protocol switch: done with this connection
                    return

    class Server(ThreadingTCPServer):
        daemon_threads = allow_reuse_address = True

        def server_bind(self) -> None:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            super().server_bind()

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], server.shutdown


def serve_aiohttp(counter: Counter) -> tuple[int, callable]:
    from aiohttp import web

    async def export(request: web.Request) -> web.Response:
        _consume(counter, _decode(await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    loop = asyncio.new_event_loop()
    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/traces", export)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return port, lambda: asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)


def serve(name: str) -> int:
    counter = Counter()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    port, shutdown = {"luckrate": serve_luckrate, "h11": serve_h11, "aiohttp": serve_aiohttp}[name](counter)
    print(f"listening {port}", flush=True)
    while not stop.wait(0.5):
        pass
    shutdown()
    print(f"spans {counter.spans}", flush=True)
    return 0


# ---- the measurement ----------------------------------------------------------------------------------


def one_round(name: str, chunked: bool, warm: float, window: float, pin: bool) -> float:
    cpus = sorted(harness.os.sched_getaffinity(0))
    server_cpu, load_cpu = ({cpus[0]}, {cpus[1]}) if pin and len(cpus) >= 2 else (None, None)
    proc = harness.Proc([sys.executable, __file__, "--serve", name], "listening", server_cpu)
    try:
        load = harness.Load(
            "http",
            [f"127.0.0.1:{int(proc.ready_line.split()[1])}"],
            duration=warm + window + 0.5,
            cpus=load_cpu,
            chunked=chunked,
        )
        start = time.monotonic()
        result = load.result()
        if result["errors"]:
            raise RuntimeError(f"{name}: {result['first_error']}")
        return harness.rate_between(result["timeline"], start + warm, start + warm + window)
    finally:
        proc.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--serve", choices=CANDIDATES, help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-pin", action="store_true")
    p.add_argument("--only", nargs="*", choices=CANDIDATES, default=list(CANDIDATES))
    args = p.parse_args(argv)
    if args.serve:
        return serve(args.serve)
    repeats, warm, window = (1, 0.5, 1.5) if args.quick else (3, 1.5, 4.0)
    missing = [n for n in args.only if n != "luckrate" and importlib.util.find_spec(n) is None]
    if missing:
        print(f"not installed, left out: {', '.join(missing)} (pip install {' '.join(missing)})")
    cases = [(name, chunked) for name in args.only if name not in missing for chunked in (False, True)]
    rounds: dict[tuple[str, bool], list[float]] = {c: [] for c in cases}
    print(f"load average before: {harness.load_average()}", flush=True)
    for _ in range(repeats):
        for case in cases:
            rounds[case].append(one_round(*case, warm, window, not args.no_pin))
    base = {
        chunked: statistics.median(rounds[("luckrate", chunked)])
        for chunked in (False, True)
        if ("luckrate", chunked) in rounds
    }
    print(f"load average after: {harness.load_average()}")
    print("| server | body | spans/s (median) | rounds | vs luckrate |\n|---|---|---:|---|---:|")
    for (name, chunked), values in rounds.items():
        median = statistics.median(values)
        ratio = f"{median / base[chunked]:.2f}x" if chunked in base else ""
        print(
            f"| {name} | {'chunked' if chunked else 'Content-Length'} | {median:,.0f} | "
            f"{' '.join(f'{v:,.0f}' for v in values)} | {ratio} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``luckrate serve --workers N``: one receiving process, N grading processes, the traffic routed by trace id.

Every test runs the real server as a subprocess (tests/service/harness.Server) and reads back /metrics, the
final OTLP push and the verdict log. Worker processes are found in /proc as the server's spawned children.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from luckrate.service.assemble.routing import route
from luckrate.service.config import InvalidConfig, ServiceConfig, build_config, worker_count
from tests.reliability.harness import fresh_request, identity, raw_span, request_with, settled, span_count
from tests.service.harness import (
    KINDS,
    PROTO,
    MetricsSink,
    Server,
    by_trace,
    core_verdicts,
    post,
    record_runs,
    runs,
    total,
    two_workers,
    wait_until,
    worker_pids,
)


@pytest.mark.parametrize("value, expected", [("auto", "auto"), ("AUTO", "auto"), ("2", 2), (4, 4)])
def test_workers_takes_a_count_or_auto(value, expected):
    assert build_config({"workers": value}, "t").workers == expected


@pytest.mark.parametrize("value", [0, -1, "0", "two", 1.5, True])
def test_a_bad_worker_count_is_refused_naming_the_key(value):
    with pytest.raises(InvalidConfig) as e:
        build_config({"workers": value}, "t")
    assert str(e.value) == f'1 problem in config t\n  workers: expected a positive integer or "auto", got {value!r}'


def test_auto_is_the_cores_this_process_may_use():
    assert ServiceConfig().workers == "auto"
    assert worker_count(ServiceConfig()) == len(os.sched_getaffinity(0))
    assert worker_count(ServiceConfig(workers=3)) == 3


@pytest.mark.parametrize(
    "cpu_max, cap",
    [("200000 100000\n", 2), ("150000 100000\n", 2), ("50000 100000\n", 1), ("max 100000\n", None), (None, None)],
)
def test_auto_is_capped_by_a_cgroup_cpu_quota(tmp_path, cpu_max, cap):
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    cores = len(os.sched_getaffinity(0))
    assert worker_count(ServiceConfig(), cpu_max=path) == (min(cores, cap) if cap else cores)


def outcomes(s: dict) -> dict:
    return {
        (o, p): total(s, "luckrate_runs_total", output=o, path=p)
        for o in ("pass", "fail", "unknown")
        for p in ("ok", "bad")
    }


@pytest.mark.parametrize("n", [2, 4])
def test_a_trace_split_over_connections_and_requests_is_graded_once_whole(n):
    """Each span of each trace goes in its own request, round robin over four connections (two gRPC
    channels, two HTTP clients): every trace still reaches one worker, whole, and is graded once."""
    spans = record_runs(runs(KINDS))
    expected, taint = core_verdicts(spans)
    traces = by_trace(spans)
    with Server("--workers", str(n), "--root-grace", "1") as server:
        wait_until(lambda: len(worker_pids(server)) == n, f"{n} worker processes")
        exporters = [
            GrpcSpanExporter(endpoint=server.grpc, insecure=True),
            HttpSpanExporter(endpoint=server.http + "/v1/traces"),
            GrpcSpanExporter(endpoint=server.grpc, insecure=True),
            HttpSpanExporter(endpoint=server.http + "/v1/traces"),
        ]
        sent = 0
        for trace in traces:
            for span in trace:  # children first, the root last: as the SDK exports them
                assert exporters[sent % 4].export([span]) is SpanExportResult.SUCCESS
                sent += 1
        s = server.wait_metric("luckrate_runs_total", len(traces))
        assert total(s, "luckrate_traces_completed_total") == len(traces)
        assert total(s, "luckrate_traces_completed_total", reason="root_ended") == len(traces)
        assert total(s, "luckrate_spans_assembled_total") == len(spans)
        assert {k: v for k, v in outcomes(s).items() if v} == dict(expected)
        assert total(s, "luckrate_taint_total") == taint
        identity(s)
        for exporter in exporters:
            exporter.shutdown()


def _scrape_once_settled(flags: tuple[str, ...], requests: list[bytes], log: Path) -> dict:
    with Server("--root-grace", "0.3", "--verdict-log", str(log), *flags) as server:
        for body in requests:
            assert post(server.http + "/v1/traces", body, PROTO)[0] == 200
        s = settled(server)
        assert server.terminate() == 0
    return s


def test_metrics_are_the_sums_over_workers(tmp_path):
    """The same traffic through one process and through three workers gives the same /metrics, series for
    series, with no per-worker label, and the same verdict log lines."""
    rng = random.Random(15)
    requests = [fresh_request(rng, traces=7).SerializeToString() for _ in range(12)]
    one = _scrape_once_settled(("--workers", "1"), requests, tmp_path / "one.jsonl")
    three = _scrape_once_settled(("--workers", "3"), requests, tmp_path / "three.jsonl")

    def counts(s: dict) -> dict:
        # Every counter and gauge series, and each histogram's count (its sum and buckets are timings).
        return {k: v for k, v in s.items() if not k[0].endswith(("_bucket", "_sum", "_created"))}

    assert counts(one) == counts(three)
    assert total(three, "luckrate_runs_total") == 84
    assert total(three, "luckrate_spans_lost_total", reason="worker_died") == 0
    assert not any("worker" in dict(labels) for _, labels in three)

    def lines(path: Path) -> list[dict]:
        return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda d: d["trace_id"])

    assert lines(tmp_path / "one.jsonl") == lines(tmp_path / "three.jsonl")
    assert len(lines(tmp_path / "three.jsonl")) > 0


class Load:
    """Sends requests of fresh traces over HTTP from a thread until stopped. Each request also holds one
    span of a trace that never gets its root, so every worker always holds spans (they wait for
    ``idle_timeout``) and a killed worker always loses some."""

    def __init__(self, server: Server, seed: int):
        self.server, self.rng = server, random.Random(seed)
        self.accepted = self.requests = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            req = fresh_request(self.rng, traces=3)
            req.resource_spans.extend(
                request_with(
                    [raw_span(self.rng.randbytes(16), self.rng.randbytes(8), parent=self.rng.randbytes(8))]
                ).resource_spans
            )
            try:
                status, _, _ = post(self.server.http + "/v1/traces", req.SerializeToString(), PROTO)
            except OSError:  # the server stopped listening (SIGTERM)
                return
            self.requests += 1
            if status == 200:
                self.accepted += span_count(req)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def final_identity(final: dict) -> dict:
    """The identities on the final OTLP push (every counter's cumulative value)."""

    def t(name: str) -> float:
        return sum(v for (n, _), v in final.items() if n == name)

    terms = {
        k: t(f"luckrate.{k}")
        for k in (
            "spans.received",
            "spans.accepted",
            "spans.rejected",
            "spans.assembled",
            "spans.duplicate",
            "spans.late",
            "spans.lost",
            "spans.replayed",
            "traces.completed",
            "runs",
            "traces.ungraded",
            "grade.errors",
            "traces.active",
        )
    }
    assert terms["spans.received"] == terms["spans.accepted"] + terms["spans.rejected"], terms
    assert terms["spans.accepted"] + terms["spans.replayed"] == (
        terms["spans.assembled"] + terms["spans.duplicate"] + terms["spans.late"] + terms["spans.lost"]
    ), terms
    assert terms["traces.completed"] == terms["runs"] + terms["traces.ungraded"] + terms["grade.errors"], terms
    assert terms["traces.active"] == 0, terms
    return terms


def test_a_worker_killed_under_load_is_replaced_and_the_identities_still_hold():
    sink = MetricsSink()
    try:
        with Server(
            "--workers",
            "2",
            "--root-grace",
            "0.2",
            "--idle-timeout",
            "300",
            "--otlp-metrics",
            sink.url,
            "--otlp-metrics-interval",
            "3600",
        ) as server:
            first = wait_until(lambda: two_workers(server), "2 worker processes")
            load = Load(server, seed=1)
            try:
                server.wait_metric_at_least("luckrate_runs_total", 10)
                victim = min(first)
                os.kill(victim, signal.SIGKILL)
                wait_until(
                    lambda: total(server.scrape(), "luckrate_spans_lost_total", reason="worker_died") > 0,
                    "the dead worker's spans to be counted as lost",
                )
                restarted = wait_until(lambda: two_workers(server, without=victim), "a new worker process")
                runs_then = total(server.scrape(), "luckrate_runs_total")
                server.wait_metric_at_least("luckrate_runs_total", runs_then + 10)  # graded after the restart
                s = server.scrape()
                assert total(s, "luckrate_traces_active") > 0  # root-less traces still held: identities wait for them
            finally:
                load.stop()
            assert first - {victim} <= restarted  # the other worker went on
            server.proc.send_signal(signal.SIGTERM)
            assert server.terminate() == 0
        terms = final_identity(sink.last())
        assert terms["spans.lost"] > 0
        assert terms["spans.accepted"] == load.accepted
        assert any("worker 0 died" in line or "worker 1 died" in line for line in server.stderr)
    finally:
        sink.close()


def test_sigterm_under_load_grades_everything_every_worker_holds(tmp_path):
    sink = MetricsSink()
    log = tmp_path / "v.jsonl"
    try:
        with Server(
            "--workers",
            "2",
            "--root-grace",
            "300",
            "--idle-timeout",
            "300",
            "--otlp-metrics",
            sink.url,
            "--otlp-metrics-interval",
            "3600",
            "--verdict-log",
            str(log),
        ) as server:
            loads = [Load(server, seed=2), Load(server, seed=3)]
            server.wait_metric_at_least("luckrate_traces_active", 20)
            server.proc.send_signal(signal.SIGTERM)
            assert server.terminate() == 0
            for load in loads:
                load.stop()
        final = sink.last()
        terms = final_identity(final)
        assert terms["spans.lost"] == 0
        shutdown = final[("luckrate.traces.completed", (("reason", "shutdown"),))]
        assert shutdown == terms["traces.completed"] >= 20  # nothing completed before: everything at SIGTERM
        # Every graded fresh trace (3 a request, 1 in 10 of the demo mix clean) with violations is logged once.
        logged = [json.loads(line)["trace_id"] for line in log.read_text().splitlines()]
        assert len(logged) == len(set(logged)) > 0
    finally:
        sink.close()


def test_route_spreads_trace_ids_over_every_worker():
    rng = random.Random(0)
    for n in (2, 3, 4):
        seen = [0] * n
        for _ in range(4000):
            seen[route(rng.randbytes(16), n)] += 1
        assert min(seen) > 4000 / n * 0.8, seen


def test_spans_are_judged_for_workers_as_for_one_process_and_shared_out():
    """The shares are what each worker will keep, so they must agree with compaction span for span: a
    worker's death is accounted from them."""
    from luckrate.adapters.otlp import records_from_request
    from luckrate.service.assemble.routing import judge_spans

    rng = random.Random(7)
    req = fresh_request(rng, traces=20)
    bad = [
        raw_span(bytes(16), rng.randbytes(8)),
        raw_span(rng.randbytes(16), bytes(8)),
        raw_span(rng.randbytes(16), rng.randbytes(8), parent=b"\x01"),
        raw_span(rng.randbytes(16), rng.randbytes(8)),
    ]
    req.resource_spans.extend(request_with(bad).resource_spans)
    usable, rejected, picks = judge_spans(req, 3)
    every, every_rejected = records_from_request(req)
    assert (usable, sorted(map(repr, rejected))) == (len(every), sorted(map(repr, every_rejected)))
    assert sum(map(len, picks)) == usable == span_count(req) - 3
    spans = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    unusable = {spans.index(s) for s in spans if s.trace_id in (bad[0].trace_id, bad[1].trace_id, bad[2].trace_id)}
    assert picks == [
        [p for p, s in enumerate(spans) if p not in unusable and route(s.trace_id, 3) == i] for i in range(3)
    ]
    # What each worker compacts from its positions is its share of the records, in request order.
    from luckrate.adapters.otlp.compaction import records_at

    for i in range(3):
        assert [r.span_id for r in records_at(req, picks[i])] == [r.span_id for r in every if route(r.trace_id, 3) == i]


def test_pool_lifecycle_in_process_start_consume_kill_stop():
    """The service built in this process with two grading processes: stop without start is safe; spans
    sent are graded; a killed worker's spans come back to the budget and are counted as lost; stop drains
    the rest and leaves nothing reserved."""
    from dataclasses import replace

    from luckrate.core.spec_loader import load_specs
    from luckrate.service.app import build
    from tests.service.harness import SPEC, parse_metrics
    from tests.builders import config

    assert build(config(workers=2), load_specs(SPEC)).stop(5)  # never started
    cfg = replace(config(workers=2), idle_timeout=300.0, root_grace=0.2, max_request_bytes=2**24)
    svc = build(cfg, load_specs(SPEC))
    svc.start()
    try:
        url = f"http://127.0.0.1:{svc.receivers[1].port}/v1/traces"
        rng = random.Random(11)

        def send(traces: int) -> int:
            req = fresh_request(rng, traces=traces)
            held = [raw_span(rng.randbytes(16), rng.randbytes(8), parent=rng.randbytes(8)) for _ in range(40)]
            req.resource_spans.extend(request_with(held).resource_spans)
            assert post(url, req.SerializeToString(), PROTO)[0] == 200
            return traces

        def scrape() -> dict:
            return parse_metrics(svc.metrics.reader.render())

        graded = send(12)
        wait_until(lambda: total(scrape(), "luckrate_runs_total") == graded, "the complete traces to be graded")
        assert svc.budget.used == 40  # the root-less spans, held by the workers
        victim = svc.grading.pids[0]
        os.kill(victim, signal.SIGKILL)
        lost = wait_until(
            lambda: total(scrape(), "luckrate_spans_lost_total", reason="worker_died"),
            "the dead worker's spans to be counted",
        )
        assert 0 < lost < 40 and svc.budget.used == 40 - lost
        wait_until(lambda: len(svc.grading.pids) == 2 and victim not in svc.grading.pids, "a new worker")
        graded += send(5)
        wait_until(lambda: total(scrape(), "luckrate_runs_total") == graded, "traces graded after the restart")
    finally:
        assert svc.stop(20)
    assert svc.budget.used == 0 and svc.grading.active == 0


def test_a_stalled_worker_bounds_the_bytes_queued_for_it():
    """A worker that stops reading (SIGSTOP here; a slow one in life) gets requests queued whole. Past
    4 x max_request_bytes queued for it, requests are throttled as a full buffer would be, though the
    span budget has room; once it reads again, they are accepted."""
    from dataclasses import replace

    from luckrate.core.spec_loader import load_specs
    from luckrate.service.app import build
    from tests.service.harness import SPEC, parse_metrics
    from tests.builders import config

    svc = build(replace(config(workers=2), max_request_bytes=64 * 1024, root_grace=0.2), load_specs(SPEC))
    svc.start()
    rng = random.Random(3)
    url = f"http://127.0.0.1:{svc.receivers[1].port}/v1/traces"
    body = lambda: fresh_request(rng, traces=4).SerializeToString()  # noqa: E731
    wait_until(lambda: len(svc.grading.pids) == 2, "2 workers")
    stalled = svc.grading.pids[0]
    os.kill(stalled, signal.SIGSTOP)
    try:
        statuses = []
        for _ in range(400):  # bounded: the pipe (1 MiB) plus 256 KiB is about 80 of these requests
            statuses.append(post(url, body(), PROTO)[0])
            if statuses[-1] == 429:
                break
        assert statuses[-1] == 429 and set(statuses[:-1]) == {200}
        assert svc.grading.backlog > 4 * 64 * 1024
        assert svc.budget.used < svc.budget.limit
        s = parse_metrics(svc.metrics.reader.render())
        assert total(s, "luckrate_requests_refused_total", transport="http", reason="buffer_full") == 1
    finally:
        os.kill(stalled, signal.SIGCONT)
    wait_until(lambda: svc.grading.backlog == 0, "the stalled worker to read its backlog")
    assert post(url, body(), PROTO)[0] == 200
    assert svc.stop(30)
    assert svc.budget.used == 0


def test_workers_exit_at_once_when_the_receiving_process_is_killed():
    """SIGKILL leaves the workers no one to report to: they exit instead of grading what they hold."""
    rng = random.Random(5)
    with Server("--workers", "2", "--root-grace", "300", "--idle-timeout", "300") as server:
        pids = wait_until(lambda: two_workers(server), "2 worker processes")
        assert post(server.http + "/v1/traces", fresh_request(rng, traces=20).SerializeToString(), PROTO)[0] == 200
        server.wait_metric_at_least("luckrate_traces_active", 20)
        server.proc.kill()
        server.proc.wait(10)

        def gone(pid: int) -> bool:
            try:
                return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                return True

        wait_until(lambda: all(gone(p) for p in pids), "the workers to exit")


def test_a_killed_worker_s_log_records_are_counted_and_their_room_given_back():
    """Log records held by a grading process that dies are counted as dropped (worker_died), apart from
    spans, and their budget comes back; records for the other worker's traces are still graded."""
    from dataclasses import replace

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    from luckrate.service.assemble.routing import route
    from luckrate.core.spec_loader import load_specs
    from luckrate.service.app import build
    from tests.service.harness import SPEC, parse_metrics
    from tests.builders import config

    cfg = replace(config(workers=2), idle_timeout=300.0, max_trace_age=600.0, root_grace=0.2)
    svc = build(cfg, load_specs(SPEC))
    svc.start()
    try:
        url = f"http://127.0.0.1:{svc.receivers[1].port}/v1/logs"
        req = ExportLogsServiceRequest()
        records = req.resource_logs.add().scope_logs.add().log_records
        tids = [(i + 1).to_bytes(16, "big") for i in range(40)]  # traces whose spans have not come
        records.extend(LogRecord(trace_id=t, event_name="gen_ai.choice") for t in tids)
        assert post(url, req.SerializeToString(), PROTO)[0] == 200

        def scrape() -> dict:
            return parse_metrics(svc.metrics.reader.render())

        wait_until(lambda: svc.grading.active == 40, "the records' traces to be held")
        assert svc.budget.used == 40
        first = sum(route(t, 2) == 0 for t in tids)
        os.kill(svc.grading.pids[0], signal.SIGKILL)
        dropped = wait_until(
            lambda: total(scrape(), "luckrate_log_records_dropped_total", reason="worker_died"),
            "the dead worker's records to be counted",
        )
        assert dropped == first and svc.budget.used == 40 - first
        assert total(scrape(), "luckrate_spans_lost_total", reason="worker_died") == 0
    finally:
        assert svc.stop(20)
    s = parse_metrics(svc.metrics.reader.render())
    assert total(s, "luckrate_log_records_dropped_total", reason="no_spans") == 40 - first
    assert svc.budget.used == 0

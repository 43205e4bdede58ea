"""``luckrate serve --wal``: kill -9 under load, restart on the same log, and nothing acknowledged is lost or
graded twice; a damaged, full or unusable log.

Every test runs the real server (tests/service/harness.Server) and real HTTP / gRPC clients. "Graded" is
read from the verdict log (``--verdict-log-all``: one line per graded trace, written by both processes
into the same file) and from ``/metrics``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from luckrate.adapters.otlp import OutputRule, records_from_request, trajectory_from_spans
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble import wal_format as fmt
from tests.reliability.harness import fresh_request, identity, report, settled, span_count
from tests.service.harness import SPEC, Server, post, total, wait_until

PROTO = "application/x-protobuf"
LOGS_CAPTURE = (
    Path(__file__).resolve().parents[1] / "testdata" / "openai-v2" / "clean.latest.event_only.openai-v2.logs.otlp"
)
"""GenAI events recorded by the real contrib OpenAI instrumentation."""


def _traces(req: ExportTraceServiceRequest) -> dict[bytes, list]:
    out: dict[bytes, list] = {}
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                out.setdefault(span.trace_id, []).append(span)
    return out


def _split(rng: random.Random) -> tuple[ExportTraceServiceRequest, ExportTraceServiceRequest]:
    """One fresh trace in two requests: its first half of spans (no root), then the rest with the root."""
    whole = fresh_request(rng, traces=1)
    spans = [(rs, ss, s) for rs in whole.resource_spans for ss in rs.scope_spans for s in ss.spans]
    children = [t for t in spans if t[2].parent_span_id]
    first = {id(t[2]) for t in children[: max(1, len(children) // 2)]}
    parts = (ExportTraceServiceRequest(), ExportTraceServiceRequest())
    for rs, ss, span in spans:
        out = parts[0 if id(span) in first else 1].resource_spans.add()
        out.resource.CopyFrom(rs.resource)
        scope = out.scope_spans.add()
        scope.scope.CopyFrom(ss.scope)
        scope.spans.append(span)
    return parts


def _verdict(spans_request: ExportTraceServiceRequest) -> tuple:
    """What the core says of a whole trace: (output, checks in order)."""
    records, _ = records_from_request(spans_request)
    traj = trajectory_from_spans(records, OutputRule())
    g = grade(traj, spec_for(load_specs(SPEC), traj.agent))
    return g.output, [v.check for v in g.violations]


class Load:
    """Sends, over HTTP from a thread until stopped or the server dies, requests of two complete fresh
    traces plus the first half of a third (held: its root comes after the restart). Keeps what was
    acknowledged (a 200 seen) and what was sent without an answer (in flight at the kill)."""

    def __init__(self, server: Server, seed: int):
        self.server, self.rng = server, random.Random(seed)
        self.acked: dict[bytes, int] = {}
        """Trace id -> spans acknowledged."""
        self.rest: dict[bytes, ExportTraceServiceRequest] = {}
        """Held trace id -> its second half, to send after the restart (also for the request in flight at
        the kill: whether its first half was logged is not known)."""
        self.wholes: dict[bytes, ExportTraceServiceRequest] = {}
        self.unanswered = 0
        """Spans in requests sent but not answered (the server died under them)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            req = fresh_request(self.rng, traces=2)
            first, rest = _split(self.rng)
            req.resource_spans.extend(first.resource_spans)
            try:
                status, _, _ = post(self.server.http + "/v1/traces", req.SerializeToString(), PROTO)
            except OSError:  # the server died under this request: it may or may not have been logged
                self.unanswered += span_count(req)
                (tid,) = _traces(first)
                self.rest[tid] = rest  # sent after the restart too, or a logged first half waits idle_timeout
                return
            if status != 200:
                continue
            for tid, spans in _traces(req).items():
                self.acked[tid] = self.acked.get(tid, 0) + len(spans)
            (tid,) = _traces(first)
            self.rest[tid] = rest
            whole = ExportTraceServiceRequest()
            whole.CopyFrom(first)
            whole.resource_spans.extend(rest.resource_spans)
            self.wholes[tid] = whole

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_under_load_then_restart_grades_every_acknowledged_span_once(tmp_path, workers):
    wal, verdicts = tmp_path / "wal", tmp_path / "verdicts.jsonl"
    flags = (
        "--wal",
        str(wal),
        "--verdict-log",
        str(verdicts),
        "--verdict-log-all",
        "--workers",
        str(workers),
        "--root-grace",
        "0.3",
        "--idle-timeout",
        "300",
    )
    with Server(*flags) as first:
        load = Load(first, seed=workers)
        try:
            first.wait_metric_at_least("luckrate_runs_total", 20)
            first.wait_metric_at_least("luckrate_traces_active", 10)  # held halves, and traces in their grace
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
        finally:
            load.stop()
    graded_before = {line["trace_id"] for line in _lines(verdicts)}
    assert graded_before and load.rest

    with Server(*flags) as second:
        replayed = total(second.scrape(), "luckrate_spans_replayed_total")
        for rest in load.rest.values():  # the held traces' second halves, roots included
            assert post(second.http + "/v1/traces", rest.SerializeToString(), PROTO)[0] == 200
        s = second.wait_metric("luckrate_traces_active", 0)
        s = settled(second)
        terms = identity(s)
        second.proc.send_signal(signal.SIGTERM)
        assert second.terminate() == 0

    lines = _lines(verdicts)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line["trace_id"]] = counts.get(line["trace_id"], 0) + 1
    twice = {t for t, n in counts.items() if n > 1}
    assert not twice, f"graded twice: {sorted(twice)[:5]}"
    missing = {tid.hex() for tid in load.acked} - set(counts)
    assert not missing, f"acknowledged, never graded: {sorted(missing)[:5]}"
    # A trace split over the restart is graded once, whole: as the core grades all its spans together.
    by_id = {line["trace_id"]: line for line in lines}
    for tid, whole in load.wholes.items():
        line = by_id[tid.hex()]
        assert (line["output"], [v["check"] for v in line["violations"]]) == _verdict(whole), tid.hex()
    # Replayed: every acknowledged span of a trace the killed process had not graded, and at most the one
    # request in flight when it died (logged, its answer never sent).
    expected = sum(n for tid, n in load.acked.items() if tid.hex() not in graded_before)
    assert expected <= replayed <= expected + load.unanswered, (expected, replayed, load.unanswered)
    assert terms["spans_replayed"] == replayed
    # SIGKILL may land inside the log's one write (the kernel stops a write between pages for a fatal signal): at
    # most that last record is torn, and cut off at replay. Nothing else may be damaged.
    assert total(s, "luckrate_wal_records_damaged_total", reason="checksum") == 0
    assert total(s, "luckrate_wal_records_damaged_total", reason="torn_tail") <= 1
    assert sorted(p.name for p in wal.glob("*.wal")) == []  # a clean stop leaves an empty log
    report(f"wal_kill9_workers{workers}_replayed_spans", replayed)
    report(f"wal_kill9_workers{workers}_acked_traces", len(load.acked))


def _held_log(tmp_path: Path, requests: int, seed: int = 7) -> tuple[Path, list[ExportTraceServiceRequest]]:
    """A log of ``requests`` acknowledged requests of complete traces not yet graded (root_grace 300), left
    by a kill -9."""
    wal, rng = tmp_path / "wal", random.Random(seed)
    sent = [fresh_request(rng, traces=3) for _ in range(requests)]
    with Server("--wal", str(wal), "--root-grace", "300", "--workers", "1") as server:
        for req in sent:
            assert post(server.http + "/v1/traces", req.SerializeToString(), PROTO)[0] == 200
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    return wal, sent


def _records(path: Path) -> list[fmt.Record]:
    return [r for r in fmt.scan(path.read_bytes()) if isinstance(r, fmt.Record)]


def _restart(wal: Path, expect_runs: int) -> dict:
    with Server("--wal", str(wal), "--root-grace", "0.2", "--workers", "1") as server:
        server.wait_metric("luckrate_runs_total", expect_runs)
        s = settled(server)
        identity(s)
        server.proc.send_signal(signal.SIGTERM)
        assert server.terminate() == 0
    return s


def test_a_truncated_last_segment_is_cut_back_counted_and_the_rest_replayed(tmp_path):
    wal, sent = _held_log(tmp_path, 5)
    (segment,) = wal.glob("*.wal")
    size = segment.stat().st_size
    os.truncate(segment, size - 100)  # the last record cut short: a crash in the middle of writing it
    s = _restart(wal, 3 * 4)
    assert total(s, "luckrate_wal_records_damaged_total", reason="torn_tail") == 1
    assert total(s, "luckrate_wal_records_damaged_total", reason="checksum") == 0
    assert total(s, "luckrate_spans_replayed_total") == sum(span_count(r) for r in sent[:4])


@pytest.mark.parametrize("where", ["payload", "header"])
def test_a_flipped_byte_in_the_middle_skips_that_record_and_replays_the_rest(tmp_path, where):
    wal, sent = _held_log(tmp_path, 5)
    (segment,) = wal.glob("*.wal")
    data = bytearray(segment.read_bytes())
    starts = [0]
    for r in _records(segment)[:-1]:
        starts.append(r.end)
    at = starts[2] + (fmt.HEADER.size + 50 if where == "payload" else 5)  # the third request's payload or length
    data[at] ^= 0x01
    segment.write_bytes(bytes(data))
    s = _restart(wal, 3 * 4)
    assert total(s, "luckrate_wal_records_damaged_total", reason="checksum") == 1
    assert total(s, "luckrate_wal_records_damaged_total", reason="torn_tail") == 0
    assert total(s, "luckrate_spans_replayed_total") == sum(span_count(r) for i, r in enumerate(sent) if i != 2)


def test_a_full_log_refuses_with_the_retryable_code_counts_it_and_recovers(tmp_path):
    """With a small ``wal_max_bytes`` and traces held (their roots never come, idle_timeout 1 s), the log
    fills: HTTP gets 503 + Retry-After, gRPC UNAVAILABLE, both counted; once the held traces are graded
    the log is trimmed and takes requests again."""
    rng = random.Random(3)
    wal = tmp_path / "wal"

    def held() -> ExportTraceServiceRequest:  # three traces' first halves: no root, graded at idle_timeout
        req = ExportTraceServiceRequest()
        for _ in range(3):
            req.resource_spans.extend(_split(rng)[0].resource_spans)
        return req

    with Server(
        "--wal", str(wal), "--wal-max-bytes", "200000", "--idle-timeout", "1", "--root-grace", "300", "--workers", "1"
    ) as server:
        statuses, refused_spans = [], 0
        for _ in range(2000):
            req = held()
            status, headers, body = post(server.http + "/v1/traces", req.SerializeToString(), PROTO)
            statuses.append(status)
            if status == 503:
                refused_spans += span_count(req)
                break
        assert statuses[-1] == 503 and set(statuses[:-1]) == {200}
        assert headers["Retry-After"] == "5"
        with grpc.insecure_channel(server.grpc) as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
            req = held()
            with pytest.raises(grpc.RpcError) as e:
                export(req.SerializeToString(), timeout=10)
            assert e.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "write-ahead log full (200000 bytes)" in e.value.details()
            refused_spans += span_count(req)
        s = server.scrape()
        assert total(s, "luckrate_requests_refused_total", reason="wal_full") == 2
        assert total(s, "luckrate_spans_rejected_total", reason="wal_full") == refused_spans
        assert total(s, "luckrate_wal_bytes") <= 200_000
        # Logs requests are not written to the log: a full log takes them all the same (docs/reliability.md).
        logs = ExportLogsServiceRequest.FromString(LOGS_CAPTURE.read_bytes())
        records = sum(len(sl.log_records) for rl in logs.resource_logs for sl in rl.scope_logs)
        assert post(server.http + "/v1/logs", logs.SerializeToString(), PROTO)[0] == 200
        with grpc.insecure_channel(server.grpc) as channel:
            channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")(
                logs.SerializeToString(), timeout=10
            )
        s = server.scrape()
        assert total(s, "luckrate_log_records_accepted_total") == 2 * records
        assert total(s, "luckrate_log_requests_refused_total") == 0
        assert total(s, "luckrate_requests_refused_total", reason="wal_full") == 2
        # The held traces are graded after 1 s idle; their segments go, and requests are taken again.
        wait_until(
            lambda: post(server.http + "/v1/traces", held().SerializeToString(), PROTO)[0] == 200,
            "the log to take requests again",
        )
        identity(settled(server))
        # The records' traces never sent a span (their spans were other requests' trace ids): dropped, counted.
        wait_until(
            lambda: total(server.scrape(), "luckrate_log_records_dropped_total") == 2 * records,
            "the log records to be dropped as no_spans",
        )
        s = server.scrape()
        assert total(s, "luckrate_log_records_received_total") == (
            total(s, "luckrate_log_records_accepted_total") + total(s, "luckrate_log_records_rejected_total")
        )
        server.proc.send_signal(signal.SIGTERM)
        assert server.terminate() == 0
    report("wal_full_accepted_requests_before_refusal", len(statuses) - 1)


@pytest.mark.parametrize(
    "make, problem",
    [
        (
            lambda d: (d.parent.mkdir(parents=True), d.parent.joinpath("x").write_text(""), d.parent / "x" / "wal")[-1],
            "Not a directory",
        ),  # as root (these tests' container) a mode without write permission is no obstacle
        (lambda d: d, "in use by another luckrate process"),
    ],
)
def test_an_unusable_log_directory_stops_the_start_with_a_clear_error(tmp_path, make, problem):
    import subprocess
    import sys

    from tests.service.harness import ROOT

    target = make(tmp_path / "a" / "wal")
    holder = None
    if "in use" in problem:
        holder = Server("--wal", str(target), "--workers", "1")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "luckrate.service",
                "--spec",
                str(SPEC),
                "--grpc",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                "--prometheus",
                "off",
                "--viewer",
                "127.0.0.1:0",
                "--wal",
                str(target),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    finally:
        if holder is not None:
            holder.proc.send_signal(signal.SIGTERM)
            assert holder.terminate() == 0
            holder.__exit__()
    assert proc.returncode == 2
    assert proc.stderr.startswith("luckrate serve: 1 problem in config wal\n  wal_dir: "), proc.stderr
    assert problem in proc.stderr and str(target) in proc.stderr


def test_a_grading_process_killed_under_load_has_its_traces_replayed_into_its_successor(tmp_path):
    """``--workers 2 --wal``: SIGKILL one grading process under load. What it held is counted as lost, as
    without the log, and read back from the log into the process that replaces it: every acknowledged
    trace is still graded exactly once, whole, and the identities close (lost and replayed both count)."""
    from tests.service.harness import two_workers

    verdicts = tmp_path / "verdicts.jsonl"
    with Server(
        "--wal",
        str(tmp_path / "wal"),
        "--verdict-log",
        str(verdicts),
        "--verdict-log-all",
        "--workers",
        "2",
        "--root-grace",
        "0.3",
        "--idle-timeout",
        "300",
    ) as server:
        before = wait_until(lambda: two_workers(server), "2 worker processes")
        load = Load(server, seed=11)
        try:
            server.wait_metric_at_least("luckrate_runs_total", 20)
            server.wait_metric_at_least("luckrate_traces_active", 10)
            victim = min(before)
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: two_workers(server, without=victim), "a new worker process")
            runs = total(server.scrape(), "luckrate_runs_total")
            server.wait_metric_at_least("luckrate_runs_total", runs + 10)
        finally:
            load.stop()
        for rest in load.rest.values():
            assert post(server.http + "/v1/traces", rest.SerializeToString(), PROTO)[0] == 200
        s = settled(server)
        terms = identity(s)
        server.proc.send_signal(signal.SIGTERM)
        assert server.terminate() == 0
    assert terms["spans_lost"] > 0 and terms["spans_replayed"] >= terms["spans_lost"]
    assert total(s, "luckrate_traces_active") == 0
    lines = _lines(verdicts)
    ids = [line["trace_id"] for line in lines]
    assert len(ids) == len(set(ids)), "a trace graded twice"
    assert {tid.hex() for tid in load.acked} <= set(ids)
    by_id = {line["trace_id"]: line for line in lines}
    for tid, whole in load.wholes.items():
        line = by_id[tid.hex()]
        assert (line["output"], [v["check"] for v in line["violations"]]) == _verdict(whole), tid.hex()
    report("wal_worker_killed_spans_lost", terms["spans_lost"])
    report("wal_worker_killed_spans_replayed", terms["spans_replayed"])

"""Tests 5 and 6: the real collector's loadbalancing exporter (routing_key: traceID, static resolver;
otelcol-loadbalancing.yaml + overlays/loadbalancing-static.yaml as shipped) in front of two real
``luckrate serve`` replicas.

5. The replicas' summed counters equal those of one luckrate fed the same traces directly, and no trace is
   split: each trace id is graded exactly once across the two verdict logs, with all its spans.
6. One replica is killed (SIGKILL, a crashed pod) while it holds buffered traces, restarted on the same
   port, and traffic goes on. luckrate's part: the replica loses exactly the traces its last scrape showed
   buffered and nothing else; the survivor and the restarted replica grade every later trace once, whole,
   with their accounting identities intact; nothing is graded twice.

To show "with all its spans", the spec is examples/spec.py with ``max_steps: 1`` at severity warn, so every
trace with a tool call is in the verdict log and its line says how many steps it was graded with
("N steps, budget 1"); each line must equal ``luckrate grade``'s verdict on the whole trace.
"""

from __future__ import annotations

import json
import runpy
import signal
from collections import Counter
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

from luckrate import demo
from tests.collector.harness import (
    GRACE,
    LOADBALANCING,
    OVERLAYS,
    Collector,
    delivered,
    exporter_spans,
    free_port,
    offline_verdicts,
    sdk_exporter,
    send,
)
from tests.reliability.harness import identity, settled
from tests.service.harness import SPEC, Server, record_runs, total, wait_until

BALANCER = "loadbalancing/static"
COMPARED = (
    "luckrate_runs_total",
    "luckrate_violations_total",
    "luckrate_taint_total",
    "luckrate_spans_assembled_total",
    "luckrate_traces_completed_total",
)


def _every_trace_logged_spec(tmp_path: Path) -> Path:
    spec = dict(runpy.run_path(str(SPEC))["SPEC"])
    spec.update(max_steps=1, severity={"max_steps": "warn"})
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def _balancer(*replicas: Server) -> dict:
    return {
        "exporters": {BALANCER: {"resolver": {"static": {"hostnames": [r.grpc for r in replicas]}}}},
        "service": {"pipelines": {"traces": {"exporters": [BALANCER]}}},
    }


def _replica(spec: Path, log: Path, *flags: str) -> Server:
    return Server("--root-grace", GRACE, "--verdict-log", str(log), *flags, spec=spec)


def _lines(*logs: Path) -> list[dict]:
    return [json.loads(line) for log in logs if log.exists() for line in log.read_text().splitlines()]


def _by_name(samples: dict) -> Counter:
    """The compared counters, per (name, labels) except traces_completed's reason (when a trace completes
    differs between a replica that saw it in two batches and one that saw it in one)."""
    out: Counter = Counter()
    for (name, labels), value in samples.items():
        if name in COMPARED:
            out[(name, labels if name != "luckrate_traces_completed_total" else ())] += value
    return out


def _runs_across(replicas: list[Server], runs: int) -> None:
    """Wait until the replicas have graded ``runs`` traces between them. The balancer's own "sent" counts a
    batch once it is in a replica's queue, not once that replica took it, so it cannot tell."""
    wait_until(
        lambda: sum(total(r.scrape(), "luckrate_runs_total") for r in replicas) >= runs,
        f"{runs} runs graded across the replicas",
        timeout=120,
    )


def _graded_whole(lines: list[dict], expected: dict[str, dict]) -> None:
    """Each line is one trace graded once, and its verdict is the CLI's on the whole trace."""
    ids = [line["trace_id"] for line in lines]
    assert len(ids) == len(set(ids)), f"graded twice: {[i for i, n in Counter(ids).items() if n > 1]}"
    for line in lines:
        want = expected[line["trace_id"]]
        assert (line["output"], line["violations"]) == (
            {True: "pass", False: "fail", None: "unknown"}[want["output_ok"]],
            want["violations"],
        ), line


def test_loadbalancing_splits_no_trace_and_the_sums_equal_one_replica(tmp_path: Path) -> None:
    spec = _every_trace_logged_spec(tmp_path)
    spans = record_runs([demo.nth_run(i) for i in range(100)])
    expected = offline_verdicts(spans, tmp_path, spec)
    assert all(run["violations"] for run in expected.values()), "every trace must reach the verdict log"
    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    with (
        _replica(spec, logs[0]) as a,
        _replica(spec, logs[1]) as b,
        Server("--root-grace", GRACE, spec=spec) as single,
        Collector(
            tmp_path, LOADBALANCING, OVERLAYS / "loadbalancing-static.yaml", override=_balancer(a, b)
        ) as collector,
    ):
        send(spans, sdk_exporter(collector, "grpc"))
        send(spans, OTLPSpanExporter(endpoint=single.grpc, insecure=True, timeout=30))  # the same traffic, direct
        failed = exporter_spans(delivered(collector, len(spans), BALANCER), "send_failed")
        want = settled(single)
        _runs_across([a, b], len(expected))
        sums = _by_name(settled(a)) + _by_name(settled(b))
        for replica in (a, b):
            identity(replica.scrape())
            assert total(replica.scrape(), "luckrate_runs_total") > 0, "the balancer sent this replica nothing"
    assert failed == 0
    assert sums == _by_name(want)
    assert total(want, "luckrate_runs_total") == len(expected)
    lines = _lines(*logs)
    _graded_whole(lines, expected)
    assert {line["trace_id"] for line in lines} == set(expected)


def test_a_killed_replica_loses_only_what_it_held(tmp_path: Path) -> None:
    spec = _every_trace_logged_spec(tmp_path)
    first = record_runs([demo.nth_run(i) for i in range(60)])
    second = record_runs([demo.nth_run(i) for i in range(60, 120)])
    expected = {**offline_verdicts(first, tmp_path, spec), **offline_verdicts(second, tmp_path, spec)}
    logs = {name: tmp_path / f"{name}.jsonl" for name in ("a", "b", "b2")}
    port = free_port()
    # B waits long before grading, so that it certainly still holds its share of the first wave when killed.
    b = _replica(spec, logs["b"], "--grpc", f"127.0.0.1:{port}", "--root-grace", "60", "--idle-timeout", "60")
    b2 = None
    try:
        with (
            _replica(spec, logs["a"]) as a,
            Collector(
                tmp_path, LOADBALANCING, OVERLAYS / "loadbalancing-static.yaml", override=_balancer(a, b)
            ) as collector,
        ):
            send(first, sdk_exporter(collector, "grpc"))

            def all_in():  # every span of the first wave is in A or B; B's scrape then shows what it holds
                sb = b.scrape()
                accepted = total(a.scrape(), "luckrate_spans_accepted_total") + total(
                    sb, "luckrate_spans_accepted_total"
                )
                # Accepted spans reach B's assembler a moment later (its grading thread takes them off a
                # queue): under load a scrape showed them accepted and no trace active yet. So wait until
                # the active count is the same on two scrapes in a row, after every span was accepted.
                active = total(sb, "luckrate_traces_active") if accepted == len(first) else -1
                settled_at, seen[0] = seen[0], active
                return sb if active > 0 and active == settled_at else None

            seen = [-1.0]

            held = wait_until(all_in, "the first wave to reach the replicas")
            assert total(held, "luckrate_traces_active") > 0 and total(held, "luckrate_runs_total") == 0
            b.proc.send_signal(signal.SIGKILL)
            b.proc.wait(10)
            # Traffic goes on while B is down: the collector queues B's share and retries it.
            send(second, sdk_exporter(collector, "grpc"))
            b2 = _replica(spec, logs["b2"], "--grpc", f"127.0.0.1:{port}")
            lost_runs = int(total(held, "luckrate_traces_active"))
            _runs_across([a, b2], len(expected) - lost_runs)
            sa, sb2 = settled(a), settled(b2)
            identity(sa), identity(sb2)
            assert exporter_spans(collector.telemetry(), "send_failed") == 0
        lost = {line for line in expected} - {line["trace_id"] for line in _lines(logs["a"], logs["b2"])}
        second_ids = set(offline_verdicts(second, tmp_path, spec))
        # Lost: exactly the first-wave traces B held when it died; no second-wave trace.
        assert len(lost) == lost_runs
        assert not lost & second_ids
        assert sum(1 for s in first if s.context.trace_id.to_bytes(16, "big").hex() in lost) == total(
            held, "luckrate_spans_accepted_total"
        )
        # Everything else graded once, whole, on A or on the restarted B; B itself graded nothing.
        _graded_whole(_lines(logs["a"], logs["b2"]), expected)
        assert _lines(logs["b"]) == []
        assert total(sa, "luckrate_runs_total") + total(sb2, "luckrate_runs_total") == len(expected) - len(lost)
        assert total(sb2, "luckrate_runs_total") > 0, "the restarted replica got no traffic"
    finally:
        for server in (b, b2):
            if server is not None:
                server.__exit__(None, None, None)

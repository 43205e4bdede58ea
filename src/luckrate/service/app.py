"""``luckrate serve``: wire receivers → assembler → worker → telemetry, run until SIGTERM/SIGINT.

``add_arguments(parser)`` and ``run(args) -> exit code`` are what ``luckrate.cli`` calls.
Exit codes: 0 clean shutdown (every buffered trace graded and metrics flushed), 1 a shutdown that missed
its deadline or a listener that could not bind, 2 bad configuration or spec.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from luckrate.core.spec import InvalidSpec, load_specs, spec_for
from luckrate.service.assemble.assembler import Assembler, AssemblerLoop, Limits, SpanBudget
from luckrate.service.config import (
    KEYS,
    InvalidConfig,
    ServiceConfig,
    build_config,
    finalize,
    load_config,
    loopback,
    worker_count,
)
from luckrate.service.assemble.intake import Intake
from luckrate.service.export.prometheus import MetricsServer, PrometheusReader
from luckrate.service.receive.grpc_receiver import GrpcReceiver
from luckrate.service.receive.http_receiver import HttpReceiver
from luckrate.service.assemble.run_assembly import RunAssembler
from luckrate.service.export.run_ring import RunRing
from luckrate.service.security import grpc_credentials, http_context
from luckrate.service.grade.tally import Tally, apply
from luckrate.service.export.telemetry import Labels, Telemetry
from luckrate.service.export.viewer import Viewer, ViewerServer
from luckrate.service.export.verdict_events import VerdictEvents, check_verdict_events, verdict_events
from luckrate.service.assemble.wal import LogUnusable, WriteAheadLog
from luckrate.service.grade.worker import HeldVerdicts, VerdictLog, Worker
from luckrate.service.process.pool import PoolBudget, WorkerPool

log = logging.getLogger(__package__)

_FLAGS = (
    # (flag, config key, type, help)
    ("--spec", "spec", str, "spec file (Python or JSON) defining SPEC or SPECS"),
    ("--config", None, str, "TOML config file; flags override its values"),
    ("--grpc", "grpc", str, "OTLP/gRPC listen HOST:PORT, or off (default 127.0.0.1:4317)"),
    ("--http", "http", str, "OTLP/HTTP listen HOST:PORT, or off (default 127.0.0.1:4318)"),
    ("--prometheus", "prometheus", str, "Prometheus /metrics HOST:PORT, or off (default 127.0.0.1:9464)"),
    ("--otlp-metrics", "otlp_metrics", str, "push metrics over OTLP/HTTP to this URL (…/v1/metrics)"),
    ("--otlp-metrics-interval", "otlp_metrics_interval", float, "seconds between OTLP pushes (default 15)"),
    ("--root-grace", "root_grace", float, "quiet seconds after the root span before grading (default 2)"),
    ("--idle-timeout", "idle_timeout", float, "quiet seconds before grading a trace without root (default 30)"),
    ("--max-trace-age", "max_trace_age", float, "grade a trace this many seconds after its first span"),
    (
        "--runs-by",
        "runs_by",
        str,
        "which traces make one run: trace (default), links (traces tied by span links) or conversation",
    ),
    ("--run-wait", "run_wait", float, "with --runs-by links|conversation: quiet seconds before grading a run"),
    ("--max-run-age", "max_run_age", float, "with --runs-by links|conversation: grade a run this long after it began"),
    ("--max-spans-per-trace", "max_spans_per_trace", int, "grade a trace once it has this many spans"),
    ("--max-buffered-spans", "max_buffered_spans", int, "spans (and log records) buffered before back-pressure"),
    ("--max-request-bytes", "max_request_bytes", int, "largest request after decompression (default 64 MiB)"),
    ("--http-max-connections", "http_max_connections", int, "OTLP/HTTP connections served at once (default 256)"),
    (
        "--http-request-timeout",
        "http_request_timeout",
        float,
        "seconds for an OTLP/HTTP request's headers and body to arrive (default 30)",
    ),
    ("--http-idle-timeout", "http_idle_timeout", float, "seconds an idle OTLP/HTTP connection stays open (default 15)"),
    ("--output-attribute", "output_attribute", str, "span attribute with the output verdict"),
    ("--output-evaluation", "output_evaluation", str, "gen_ai.evaluation.result name that decides output_ok"),
    ("--output-threshold", "output_threshold", float, "evaluation score at or above which the output passes"),
    ("--verdict-log", "verdict_log", str, "JSON Lines file of graded traces with violations"),
    (
        "--verdict-log-all",
        "verdict_log_all",
        bool,
        'with --verdict-log: a line for every graded trace, clean ones too ("violations": [])',
    ),
    (
        "--otlp-logs",
        "otlp_logs",
        str,
        "send verdicts as gen_ai.evaluation.result log events over OTLP/HTTP to this URL (…/v1/logs)",
    ),
    ("--verdict-events", "verdict_events", str, "with --otlp-logs: violations (default) or all graded runs"),
    ("--max-agents", "max_agents", int, "with one SPEC: distinct agent labels before 'other' (default 20)"),
    ("--shutdown-timeout", "shutdown_timeout", float, "seconds to drain on SIGTERM (default 30)"),
    ("--workers", "workers", str, "grading processes: N, or auto for every core this process may use (default auto)"),
    ("--wal", "wal_dir", str, "write-ahead log directory: accepted requests survive kill -9 and are replayed at start"),
    ("--wal-sync", "wal_sync", str, "with --wal: sync to disk every interval (default) or every request"),
    ("--wal-sync-interval", "wal_sync_interval", float, "with --wal-sync interval: seconds between syncs (default 1)"),
    (
        "--wal-max-bytes",
        "wal_max_bytes",
        int,
        "with --wal: most bytes the log holds; when full, requests are refused with a retryable answer (default 1 GiB)",
    ),
    ("--tls-cert", "tls_cert", str, "PEM certificate chain (TLS on both receivers)"),
    ("--tls-key", "tls_key", str, "PEM private key"),
    ("--tls-client-ca", "tls_client_ca", str, "PEM CA: require client certificates (mutual TLS)"),
    ("--bearer-token-file", "bearer_token_file", str, "file with the bearer token clients must send"),
    ("--viewer", "viewer", str, "run viewer page and JSON API HOST:PORT, or off (default 127.0.0.1:9465)"),
    ("--viewer-runs", "viewer_runs", int, "graded runs the viewer holds, newest first (default 1000)"),
    ("--viewer-max-bytes", "viewer_max_bytes", int, "about the most bytes of runs the viewer holds (default 256 MiB)"),
    (
        "--viewer-content",
        "viewer_content",
        lambda text: _on_off("--viewer-content", text),
        "on (default) or off: off, the viewer holds and shows no arguments, results, inputs or finding details",
    ),
    ("--trace-url", "trace_url", str, "link from each run to the tracing backend: a URL with {trace_id}"),
    ("--public-url", "public_url", str, "the viewer's address as users reach it; verdict events link each run's page"),
)


def _on_off(flag: str, text: str) -> bool:
    if text.strip().lower() not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"{flag}: expected on or off, got {text!r}")
    return text.strip().lower() == "on"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag defaults to None so that only flags really given override the config file."""
    for flag, key, kind, help_text in _FLAGS:
        if kind is bool:  # a switch: given = True, absent = None (the config file's value stands)
            parser.add_argument(flag, dest=key, action="store_const", const=True, default=None, help=help_text)
        else:
            parser.add_argument(flag, dest=key or "config", type=kind, default=None, help=help_text)
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")


def config_from_args(args: argparse.Namespace) -> ServiceConfig:
    base = load_config(args.config) if getattr(args, "config", None) else ServiceConfig()
    given = {k: getattr(args, k) for k in KEYS if getattr(args, k, None) is not None}
    cfg = build_config(given, "command line", base)
    return finalize(cfg, args.config or "command line")


@dataclass
class InProcess:
    """Grading in the receiving process (``workers = 1``): one assembler thread, one grader thread."""

    loop: AssemblerLoop
    worker: Worker

    @property
    def active(self) -> int:
        return self.loop.assembler.active + (self.loop.runs.active if self.loop.runs is not None else 0)

    def start(self) -> None:
        self.worker.start()
        self.loop.start()

    def stop(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        done = self.loop.stop(max(0.1, deadline - time.monotonic()))
        return self.worker.stop(max(0.1, deadline - time.monotonic())) and done


@dataclass
class Service:
    """The running pieces; ``start`` then ``stop`` (``stop`` alone is safe)."""

    cfg: ServiceConfig
    telemetry: Telemetry
    budget: SpanBudget
    grading: InProcess | WorkerPool
    intake: Intake
    receivers: list
    metrics: MetricsServer | None
    events: VerdictEvents | None = None
    wal: WriteAheadLog | None = None
    viewer: ViewerServer | None = None

    def start(self) -> None:
        if self.metrics is not None:
            self.metrics.start()
        if self.viewer is not None:
            self.viewer.start()
        self.grading.start()
        if self.wal is not None:  # before the receivers: what was acknowledged before a restart goes first
            replay(self.wal, self.intake)
        for r in self.receivers:
            r.start()

    def addresses(self) -> str:
        parts = [f"{r.name} {r.endpoint.host}:{r.port}" for r in self.receivers]
        if self.metrics is not None:
            parts.append(f"prometheus {self.metrics.endpoint.host}:{self.metrics.port}")
        if self.viewer is not None:
            parts.append(f"viewer {self.viewer.endpoint.host}:{self.viewer.port}")
        return " ".join(parts)

    def stop(self, timeout: float) -> bool:
        """Stop accepting, grade every buffered trace (reason ``shutdown``), flush metrics.
        Returns False when the deadline passed before everything was graded."""
        deadline = time.monotonic() + timeout
        self.intake.close()
        for r in self.receivers:
            r.shutdown()
        done = self.grading.stop(max(0.1, deadline - time.monotonic()))
        if self.events is not None:  # after grading (its last verdicts), before metrics (its drop count)
            self.events.shutdown(max(0.1, deadline - time.monotonic()))
        if self.wal is not None:  # after grading: its last marks empty the log
            self.wal.close()
        self.telemetry.shutdown(max(1.0, deadline - time.monotonic()))
        if self.metrics is not None:
            self.metrics.shutdown()
        if self.viewer is not None:
            self.viewer.shutdown()
        return done


def build(cfg: ServiceConfig, specs) -> Service:
    """Assemble the service from a finalized config and loaded specs (nothing listens yet)."""
    from luckrate.adapters.otlp import OutputRule, trajectory_from_spans
    from luckrate.adapters.otlp.assemble import trajectory_from_run

    readers, prom = [], None
    if cfg.prometheus is not None:
        prom = PrometheusReader()
        readers.append(prom)
    if cfg.otlp_metrics:
        readers.append(_otlp_reader(cfg))
    telemetry = Telemetry(readers, Labels(specs, cfg.max_agents))
    events = None
    ring = None
    if cfg.viewer is not None:
        ring = RunRing(cfg.viewer_runs, max_bytes=cfg.viewer_max_bytes, content=cfg.viewer_content, count=telemetry.add)
    n = worker_count(cfg)
    wal = open_wal(cfg, telemetry.add, owners=n) if cfg.wal_dir else None
    budget: SpanBudget
    grading: WorkerPool | InProcess
    if n > 1:
        check_verdict_events(cfg)  # each grading process exports its own log events; fail here, not there
        budget = PoolBudget(cfg.max_buffered_spans, max_backlog=4 * cfg.max_request_bytes)
        grading = budget.pool = WorkerPool(cfg, n, telemetry, budget, wal=wal, hold=_pool_hold(ring, specs))
        intake = Intake(
            grading.submit,
            budget,
            telemetry.add,
            keep_attribute=cfg.output_attribute,
            owners=n,
            prepare=grading.prepare,
            wal=wal,
            submit_logs=grading.submit_logs,
            prepare_logs=grading.prepare_logs,
        )
        grading.replay = intake.replay
    else:
        budget = SpanBudget(cfg.max_buffered_spans)
        rule = OutputRule(
            attribute=cfg.output_attribute, evaluation=cfg.output_evaluation, threshold=cfg.output_threshold
        )
        events = verdict_events(cfg, telemetry.add) if cfg.otlp_logs else None
        tally = Tally()  # the grader thread counts in plain dicts; the SDK sees a sum every tally.REPORT_EVERY s
        verdicts = VerdictLog(cfg.verdict_log, cfg.verdict_log_all) if cfg.verdict_log else None
        held = HeldVerdicts(verdicts, wal.settle) if wal is not None else None  # lines, then their marks

        def flush() -> None:
            apply(tally.cut([]), telemetry)
            if held is not None:
                held.flush()

        worker = Worker(
            specs,
            lambda spans: trajectory_from_spans(spans, rule),
            tally,
            release=budget.release,
            verdict_log=(held if held is not None else verdicts) if verdicts else None,
            events=events,
            flush=flush,
            settled=held.add if held is not None else None,
            adapt_run=lambda traces, parents: trajectory_from_run(traces, parents, rule),
            hold=ring.add if ring is not None else None,
        )
        limits = Limits.from_config(cfg)
        runs = run_assembler(cfg, worker.submit, telemetry.add)
        loop = AssemblerLoop(
            Assembler(runs.add if runs else worker.submit, limits=limits, count=telemetry.add, release=budget.release),
            tick=limits.bucket,
            runs=runs,
        )
        grading = InProcess(loop, worker)
        intake = Intake(
            loop.submit,
            budget,
            telemetry.add,
            keep_attribute=cfg.output_attribute,
            wal=wal,
            submit_logs=loop.submit_logs,
            runs_by=cfg.runs_by,
        )
    common: dict[str, Any] = dict(
        max_request_bytes=cfg.max_request_bytes, retry_after=cfg.retry_after, token=cfg.bearer_token
    )
    receivers: list[GrpcReceiver | HttpReceiver] = []
    if cfg.grpc is not None:
        receivers.append(GrpcReceiver(cfg.grpc, intake, credentials=grpc_credentials(cfg), **common))
    if cfg.http is not None:
        receivers.append(
            HttpReceiver(
                cfg.http,
                intake,
                tls=http_context(cfg),
                max_connections=cfg.http_max_connections,
                request_timeout=cfg.http_request_timeout,
                idle_timeout=cfg.http_idle_timeout,
                **common,
            )
        )
    metrics = MetricsServer(cfg.prometheus, prom) if prom is not None and cfg.prometheus is not None else None
    viewer = None
    if cfg.viewer is not None and ring is not None:
        shown = Viewer(ring, output_from=output_from(cfg), trace_url=cfg.trace_url)
        remote = not loopback(cfg.viewer.host)  # on loopback, the page is as open as the machine
        viewer = ViewerServer(
            cfg.viewer, shown, tls=http_context(cfg) if remote else None, token=cfg.bearer_token if remote else None
        )
    return Service(cfg, telemetry, budget, grading, intake, receivers, metrics, events, wal, viewer)


def _pool_hold(ring: RunRing | None, specs):
    """With grading processes: each run their reports carry goes into the ring with the spec it was graded
    against (the receiving process loaded the same spec file)."""
    if ring is None:
        return None

    def hold(g, traj, traces) -> None:
        spec = spec_for(specs, g.agent)
        if spec is not None:
            ring.add(g, traj, spec, traces)

    return hold


def output_from(cfg: ServiceConfig) -> str:
    """Where a run's output verdict comes from, as the run page says it."""
    where = f"the span attribute {cfg.output_attribute}"
    if cfg.output_evaluation:
        limit = f", or a score of at least {cfg.output_threshold}" if cfg.output_threshold is not None else ""
        where = f"the gen_ai.evaluation.result event {cfg.output_evaluation!r} (its label{limit}), or {where}"
    return where


def run_assembler(cfg: ServiceConfig, emit, count) -> RunAssembler | None:
    """The stage that groups completed traces into runs, when ``runs_by`` asks for runs across traces."""
    if cfg.runs_by == "trace":
        return None
    return RunAssembler(
        emit,
        conversation=cfg.runs_by == "conversation",
        wait=cfg.run_wait,
        max_age=cfg.max_run_age,
        memory=cfg.late_memory,
        count=count,
    )


def _run_hold(cfg: ServiceConfig) -> float:
    """The longest a completed trace may wait for the rest of its run (0 when each trace is a run)."""
    return 0.0 if cfg.runs_by == "trace" else cfg.max_run_age + cfg.run_wait


def open_wal(cfg: ServiceConfig, count, owners: int) -> WriteAheadLog:
    """The write-ahead log, its directory checked and locked; InvalidConfig (exit 2) when it is unusable."""
    # A trace is graded within max_trace_age of its first span (and a replayed one within that of the
    # restart), so twice that, plus the drain, is when whatever a segment still holds can only be a leak.
    assert cfg.wal_dir is not None, "open_wal is called only when wal_dir is set"
    wal = WriteAheadLog(
        cfg.wal_dir,
        max_bytes=cfg.wal_max_bytes,
        sync=cfg.wal_sync,
        sync_interval=cfg.wal_sync_interval,
        memory=cfg.late_memory * owners,
        stale_after=2 * cfg.max_trace_age + cfg.shutdown_timeout + _run_hold(cfg),
        count=count,
    )
    try:
        wal.open()
    except LogUnusable as e:
        raise InvalidConfig("wal", [("wal_dir", str(e))]) from None
    return wal


def replay(wal: WriteAheadLog, intake: Intake) -> None:
    """Hand what the log holds back to grading, then start syncing."""
    done = wal.replay(intake.replay)
    wal.start()
    if done.records or done.damaged:
        log.info(
            "write-ahead log: replayed %d span(s) of %d trace(s) from %d request(s) in %.3f s "
            "(%d request(s) already graded, %d damaged record(s))",
            done.spans,
            done.traces,
            done.records,
            done.seconds,
            done.skipped,
            done.damaged,
        )


def _otlp_reader(cfg: ServiceConfig):
    """OTLP push uses the SDK's own exporter (retries, encoding), imported only when asked for."""
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError:
        raise InvalidConfig(
            "command line",
            [
                (
                    "otlp_metrics",
                    "needs the package opentelemetry-exporter-otlp-proto-http "
                    "(pip install 'opentelemetry-exporter-otlp-proto-http')",
                )
            ],
        ) from None
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=cfg.otlp_metrics), export_interval_millis=cfg.otlp_metrics_interval * 1000
    )


RUNS_BY_NOTE = {
    "trace": "runs-by=trace: each trace is graded as one run, root_grace after its root span "
    "(luckrate grade groups traces tied by span links by default; --runs-by links does that here)",
    "links": "runs-by=links: traces tied by span links are one run, graded run_wait seconds after the last "
    "trace joined it",
    "conversation": "runs-by=conversation: traces tied by span links or sharing gen_ai.conversation.id are one "
    "run, graded run_wait seconds after the last trace joined it",
}
"""What the start line's ``runs-by=`` means, logged beside it (grade's default differs: docs/serve.md)."""


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(args, "log_level", "INFO") or "INFO",
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        cfg = config_from_args(args)
        specs = load_specs(cfg.spec)
        service = build(cfg, specs)
    except (InvalidConfig, InvalidSpec, OSError) as e:
        print(f"luckrate serve: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        service.start()
    except (OSError, RuntimeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else e  # the message, not "[Errno 98]"
        print(f"luckrate serve: cannot listen: {detail}", file=sys.stderr)
        service.stop(cfg.shutdown_timeout)
        return 1
    # One token after the address pairs, so a reader taking the line's name/address pairs is not thrown.
    print(f"luckrate serve: listening {service.addresses()} runs-by={cfg.runs_by}", flush=True)
    log.info("%s", RUNS_BY_NOTE[cfg.runs_by])
    while not stop.wait(0.5):  # a timed wait keeps the main thread responsive to signals
        pass
    log.info("stopping: grading %d buffered trace(s)", service.grading.active)
    ok = service.stop(cfg.shutdown_timeout)
    if not ok:
        log.error("shutdown deadline (%.0f s) passed before every buffered trace was graded", cfg.shutdown_timeout)
    print("luckrate serve: stopped", flush=True)
    return 0 if ok else 1

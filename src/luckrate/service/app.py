"""``luckrate serve``: wire receivers → intake → grading (``process``) → telemetry, run until SIGTERM/SIGINT.

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
from collections.abc import Mapping
from dataclasses import dataclass

from luckrate.core.spec import InvalidSpec, Spec
from luckrate.core.spec_loader import load_specs
from luckrate.service.assemble.assembler import SpanBudget
from luckrate.service.assemble.intake import Intake, IntakeOptions
from luckrate.service.assemble.wal import LogUnusable, WalOptions, WriteAheadLog
from luckrate.service.config import InvalidConfig, ServiceConfig, loopback, worker_count
from luckrate.service.export.prometheus import MetricsServer, PrometheusReader
from luckrate.service.export.run_ring import RunRing
from luckrate.service.export.telemetry import Count, Labels, Telemetry
from luckrate.service.export.verdict_events import check_verdict_events
from luckrate.service.export.viewer import Viewer, ViewerServer
from luckrate.service.flags import add_arguments, config_from_args
from luckrate.service.process.in_process import InProcess
from luckrate.service.process.pipeline import Sinks
from luckrate.service.process.pool import PoolBudget, WorkerPool
from luckrate.service.receive.grpc_receiver import GrpcReceiver
from luckrate.service.receive.http_receiver import HttpReceiver
from luckrate.service.receive.options import HttpLimits, ReceiverOptions
from luckrate.service.security import grpc_credentials, http_context

__all__ = ["add_arguments", "build", "run"]

log = logging.getLogger(__package__)


@dataclass
class Service:
    """The running pieces; ``start`` then ``stop`` (``stop`` alone is safe)."""

    cfg: ServiceConfig
    telemetry: Telemetry
    budget: SpanBudget
    grading: InProcess | WorkerPool
    intake: Intake
    receivers: list
    metrics: MetricsServer | None = None
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
        done = self.grading.stop(max(0.1, deadline - time.monotonic()))  # its verdict events' last exports too
        if self.wal is not None:  # after grading: its last marks empty the log
            self.wal.close()
        self.telemetry.shutdown(max(1.0, deadline - time.monotonic()))
        if self.metrics is not None:
            self.metrics.shutdown()
        if self.viewer is not None:
            self.viewer.shutdown()
        return done


def build(cfg: ServiceConfig, specs: Mapping[str, Spec]) -> Service:
    """Assemble the service from a finalized config and loaded specs (nothing listens yet)."""
    readers, prom = [], None
    if cfg.prometheus is not None:
        prom = PrometheusReader()
        readers.append(prom)
    if cfg.otlp_metrics:
        readers.append(_otlp_reader(cfg))
    telemetry = Telemetry(readers, Labels(specs, cfg.max_agents))
    ring = None
    if cfg.viewer is not None:
        ring = RunRing(cfg.viewer_runs, max_bytes=cfg.viewer_max_bytes, content=cfg.viewer_content, count=telemetry.add)
    n = worker_count(cfg)
    wal = open_wal(cfg, telemetry.add, owners=n) if cfg.wal_dir else None
    sinks = Sinks(wal, ring)
    budget: SpanBudget
    grading: WorkerPool | InProcess
    if n > 1:
        check_verdict_events(cfg)  # each grading process exports its own log events; fail here, not there
        budget = PoolBudget(cfg.max_buffered_spans, max_backlog=4 * cfg.max_request_bytes)
        grading = budget.pool = WorkerPool(cfg, telemetry, budget, sinks, specs)
    else:
        budget = SpanBudget(cfg.max_buffered_spans)
        grading = InProcess.build(cfg, specs, telemetry, budget, sinks)
    options = IntakeOptions(keep_attribute=cfg.output_attribute, owners=n, runs_by=cfg.runs_by)
    intake = Intake(grading.handover(), budget, telemetry.add, options, wal)
    if isinstance(grading, WorkerPool):
        grading.replay = intake.replay
    metrics = MetricsServer(cfg.prometheus, prom) if prom is not None and cfg.prometheus is not None else None
    return Service(cfg, telemetry, budget, grading, intake, receivers(cfg, intake), metrics, wal, viewer(cfg, ring))


def receivers(cfg: ServiceConfig, intake: Intake) -> list[GrpcReceiver | HttpReceiver]:
    """The OTLP listeners the config asks for, both handing requests to ``intake``."""
    options = ReceiverOptions.from_config(cfg)
    out: list[GrpcReceiver | HttpReceiver] = []
    if cfg.grpc is not None:
        out.append(GrpcReceiver(cfg.grpc, intake, options, grpc_credentials(cfg)))
    if cfg.http is not None:
        out.append(HttpReceiver(cfg.http, intake, options, http_context(cfg), HttpLimits.from_config(cfg)))
    return out


def viewer(cfg: ServiceConfig, ring: RunRing | None) -> ViewerServer | None:
    """The run viewer's server, when the config turns it on."""
    if cfg.viewer is None or ring is None:
        return None
    shown = Viewer(ring, output_from=output_from(cfg), trace_url=cfg.trace_url)
    remote = not loopback(cfg.viewer.host)  # on loopback, the page is as open as the machine
    return ViewerServer(
        cfg.viewer, shown, tls=http_context(cfg) if remote else None, token=cfg.bearer_token if remote else None
    )


def output_from(cfg: ServiceConfig) -> str:
    """Where a run's output verdict comes from, as the run page says it."""
    where = f"the span attribute {cfg.output_attribute}"
    if cfg.output_evaluation:
        limit = f", or a score of at least {cfg.output_threshold}" if cfg.output_threshold is not None else ""
        where = f"the gen_ai.evaluation.result event {cfg.output_evaluation!r} (its label{limit}), or {where}"
    return where


def _run_hold(cfg: ServiceConfig) -> float:
    """The longest a completed trace may wait for the rest of its run (0 when each trace is a run)."""
    return 0.0 if cfg.runs_by == "trace" else cfg.max_run_age + cfg.run_wait


def open_wal(cfg: ServiceConfig, count: Count, owners: int) -> WriteAheadLog:
    """The write-ahead log, its directory checked and locked; InvalidConfig (exit 2) when it is unusable."""
    # A trace is graded within max_trace_age of its first span (and a replayed one within that of the
    # restart), so twice that, plus the drain, is when whatever a segment still holds can only be a leak.
    assert cfg.wal_dir is not None, "open_wal is called only when wal_dir is set"
    options = WalOptions(
        cfg.wal_max_bytes,
        sync=cfg.wal_sync,
        sync_interval=cfg.wal_sync_interval,
        memory=cfg.late_memory * owners,
        stale_after=2 * cfg.max_trace_age + cfg.shutdown_timeout + _run_hold(cfg),
    )
    wal = WriteAheadLog(cfg.wal_dir, options, count)
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

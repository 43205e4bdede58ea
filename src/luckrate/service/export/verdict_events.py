"""Verdicts as OpenTelemetry log events: one ``gen_ai.evaluation.result`` record per graded trace, tied to
the graded trace's root span, exported over OTLP/HTTP through the SDK's logs pipeline
(LoggerProvider → BatchLogRecordProcessor → OTLPLogExporter).

Why a gate in front of the SDK's BatchLogRecordProcessor: its queue is bounded (``max_queue_size``) and
drops when full, but it only logs a warning and, behind ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``,
records an SDK-internal metric on the *global* MeterProvider; and a batch the exporter fails to deliver
(endpoint down) is lost without any count at all. So ``_Gate`` admits at most ``max_queue`` records that
are queued or being exported (never more than the processor's queue holds, so the processor itself never
drops), refuses the rest, and the exporter wrapper releases them once exported. Every record lost is
counted on ``luckrate.verdict_events.dropped`` by reason: ``queue_full`` (the endpoint is slow or down and
the gate is full), ``export_failed`` (the exporter gave up on a batch), ``shutdown`` (still queued when the
shutdown deadline passed). ``publish`` never blocks: the worker grades on whatever the endpoint does.

Values are bounded: the agent name (span data) and each violation line are cut, and at most
``MAX_LINES`` violations are spelled out in the explanation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource

from luckrate.core.grade import RunGrade
from luckrate.service.export.exemplars import trace_context
from luckrate.service.export.telemetry import METER, Count
from luckrate.service.export.instruments import VERDICT_EVENTS_DROPPED

log = logging.getLogger(__name__)

EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "luckrate.path"
# The record's own attributes, beside the GenAI evaluation ones (docs/serve.md describes each).
AGENT = "luckrate.agent"
SPEC = "luckrate.spec"
OUTPUT = "luckrate.output"
LUCKY = "luckrate.lucky"
CHECKS = "luckrate.checks"
RUN_URL = "luckrate.run.url"
"""The run's page in the viewer, with ``public_url`` set."""
MODES = ("violations", "all")
"""``--verdict-events``: a record for runs with violations only (the default), or for every graded run."""
MAX_VALUE = 512
"""Longest value from span data (agent name, one violation line) put on a record."""
MAX_LINES = 50
"""Violations spelled out in ``gen_ai.evaluation.explanation``; the rest are summed up in one line."""
EXTRA_PACKAGE = "opentelemetry-exporter-otlp-proto-http"


def _cut(text: str, limit: int = MAX_VALUE) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def explanation(grade: RunGrade) -> str:
    """The violations, one line each: ``check (severity) step N tool: detail``."""
    lines = []
    for v in grade.violations[:MAX_LINES]:
        where = " ".join(p for p in (f"step {v.step}" if v.step is not None else "", v.tool or "") if p)
        detail = " ".join(v.detail.splitlines())  # one line per violation, whatever the detail holds
        lines.append(_cut(f"{v.check} ({v.severity}){' ' + where if where else ''}: {detail}"))
    if len(grade.violations) > MAX_LINES:
        lines.append(f"… and {len(grade.violations) - MAX_LINES} more")
    return "\n".join(lines)


def attributes(grade: RunGrade, spec_label: str) -> dict:
    """The record's attributes: GenAI evaluation keys, then luckrate's own."""
    checks = tuple(dict.fromkeys(v.check for v in grade.violations))  # distinct, in the order found
    attrs = {
        "gen_ai.evaluation.name": EVALUATION_NAME,
        "gen_ai.evaluation.score.label": "ok" if grade.path_ok else "bad",
        AGENT: _cut(grade.agent or ""),
        SPEC: spec_label,
        OUTPUT: grade.output,
        LUCKY: grade.lucky,
        CHECKS: checks,
    }
    if grade.violations:
        attrs["gen_ai.evaluation.explanation"] = explanation(grade)
    return attrs


def summary(attrs: dict) -> str:
    """The record's body, for backends that show a log line: ``luckrate.path bad: taint, forbidden``."""
    checks = ", ".join(attrs[CHECKS]) or "no violations"
    return f"{EVALUATION_NAME} {attrs['gen_ai.evaluation.score.label']}: {checks}"


class _Gate:
    """Records queued or being exported; ``enter`` refuses past the limit instead of waiting. Once closed
    (``close``, at shutdown, which counts what is held), late ``leave`` calls report that they count nothing."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self.closed = False
        self._lock = threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self.closed or self.held >= self.limit:
                return False
            self.held += 1
            return True

    def leave(self, n: int) -> bool:
        """Release ``n``; False when the gate was closed first (they were counted at shutdown)."""
        with self._lock:
            if self.closed:
                return False
            self.held = max(0, self.held - n)
            return True

    def close(self) -> int:
        """Close and return how many are still held."""
        with self._lock:
            self.closed = True
            n, self.held = self.held, 0
            return n


class _Counted(LogRecordExporter):
    """The real exporter, counting each batch it did not deliver and letting the gate admit more."""

    def __init__(self, inner: LogRecordExporter, gate: _Gate, count: Count):
        self.inner = inner
        self.gate = gate
        self.count = count

    def export(self, batch: Sequence) -> LogRecordExportResult:
        try:
            result = self.inner.export(batch)
        except Exception:  # the processor would only log it; we must count it
            log.exception("exporting %d verdict events failed", len(batch))
            result = LogRecordExportResult.FAILURE
        # After shutdown closed the gate, what it held was counted already (reason shutdown).
        if self.gate.leave(len(batch)) and result is not LogRecordExportResult.SUCCESS:
            self.count(VERDICT_EVENTS_DROPPED.name, len(batch), reason="export_failed")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


@dataclass(frozen=True)
class EventOptions:
    """Which graded runs become records, and how they are queued and exported."""

    mode: str = "violations"
    """One of ``MODES``."""
    max_queue: int = 2048
    """Records queued or being exported at most; beyond, refused and counted (``queue_full``)."""
    batch_size: int = 512
    schedule_delay: float = 1.0
    """Seconds between the batch processor's exports."""
    public_url: str | None = None
    """The run viewer's address as users reach it; each record then carries its run's page (``RUN_URL``)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")


class VerdictEvents:
    """Publishes verdicts as log records; ``publish`` is called by the worker thread and never blocks."""

    def __init__(self, exporter: LogRecordExporter, count: Count, options: EventOptions = EventOptions()):
        public_url, max_queue = options.public_url, options.max_queue
        self._pages = public_url.rstrip("/") + "/runs/" if public_url else None
        self.mode = options.mode
        self._count = count
        self._gate = _Gate(max_queue)
        self._exporter = _Counted(exporter, self._gate, count)
        self.provider = LoggerProvider(resource=Resource.create({"service.name": "luckrate"}))
        # max_queue_size equal to the gate's limit: the processor's own (uncounted) drop never happens.
        self.provider.add_log_record_processor(
            BatchLogRecordProcessor(
                self._exporter,
                schedule_delay_millis=options.schedule_delay * 1000,
                max_export_batch_size=min(options.batch_size, max_queue),
                max_queue_size=max_queue,
            )
        )
        self._logger = self.provider.get_logger(METER)
        self._closed = False

    def wants(self, grade: RunGrade) -> bool:
        return self.mode == "all" or not grade.path_ok

    def publish(self, grade: RunGrade, spec_label: str, trace_id: bytes, span_id: bytes) -> None:
        """One record for this graded trace (if the mode wants it); refused and counted when the queue is full."""
        if self._closed or not self.wants(grade):
            return
        if not self._gate.enter():
            self._count(VERDICT_EVENTS_DROPPED.name, 1, reason="queue_full")
            return
        attrs = attributes(grade, spec_label)
        if self._pages is not None:
            attrs[RUN_URL] = self._pages + trace_id.hex()
        try:
            self._logger.emit(
                event_name=EVENT_NAME,
                context=trace_context(trace_id, span_id),
                # A bad path is worth a look (WARN), a clean one is not.
                severity_number=SeverityNumber.INFO if grade.path_ok else SeverityNumber.WARN,
                severity_text="INFO" if grade.path_ok else "WARN",
                body=summary(attrs),
                attributes=attrs,
            )
        except Exception:  # the trace is graded and counted; a failing event must not make it a grade error
            log.exception("verdict event for trace %s not emitted", trace_id.hex())
            if self._gate.leave(1):
                self._count(VERDICT_EVENTS_DROPPED.name, 1, reason="export_failed")

    def shutdown(self, timeout: float = 10.0) -> None:
        """Export what is queued within ``timeout`` seconds; what is left is counted (reason ``shutdown``)."""
        if self._closed:
            return
        self._closed = True
        done = threading.Thread(target=self.provider.shutdown, name="luckrate-verdict-events-stop", daemon=True)
        done.start()
        done.join(timeout)
        left = self._gate.close()
        if left:
            self._count(VERDICT_EVENTS_DROPPED.name, left, reason="shutdown")


def otlp_exporter(url: str, timeout: float = 10.0) -> LogRecordExporter:
    """The SDK's OTLP/HTTP log exporter; ImportError names the optional package to install."""
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    except ImportError as e:
        raise ImportError(f"needs the package {EXTRA_PACKAGE} (pip install 'luckrate[otlp]')") from e
    return OTLPLogExporter(endpoint=url, timeout=timeout)


def check_verdict_events(cfg) -> None:
    """``--otlp-logs`` needs the SDK's OTLP/HTTP log exporter, from the optional ``otlp`` extra: refuse to
    start without it (checked in the receiving process, before any grading process starts)."""
    from luckrate.service.config import InvalidConfig

    if cfg.otlp_logs:
        try:
            otlp_exporter(cfg.otlp_logs)
        except ImportError as e:
            raise InvalidConfig("command line", [("otlp_logs", str(e))]) from None


def verdict_events(cfg, count: Count) -> VerdictEvents:
    """The log-event exporter of one grading process (each ``--workers`` process has its own); ``count``
    records its drops, which a worker's report carries to the one ``/metrics``."""
    check_verdict_events(cfg)
    options = EventOptions(cfg.verdict_events, public_url=cfg.public_url if cfg.viewer else None)
    return VerdictEvents(otlp_exporter(cfg.otlp_logs), count, options)

"""A Prometheus pull endpoint over the OTel SDK: a MetricReader that renders the text exposition format,
served by a stdlib HTTP server. A scraper that asks for OpenMetrics (``Accept: application/openmetrics-text``,
as Prometheus does) gets it, with the exemplars the SDK collected (see ``exemplars``): the plain text
format has no place for them.

Why not ``opentelemetry-exporter-prometheus``: it is a pre-release (0.x b) package that pulls in
``prometheus-client`` and its own registry just to format what the SDK already aggregates; the text
format for counters, gauges and histograms is a page of code, and the tests parse our output with
``prometheus-client``'s real parser.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.sdk.metrics.export import (
    Histogram,
    MetricReader,
    MetricsData,
    Sum,
)

from luckrate.service.config import Endpoint
from luckrate.service.export.instruments import BY_NAME, Instrument, prometheus_name

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def wants_openmetrics(accept: str | None) -> bool:
    """Whether an Accept header lists OpenMetrics with a non-zero quality (Prometheus lists it first)."""
    for media_range in (accept or "").split(","):
        kind, *params = (p.strip() for p in media_range.split(";"))
        if kind.lower() == "application/openmetrics-text":
            q = next((p[2:] for p in params if p.replace(" ", "").lower().startswith("q=")), "1")
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False


class PrometheusReader(MetricReader):
    """Collects on demand (each scrape) with cumulative temporality, as Prometheus expects."""

    def __init__(self) -> None:
        super().__init__()  # the SDK's default temporality is cumulative, as Prometheus expects
        self._lock = threading.Lock()
        self._data: MetricsData | None = None

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs) -> None:
        self._data = metrics_data

    def render(self, openmetrics: bool = False) -> str:
        with self._lock:
            self._data = None
            self.collect()
            if openmetrics:
                return render(self._data, openmetrics=True) if self._data is not None else "# EOF\n"
            return render(self._data) if self._data is not None else ""

    def shutdown(self, timeout_millis: float = 30_000, **kwargs) -> None:
        pass


def render(data: MetricsData, openmetrics: bool = False) -> str:
    """The text format, or OpenMetrics (counter samples with an exemplar, ``# EOF`` at the end)."""
    lines: list[str] = []
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                lines.extend(_family(metric, openmetrics))
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n" if lines else ""


def _family(metric, openmetrics: bool = False) -> Iterable[str]:
    inst = BY_NAME.get(metric.name) or Instrument(metric.name, _kind(metric.data), metric.unit or "", "")
    name = prometheus_name(inst)
    data = metric.data
    ptype = {"counter": "counter", "updown": "gauge", "histogram": "histogram"}[inst.kind]
    # A counter's HELP and TYPE name its family: ``x`` in OpenMetrics (samples ``x_total``), the sample name
    # ``x_total`` itself in the text format 0.0.4 (promtool says "no help text" for ``x``).
    base = name[: -len("_total")] if ptype == "counter" and openmetrics else name
    yield f"# HELP {base} {_escape_help(metric.description or inst.description)}"
    yield f"# TYPE {base} {ptype}"
    for point in data.data_points:
        labels = dict(point.attributes)
        if isinstance(data, Histogram):
            yield from _histogram(name, labels, point)
        else:
            exemplar = _exemplar(point) if openmetrics and ptype == "counter" else ""
            yield f"{name}{_labels(labels)} {_number(point.value)}{exemplar}"


def _exemplar(point) -> str:
    """`` # {trace_id="…"} value timestamp`` for the point's latest exemplar with a trace, else nothing."""
    traced = [e for e in point.exemplars or () if e.trace_id]
    if not traced:
        return ""
    e = max(traced, key=lambda e: e.time_unix_nano)
    return f' # {{trace_id="{e.trace_id:032x}"}} {_number(e.value)} {e.time_unix_nano / 1e9:.3f}'


def _kind(data) -> str:
    if isinstance(data, Histogram):
        return "histogram"
    if isinstance(data, Sum) and data.is_monotonic:
        return "counter"
    return "updown"


def _histogram(name: str, labels: dict, point) -> Iterable[str]:
    cumulative = 0
    for bound, count in zip(point.explicit_bounds, point.bucket_counts):
        cumulative += count
        yield f"{name}_bucket{_labels({**labels, 'le': _number(float(bound))})} {cumulative}"
    yield f"{name}_bucket{_labels({**labels, 'le': '+Inf'})} {point.count}"
    yield f"{name}_sum{_labels(labels)} {_number(point.sum)}"
    yield f"{name}_count{_labels(labels)} {point.count}"


def _labels(labels: dict) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape_value(str(v))}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def _escape_value(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _number(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    return repr(float(v))


class MetricsServer:
    """Serves ``GET /metrics`` from a PrometheusReader on its own thread."""

    def __init__(self, endpoint: Endpoint, reader: PrometheusReader):
        self.endpoint = endpoint
        self.reader = reader
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self.endpoint.port

    def start(self) -> None:
        reader = self.reader

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                openmetrics = wants_openmetrics(self.headers.get("Accept"))
                body = reader.render(openmetrics).encode()
                self.send_response(200)
                self.send_header("Content-Type", OPENMETRICS_TYPE if openmetrics else CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args) -> None:
                log.debug("metrics: " + format, *args)

        try:
            self._server = ThreadingHTTPServer((self.endpoint.host, self.endpoint.port), Handler)
        except OSError as e:
            raise OSError(e.errno, f"prometheus {self.endpoint}: cannot bind ({e.strerror})") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="luckrate-metrics", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        """Stop serving; safe without start and twice."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

"""Every key of the service's configuration, with its default and what it means (``ServiceConfig``).

``config`` reads and checks them (TOML, flags, the environment); every stage reads the finalized record.
"""

from __future__ import annotations

from dataclasses import dataclass

from luckrate.adapters.otlp.spans import DEFAULT_OUTPUT_ATTRIBUTE

MIB = 1024 * 1024


@dataclass(frozen=True)
class Endpoint:
    """A listening address; port 0 lets the OS choose (the chosen port is printed at start)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ServiceConfig:
    """Everything ``luckrate serve`` reads. TOML keys are these field names."""

    spec: str = ""
    """Spec file (Python or JSON) defining SPEC or SPECS. Required."""
    grpc: Endpoint | None = Endpoint("127.0.0.1", 4317)
    """OTLP/gRPC listen address; None (``"off"``) disables the receiver."""
    http: Endpoint | None = Endpoint("127.0.0.1", 4318)
    """OTLP/HTTP listen address; None (``"off"``) disables the receiver."""
    prometheus: Endpoint | None = Endpoint("127.0.0.1", 9464)
    """Prometheus pull endpoint (``/metrics``); None (``"off"``) disables it."""
    otlp_metrics: str | None = None
    """OTLP/HTTP metrics push URL (e.g. ``http://collector:4318/v1/metrics``); None = no push."""
    otlp_metrics_interval: float = 15.0
    """Seconds between OTLP metric pushes."""
    root_grace: float = 2.0
    """Seconds of quiet after the root span ended before a trace is graded."""
    idle_timeout: float = 30.0
    """Seconds without a new span after which a trace is graded even without an ended root."""
    max_trace_age: float = 300.0
    """Seconds since a trace's first span after which it is graded whatever arrives."""
    max_spans_per_trace: int = 10_000
    """A trace reaching this many spans is graded at once; later spans count as late."""
    max_buffered_spans: int = 1_000_000
    """Spans accepted but not yet graded; when full, receivers answer with back-pressure."""
    max_request_bytes: int = 64 * MIB
    """Largest request body after decompression; larger gets 413 / RESOURCE_EXHAUSTED."""
    retry_after: int = 5
    """Seconds a throttled client is told to wait (Retry-After / RetryInfo)."""
    http_max_connections: int = 256
    """OTLP/HTTP connections served at once; more are answered 503 + Retry-After and counted."""
    http_request_timeout: float = 30.0
    """Seconds from an OTLP/HTTP request's first byte by which its headers and body must have arrived."""
    http_idle_timeout: float = 15.0
    """Seconds an OTLP/HTTP connection may wait for its next request before it is closed."""
    output_attribute: str = DEFAULT_OUTPUT_ATTRIBUTE
    """Span attribute holding the output eval's verdict."""
    output_evaluation: str | None = None
    """``gen_ai.evaluation.result`` name whose label or score decides ``output_ok``."""
    output_threshold: float | None = None
    """With ``output_evaluation``: a score at or above this passes when the event has no known label."""
    verdict_log: str | None = None
    """JSON Lines file: one line per graded trace with violations."""
    verdict_log_all: bool = False
    """With ``verdict_log``: a line for every graded trace, clean ones too, so each can be seen graded."""
    otlp_logs: str | None = None
    """OTLP/HTTP logs URL (e.g. ``http://collector:4318/v1/logs``): verdicts as ``gen_ai.evaluation.result``
    log events on the graded trace's root span; None = none sent."""
    verdict_events: str = "violations"
    """With ``otlp_logs``: ``violations`` (a record per graded trace with violations) or ``all``."""
    max_agents: int = 20
    """With a single SPEC: distinct agent label values before the rest become ``other``."""
    runs_by: str = "trace"
    """Which traces make one run: ``trace`` (each trace is a run), ``links`` (traces tied by span links, in
    either direction, are one run) or ``conversation`` (as ``links``, and traces with one
    ``gen_ai.conversation.id``). Not ``trace``: every completed trace waits ``run_wait`` for the rest of its
    run, and grading stays in one process (``workers`` 1)."""
    run_wait: float = 30.0
    """With ``runs_by`` links or conversation: seconds without a new trace joining a run before it is graded."""
    max_run_age: float = 600.0
    """With ``runs_by`` links or conversation: a run is graded this many seconds after its first trace
    completed, whatever still comes (a conversation that never ends is graded in parts)."""
    late_memory: int = 100_000
    """Graded trace ids remembered to recognise late spans."""
    shutdown_timeout: float = 30.0
    """Seconds SIGTERM/SIGINT may take to grade the buffer and flush metrics."""
    workers: int | str = "auto"
    """Grading processes: a positive integer, or ``"auto"`` for the cores this process may run on
    (``os.sched_getaffinity``). 1 grades in the receiving process itself."""
    wal_dir: str | None = None
    """Write-ahead log directory: every accepted request is written there before the OK and replayed at
    start, so a killed process loses nothing acknowledged. None = no log."""
    wal_sync: str = "interval"
    """When the log is synced to disk: ``interval`` (every ``wal_sync_interval`` seconds) or ``request``
    (before each OK). Either way a request is in the kernel before its OK."""
    wal_sync_interval: float = 1.0
    """With ``wal_sync = "interval"``: seconds between syncs, the most a power loss can take."""
    wal_max_bytes: int = 1024 * MIB
    """Most bytes the log may hold; when full, requests are refused with a retryable answer and counted."""
    tls_cert: str | None = None
    """PEM certificate chain; with ``tls_key`` both receivers serve TLS."""
    tls_key: str | None = None
    tls_client_ca: str | None = None
    """PEM CA bundle; when set, clients must present a certificate it signed (mutual TLS)."""
    bearer_token_file: str | None = None
    """File holding the bearer token clients must send; also ``LUCKRATE_BEARER_TOKEN``."""
    viewer: Endpoint | None = Endpoint("127.0.0.1", 9465)
    """The run viewer's page and JSON API; None (``"off"``) disables it. Off loopback it takes the receivers'
    TLS and requires the bearer token."""
    viewer_runs: int = 1000
    """Graded runs the viewer holds, newest first; older ones are dropped and counted."""
    viewer_max_bytes: int = 256 * MIB
    """About the most bytes of runs the viewer holds (each run's text and structure, estimated); past it
    the oldest runs are dropped and counted, as past ``viewer_runs``."""
    viewer_content: bool = True
    """False: the viewer holds and shows no content (arguments, results, inputs, findings' details) even where
    the instrumentation captured it."""
    trace_url: str | None = None
    """Link from every run to the tracing backend: a URL with ``{trace_id}`` where the trace id goes."""
    public_url: str | None = None
    """The viewer's address as users reach it (``https://luckrate.example/``): verdict log events carry each
    run's page there as ``luckrate.run.url``."""
    bearer_token: str | None = None
    """Resolved token (from the file or the environment); not a TOML key."""

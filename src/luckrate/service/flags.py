"""``luckrate serve``'s flags: each names its config key (``config.py`` declares the keys and their defaults),
so that a flag given overrides the config file and a flag not given leaves it be.
"""

from __future__ import annotations

import argparse

from luckrate.service.config import KEYS, ServiceConfig, build_config, finalize, load_config

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

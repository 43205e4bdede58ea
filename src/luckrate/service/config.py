"""Service configuration: one dataclass of defaults (``settings.ServiceConfig``), one TOML loader, one
validator.

Precedence: command-line flag > TOML file (``--config``) > environment (only the bearer token) > default.
Every value is checked before anything starts; a bad one stops the service with its key named (unlike the
OTel SDK, which logs and falls back to a default).
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import os
import tomllib
from urllib.parse import urlsplit, urlunsplit
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Mapping

from luckrate.service.settings import Endpoint, ServiceConfig

ENV_BEARER_TOKEN = "LUCKRATE_BEARER_TOKEN"
"""The only environment variable read: a token kept out of argv and config files."""


class InvalidConfig(ValueError):
    """Bad service configuration; lists every problem with its key."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        head = f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in config {source}"
        super().__init__("\n  ".join([head] + [f"{k}: {p}" if k else p for k, p in problems]))


_NOT_KEYS = frozenset({"bearer_token"})
KEYS = tuple(f.name for f in fields(ServiceConfig) if f.name not in _NOT_KEYS)
_ENDPOINTS = ("grpc", "http", "prometheus", "viewer")
_POSITIVE_FLOATS = (
    "run_wait",
    "max_run_age",
    "root_grace",
    "idle_timeout",
    "max_trace_age",
    "shutdown_timeout",
    "otlp_metrics_interval",
    "http_request_timeout",
    "http_idle_timeout",
    "wal_sync_interval",
)
_POSITIVE_INTS = (
    "max_spans_per_trace",
    "max_buffered_spans",
    "max_request_bytes",
    "max_agents",
    "late_memory",
    "retry_after",
    "http_max_connections",
    "wal_max_bytes",
    "viewer_runs",
    "viewer_max_bytes",
)
_STRINGS = ("spec", "output_attribute")
_CHOICES = {
    "verdict_events": ("violations", "all"),
    "wal_sync": ("interval", "request"),
    "runs_by": ("trace", "links", "conversation"),
}
_BOOLS = ("verdict_log_all", "viewer_content")
_OPTIONAL_STRINGS = (
    "otlp_metrics",
    "otlp_logs",
    "output_evaluation",
    "verdict_log",
    "tls_cert",
    "tls_key",
    "tls_client_ca",
    "bearer_token_file",
    "wal_dir",
    "trace_url",
    "public_url",
)


def parse_endpoint(text: str) -> Endpoint | None:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) or ``off``; raises ValueError naming the problem."""
    if text.strip().lower() in ("off", "none", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} is not HOST:PORT")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: port must be 0-65535")
    return Endpoint(host, int(port))


def _check(key: str, value: Any, problems: list[tuple[str, str]]) -> Any:
    """Coerce one raw value to its field's type, or record a problem and return None."""
    try:
        if key in _ENDPOINTS:
            if isinstance(value, Endpoint) or value is None:
                return value
            if not isinstance(value, str):
                raise ValueError(f'expected "HOST:PORT" or "off", got {type(value).__name__}')
            return parse_endpoint(value)
        if key in _POSITIVE_FLOATS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"expected a positive number of seconds, got {value!r}")
            return float(value)
        if key in _POSITIVE_INTS:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"expected a positive integer, got {value!r}")
            return value
        if key == "workers":
            return _workers(value)
        if key == "output_threshold":
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"expected a number, got {value!r}")
            return None if value is None else float(value)
        if key in _BOOLS:
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            return value
        if key in _CHOICES:
            if value not in _CHOICES[key]:
                raise ValueError(f"expected one of {', '.join(_CHOICES[key])}, got {value!r}")
            return value
        if key in _STRINGS or key in _OPTIONAL_STRINGS:
            if value is None and key in _OPTIONAL_STRINGS:
                return None
            if not isinstance(value, str) or not value:
                raise ValueError(f"expected a non-empty string, got {value!r}")
            return value
    except ValueError as e:
        problems.append((key, str(e)))
        return None
    problems.append((key, "unknown key" + _suggest(key)))
    return None


def _workers(value: Any) -> int | str:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    count = int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else value  # flags are strings
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise ValueError(f'expected a positive integer or "auto", got {value!r}')
    return count


CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""cgroup v2 CPU quota (``QUOTA PERIOD`` or ``max PERIOD``): a container's CPU limit."""


def worker_count(cfg: ServiceConfig, cpu_max: Path = CPU_MAX) -> int:
    """``cfg.workers`` resolved: ``auto`` is the number of cores this process may run on
    (``os.sched_getaffinity``), capped by a cgroup CPU quota when there is one: a container limited to 2
    CPUs on a 64-core node gets 2 workers, not 64 processes throttled to a thirty-second of a core each."""
    if cfg.runs_by != "trace":  # the traces of one run must reach one grader (finalize refuses workers > 1)
        return 1
    if cfg.workers != "auto":
        return int(cfg.workers)
    cores = max(1, len(os.sched_getaffinity(0)))
    try:
        quota, period = cpu_max.read_text().split()[:2]
        return max(1, min(cores, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError, ZeroDivisionError):  # no cgroup v2 file, or "max": no quota
        return cores


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, KEYS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def build_config(values: Mapping[str, Any], source: str, base: ServiceConfig | None = None) -> ServiceConfig:
    """Apply ``values`` (TOML table or flags) over ``base``; InvalidConfig lists every bad key."""
    problems: list[tuple[str, str]] = []
    checked: dict[str, Any] = {}
    for key, value in values.items():
        if key not in KEYS:
            problems.append((key, "unknown key" + _suggest(key)))
            continue
        before = len(problems)
        coerced = _check(key, value, problems)
        if len(problems) == before:
            checked[key] = coerced
    if problems:
        raise InvalidConfig(source, problems)
    return replace(base or ServiceConfig(), **checked)


def load_config(path: str | Path) -> ServiceConfig:
    """Read a TOML config file (keys: ``KEYS``, top level or under ``[serve]``); not yet finalized."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidConfig(str(path), [("", f"cannot read: {e.strerror or e}")]) from None
    except tomllib.TOMLDecodeError as e:
        raise InvalidConfig(str(path), [("", f"invalid TOML ({e})")]) from None
    if isinstance(raw.get("serve"), dict):
        raw = {**{k: v for k, v in raw.items() if k != "serve"}, **raw["serve"]}
    return build_config(raw, str(path))


def finalize(cfg: ServiceConfig, source: str = "", env: Mapping[str, str] | None = None) -> ServiceConfig:
    """Cross-field checks and the bearer token; raises InvalidConfig naming each key at fault."""
    env = os.environ if env is None else env
    problems: list[tuple[str, str]] = []
    if not cfg.spec:
        problems.append(("spec", 'required (--spec FILE or spec = "FILE")'))
    elif not Path(cfg.spec).is_file():
        problems.append(("spec", f"file not found: {cfg.spec}"))
    if bool(cfg.tls_cert) != bool(cfg.tls_key):
        problems.append(("tls_key" if cfg.tls_cert else "tls_cert", "tls_cert and tls_key go together"))
    if cfg.tls_client_ca and not cfg.tls_cert:
        problems.append(("tls_client_ca", "mutual TLS needs tls_cert and tls_key"))
    for key in ("tls_cert", "tls_key", "tls_client_ca", "bearer_token_file"):
        value = getattr(cfg, key)
        if value and not Path(value).is_file():
            problems.append((key, f"file not found: {value}"))
    otlp_metrics = _otlp_url("otlp_metrics", cfg.otlp_metrics, problems)
    otlp_logs = _otlp_url("otlp_logs", cfg.otlp_logs, problems)
    if cfg.trace_url and "{trace_id}" not in cfg.trace_url:
        problems.append(
            ("trace_url", f"expected a URL with {{trace_id}} where the trace id goes, got {cfg.trace_url!r}")
        )
    if (
        cfg.viewer is not None
        and not loopback(cfg.viewer.host)
        and not (cfg.bearer_token_file or env.get(ENV_BEARER_TOKEN))
    ):
        problems.append(
            (
                "viewer",
                f"{cfg.viewer} is not loopback: the page shows span content, so it needs the bearer token "
                "(bearer_token_file or LUCKRATE_BEARER_TOKEN), and tls_cert/tls_key for TLS",
            )
        )
    if cfg.public_url and cfg.viewer is None:
        problems.append(("public_url", 'links runs to the viewer\'s pages, and the viewer is off (viewer = "off")'))
    for key in ("trace_url", "public_url"):
        url = getattr(cfg, key)
        if url and not url.startswith(("http://", "https://")):
            problems.append((key, f"expected an http(s) URL, got {url!r}"))
    if cfg.verdict_log_all and not cfg.verdict_log:
        problems.append(("verdict_log_all", "needs verdict_log, the file to write (--verdict-log FILE)"))
    if not cfg.wal_dir:
        for key in ("wal_sync", "wal_sync_interval", "wal_max_bytes"):
            if getattr(cfg, key) != getattr(ServiceConfig, key):
                problems.append((key, "needs wal_dir, the log's directory (--wal DIR)"))
    if cfg.runs_by != "trace" and cfg.workers not in ("auto", 1):
        problems.append(
            (
                "workers",
                f"runs_by = {cfg.runs_by!r} grades in one process: the traces of one run must reach one grader "
                '(use workers = 1, or runs_by = "trace")',
            )
        )
    if cfg.runs_by == "trace":
        for key in ("run_wait", "max_run_age"):
            if getattr(cfg, key) != getattr(ServiceConfig, key):
                problems.append((key, 'needs runs_by = "links" or "conversation" (--runs-by)'))
    if cfg.grpc is None and cfg.http is None:
        problems.append(("grpc", "both receivers are off: nothing would receive spans"))
    token = _token(cfg, env, problems)
    if problems:
        raise InvalidConfig(source or "(flags)", problems)
    return replace(cfg, bearer_token=token, otlp_metrics=otlp_metrics, otlp_logs=otlp_logs)


OTLP_PATHS = {"otlp_metrics": "/v1/metrics", "otlp_logs": "/v1/logs"}
"""The OTLP/HTTP path each push appends to a base URL."""


def _otlp_url(key: str, url: str | None, problems: list[tuple[str, str]]) -> str | None:
    """The URL an OTLP/HTTP push sends to, as OTel exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT``: a base
    URL (no path, or ``/``) gets the signal's path appended (``http://collector:4318`` sends to
    ``http://collector:4318/v1/metrics``); a URL with a path is used as it is, as a signal's own
    ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` is."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append((key, f"expected an http(s) URL such as http://collector:4318, got {url!r}"))
        return url
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number, or out of range
        port_ok = False
    if not port_ok:
        problems.append((key, f"bad port in {url!r}"))
        return url
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path=OTLP_PATHS[key]))
    return url


def loopback(host: str) -> bool:
    """``localhost`` or a loopback address (the viewer needs no token there)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(cfg: ServiceConfig, env: Mapping[str, str], problems: list[tuple[str, str]]) -> str | None:
    if cfg.bearer_token_file and Path(cfg.bearer_token_file).is_file():
        token = Path(cfg.bearer_token_file).read_text(encoding="utf-8").strip()
        if not token:
            problems.append(("bearer_token_file", f"{cfg.bearer_token_file} is empty"))
        return token or None
    return env.get(ENV_BEARER_TOKEN, "").strip() or None
